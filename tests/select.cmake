# tests/select.cmake — algorithm selection: the FOLD_RULES parser and matching, rules end to end, fold-bench --tune.
fold_add_test_exe(rules_unit select/rules_unit.c check.c)
add_test(NAME rules_unit COMMAND rules_unit)
set_tests_properties(rules_unit PROPERTIES TIMEOUT 60)

# Rules end to end as processes: the algorithm that runs (FOLD_DEBUG=TRACE
# names the rule's FILE:LINE), bad files; and fold-bench --tune at n = 3.
set(FOLD_RULES_E2E ${FOLD_TEST_DIR}/select/rules_e2e.sh)
add_test(NAME rules_e2e_shm COMMAND ${FOLD_RULES_E2E} ${CMAKE_BINARY_DIR} select shm)
add_test(NAME rules_e2e_tcp COMMAND ${FOLD_RULES_E2E} ${CMAKE_BINARY_DIR} select tcp)
add_test(NAME rules_tune COMMAND ${FOLD_RULES_E2E} ${CMAKE_BINARY_DIR} tune)
add_test(NAME rules_e2e_hier COMMAND ${FOLD_RULES_E2E} ${CMAKE_BINARY_DIR} hier)
set_tests_properties(rules_e2e_shm rules_e2e_tcp rules_tune rules_e2e_hier PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE)

# fold_comm_get_algo: the name of what a call runs (checked by the mismatch
# detection on the simulator), forced, rules, sum_exact's accumulators, bad input.
fold_add_test_exe(get_algo select/get_algo.c check.c)
add_test(NAME get_algo COMMAND get_algo)
set_tests_properties(get_algo PROPERTIES TIMEOUT 60)
