# tests/core.cmake — unit tests of the core.
fold_add_test_exe(core_unit core/core_unit.c check.c)
add_test(NAME core_unit COMMAND core_unit)
set_tests_properties(core_unit PROPERTIES TIMEOUT 30)

# The log end to end (docs/bootstrap.md, "Logging"): a normal foldrun job is
# silent at WARN and has no repeated lines at INFO; a flood of strangers is
# a few lines; bad FOLD_DEBUG / FOLD_TIMEOUT one line per process; the
# no-token warning once per job; interface lists without repeats.
fold_add_test_exe(log_probe core/log_probe.c)
add_test(NAME log_e2e COMMAND ${FOLD_TEST_DIR}/core/log_e2e.sh $<TARGET_FILE:foldrun> $<TARGET_FILE:log_probe>)
set_tests_properties(log_e2e PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE)
