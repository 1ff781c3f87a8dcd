# tests/core.cmake — unit tests of the core.
fold_add_test_exe(core_unit core/core_unit.c check.c)
add_test(NAME core_unit COMMAND core_unit)
set_tests_properties(core_unit PROPERTIES TIMEOUT 30)
