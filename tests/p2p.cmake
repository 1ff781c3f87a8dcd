# tests/p2p.cmake — point-to-point matrix over every transport.
fold_add_test_exe(p2p_threads p2p/p2p_threads.c p2p/p2p_suite.c check.c)
add_test(NAME p2p_threads COMMAND p2p_threads)
set_tests_properties(p2p_threads PROPERTIES TIMEOUT 120)
