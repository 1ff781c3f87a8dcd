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
fold_add_test_exe(comm_kill comm/comm_kill.c check.c)
foreach(t shm tcp)
  add_test(NAME comm_kill_${t} COMMAND comm_kill ${t})
  set_tests_properties(comm_kill_${t} PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE)
endforeach()
# ... and a rank killed before B's first call: over shm, before it made its
# collective area of B, for which B's first shm allreduce waits.
add_test(NAME comm_kill_shm_early COMMAND comm_kill shm early)
set_tests_properties(comm_kill_shm_early PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE)
# split_host: each rank on its own network namespace is its own host; all
# ranks of foldrun share one.
add_test(NAME comm_procs_netns COMMAND ${FOLD_TEST_DIR}/launch/with_launcher.sh netns 3 ${CMAKE_BINARY_DIR} $<TARGET_FILE:comm_procs> 100 1)
set_tests_properties(comm_procs_netns PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE LABELS nosan)
# The shm collectives on children (docs/comm.md): every collective's shm
# cases on a parity split, a dup, a nested split and split_host, against the
# serial reference; at 3 ranks with one-page slots (many pipelined chunks per
# call), at 5 with the default. With FOLD_TEST_HOSTS=3 the 5 ranks are two
# hosts: split_host children run shm, children across the hosts refuse it.
fold_add_test_exe(comm_shm comm/comm_shm.c coll/coll_case.c coll/coll_ref.c check.c)
add_test(NAME comm_shm_3 COMMAND $<TARGET_FILE:foldrun> -n 3 --transport shm -- $<TARGET_FILE:comm_shm>)
add_test(NAME comm_shm_5 COMMAND $<TARGET_FILE:foldrun> -n 5 --transport shm -- $<TARGET_FILE:comm_shm>)
add_test(NAME comm_shm_hosts COMMAND ${CMAKE_COMMAND} -E env FOLD_TEST_HOSTS=3 $<TARGET_FILE:foldrun> -n 5 -- $<TARGET_FILE:comm_shm> hosts)
set_tests_properties(comm_shm_3 comm_shm_5 comm_shm_hosts PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE ENVIRONMENT FOLD_TIMEOUT=20)
set_tests_properties(comm_shm_3 PROPERTIES ENVIRONMENT "FOLD_TIMEOUT=20;FOLD_SHM_COLL_BYTES=4096;FOLD_SHM_SMALL_BYTES=64")
# ... with FOLD_PROGRESS_THREAD=1: the helper steps the children's first calls (mapping areas) and sleeps over them
add_test(NAME comm_shm_pthread COMMAND $<TARGET_FILE:foldrun> -n 3 --transport shm -- $<TARGET_FILE:comm_shm>)
set_tests_properties(comm_shm_pthread PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE ENVIRONMENT "FOLD_TIMEOUT=20;FOLD_PROGRESS_THREAD=1")
# A world of 1,024 thread ranks (fold_comm_init_threads): allreduce, split into 8, the children's allreduce
# and broadcast, barrier, all checked. Not under the sanitizers (1,024 instrumented threads on 2 cores).
fold_add_test_exe(comm_threads_big comm/comm_threads_big.c check.c)
add_test(NAME comm_threads_big COMMAND comm_threads_big 1024)
set_tests_properties(comm_threads_big PROPERTIES TIMEOUT 300 LABELS nosan)
