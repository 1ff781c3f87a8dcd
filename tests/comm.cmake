# tests/comm.cmake — sub-communicators: split, dup, split_host (docs/comm.md).
fold_add_test_exe(comm_threads comm/comm_threads.c comm/comm_suite.c check.c)
add_test(NAME comm_threads COMMAND comm_threads)
set_tests_properties(comm_threads PROPERTIES TIMEOUT 120)
fold_add_test_exe(comm_sim comm/comm_sim.c check.c)
add_test(NAME comm_sim COMMAND comm_sim)
set_tests_properties(comm_sim PROPERTIES TIMEOUT 120)
# Real processes: 5 ranks over shm and over tcp (foldrun).
fold_add_test_exe(comm_procs comm/comm_procs.c comm/comm_suite.c check.c)
foreach(t shm tcp)
  add_test(NAME comm_procs_${t} COMMAND $<TARGET_FILE:foldrun> -n 5 --transport ${t} -- $<TARGET_FILE:comm_procs> 1000 5)
  set_tests_properties(comm_procs_${t} PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE ENVIRONMENT FOLD_TIMEOUT=20)
endforeach()
# A rank SIGKILLed while a child runs collectives: FOLD_EPEER within 5 s on
# every communicator that contains it, naming it in both numberings.
fold_add_test_exe(comm_kill comm/comm_kill.c)
foreach(t shm tcp)
  add_test(NAME comm_kill_${t} COMMAND comm_kill ${t})
  set_tests_properties(comm_kill_${t} PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE)
endforeach()
# split_host: each rank on its own network namespace is its own host; all
# ranks of foldrun share one.
add_test(NAME comm_procs_netns COMMAND ${FOLD_TEST_DIR}/launch/with_launcher.sh netns 3 ${CMAKE_BINARY_DIR} $<TARGET_FILE:comm_procs> 100 1)
set_tests_properties(comm_procs_netns PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE LABELS nosan)
