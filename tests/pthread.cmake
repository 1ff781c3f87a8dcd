# tests/pthread.cmake — one sleep over several transports, and the progress thread (FOLD_PROGRESS_THREAD).

# A job mixing shm and tcp on one machine (FOLD_TEST_HOSTS=2 makes two
# 2-rank "hosts"): ping-pong and wildcards across both transports.
fold_add_test_exe(mixed_wait p2p/mixed_wait.c check.c)
add_test(NAME p2p_mixed_wait COMMAND ${CMAKE_COMMAND} -E env FOLD_TEST_HOSTS=2 $<TARGET_FILE:foldrun> -n 4 -- $<TARGET_FILE:mixed_wait> 300)
set_tests_properties(p2p_mixed_wait PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE)

# FOLD_PROGRESS_THREAD=1 (the program sets it): operations complete while the
# user makes no call, many nonblocking operations interleaved with user calls,
# destroy with operations pending, over inproc, shm and tcp; and a peer lost
# while the helper drives an irecv gives FOLD_EPEER naming it.
fold_add_test_exe(pthread_test pthread/pthread_test.c check.c)
add_test(NAME pthread_threads COMMAND pthread_test threads 4)
set_tests_properties(pthread_threads PROPERTIES TIMEOUT 120)
foreach(t shm tcp)
  add_test(NAME pthread_procs_${t} COMMAND $<TARGET_FILE:foldrun> -n 3 --transport ${t} -- $<TARGET_FILE:pthread_test> procs)
  set_tests_properties(pthread_procs_${t} PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
  add_test(NAME pthread_lost_${t} COMMAND pthread_test lost ${t})
  set_tests_properties(pthread_lost_${t} PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE)
endforeach()
# A mixed job (shm and tcp) with the helper sleeping in one epoll over both.
add_test(NAME pthread_procs_mixed COMMAND ${CMAKE_COMMAND} -E env FOLD_TEST_HOSTS=2 $<TARGET_FILE:foldrun> -n 4 -- $<TARGET_FILE:pthread_test> procs)
set_tests_properties(pthread_procs_mixed PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
