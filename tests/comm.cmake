# tests/comm.cmake — sub-communicators: split, dup, split_host (docs/comm.md).
fold_add_test_exe(comm_threads comm/comm_threads.c comm/comm_suite.c check.c)
add_test(NAME comm_threads COMMAND comm_threads)
set_tests_properties(comm_threads PROPERTIES TIMEOUT 120)
fold_add_test_exe(comm_sim comm/comm_sim.c check.c)
add_test(NAME comm_sim COMMAND comm_sim)
set_tests_properties(comm_sim PROPERTIES TIMEOUT 120)
