# tests/pthread.cmake — one sleep over several transports, and the progress thread (FOLD_PROGRESS_THREAD).

# A job mixing shm and tcp on one machine (FOLD_TEST_HOSTS=2 makes two
# 2-rank "hosts"): ping-pong and wildcards across both transports.
fold_add_test_exe(mixed_wait p2p/mixed_wait.c check.c)
add_test(NAME p2p_mixed_wait COMMAND ${CMAKE_COMMAND} -E env FOLD_TEST_HOSTS=2 $<TARGET_FILE:foldrun> -n 4 -- $<TARGET_FILE:mixed_wait> 300)
set_tests_properties(p2p_mixed_wait PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE)
