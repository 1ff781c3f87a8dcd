# tests/core.cmake — unit tests of the core.
fold_add_test_exe(core_unit core/core_unit.c capture.c check.c)
add_test(NAME core_unit COMMAND core_unit)
set_tests_properties(core_unit PROPERTIES TIMEOUT 30)

# The log end to end (docs/bootstrap.md, "Logging"): a normal foldrun job is
# silent at WARN and has no repeated lines at INFO; a flood of strangers is
# a few lines; bad FOLD_DEBUG / FOLD_TIMEOUT one line per process; the
# no-token warning once per job; interface lists without repeats.
fold_add_test_exe(log_probe core/log_probe.c)
add_test(NAME log_e2e COMMAND ${FOLD_TEST_DIR}/core/log_e2e.sh $<TARGET_FILE:foldrun> $<TARGET_FILE:log_probe>)
set_tests_properties(log_e2e PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE)

# The FOLD_* table (src/core/params.h): its one parser (bad values, > INT_MAX,
# negative, caching per raw value, INFO lines, fold_config_print/get) ...
fold_add_test_exe(params_unit core/params_unit.c capture.c)
add_test(NAME config_params COMMAND params_unit)
set_tests_properties(config_params PROPERTIES TIMEOUT 30)
# ... docs/configuration.md against the table (`config_doc --write
# docs/configuration.md` regenerates it), no getenv outside core/params.c,
# and foldrun --print-config.
fold_add_test_exe(config_doc core/config_doc.c)
add_test(NAME config_doc COMMAND config_doc ${CMAKE_SOURCE_DIR}/docs/configuration.md)
add_test(NAME config_getenv COMMAND ${FOLD_TEST_DIR}/core/getenv_check.sh ${CMAKE_SOURCE_DIR})
add_test(NAME config_print_foldrun COMMAND ${FOLD_TEST_DIR}/core/print_config.sh $<TARGET_FILE:foldrun>
  ${CMAKE_SOURCE_DIR}/docs/configuration.md)
set_tests_properties(config_doc config_getenv config_print_foldrun PROPERTIES TIMEOUT 30)

# core/list.h (order, unlink at the ends and in the middle, deletion while
# iterating) and core/heap.h (pop order against a sorted array, duplicates).
fold_add_test_exe(list_heap_unit core/list_heap_unit.c check.c)
add_test(NAME core_list_heap COMMAND list_heap_unit)
set_tests_properties(core_list_heap PROPERTIES TIMEOUT 30)
