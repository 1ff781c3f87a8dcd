# tests/kvparts.cmake — the key-value store's summing kernel, optimizers, example and benchmarks' helpers.
fold_add_test_exe(kvparts_sum kvparts/sum_unit.c check.c)
add_test(NAME kvparts_sum COMMAND kvparts_sum)
set_tests_properties(kvparts_sum PROPERTIES TIMEOUT 60)
