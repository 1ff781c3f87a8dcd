# tests/p2p.cmake — point-to-point matrix over every transport.
fold_add_test_exe(p2p_threads p2p/p2p_threads.c p2p/p2p_suite.c p2p/p2p_wild.c check.c)
add_test(NAME p2p_threads COMMAND p2p_threads ${FOLD_TEST_BIG_MIB})
set_tests_properties(p2p_threads PROPERTIES TIMEOUT 300) # 114 s under TSan on a quiet machine with 64 MiB

# The same matrix as real processes, started by every launcher fold_init understands.
fold_add_test_exe(p2p_main p2p/p2p_main.c p2p/p2p_suite.c p2p/p2p_wild.c check.c)
set(FOLD_LAUNCH ${FOLD_TEST_DIR}/launch/with_launcher.sh)
foreach(l foldrun-shm foldrun-tcp foldrun-auto openmpi mpich torchrun-env slurm-env netns)
  add_test(NAME p2p_${l} COMMAND ${FOLD_LAUNCH} ${l} 4 ${CMAKE_BINARY_DIR} $<TARGET_FILE:p2p_main> --big 16)
  set_tests_properties(p2p_${l} PROPERTIES TIMEOUT 180 RUN_SERIAL TRUE)
endforeach()
# Launcher and namespace runs exercise no code the foldrun runs do not; keep
# them out of the sanitizer builds (MPI launchers and sanitizers mix badly).
set_tests_properties(p2p_openmpi p2p_mpich p2p_netns PROPERTIES LABELS nosan)
# 5 ranks on 2 cores: oversubscribed shared memory must stay correct.
add_test(NAME p2p_foldrun_oversubscribed COMMAND ${FOLD_LAUNCH} foldrun-shm 5 ${CMAKE_BINARY_DIR} $<TARGET_FILE:p2p_main> --big 4)
set_tests_properties(p2p_foldrun_oversubscribed PROPERTIES TIMEOUT 180 RUN_SERIAL TRUE)
# One message over 2 GiB on each process transport.
foreach(l foldrun-shm foldrun-tcp)
  add_test(NAME p2p_huge_${l} COMMAND ${FOLD_LAUNCH} ${l} 2 ${CMAKE_BINARY_DIR} $<TARGET_FILE:p2p_main> --huge 2200)
  set_tests_properties(p2p_huge_${l} PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE LABELS slow)
endforeach()

# A rank killed with SIGKILL: its dependents get FOLD_EPEER within 5 s.
fold_add_test_exe(p2p_kill p2p/p2p_kill.c check.c)
foreach(t shm tcp)
  add_test(NAME p2p_kill_${t} COMMAND p2p_kill 4 ${t})
  set_tests_properties(p2p_kill_${t} PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE)
endforeach()

# Over tcp the closing cascade must not blame a survivor: rank 2 of 4 is
# SIGKILLed or exits mid-allreduce; every survivor and foldrun name rank 2.
fold_add_test_exe(blame_rank p2p/blame_rank.c)
foreach(m kill exit)
  add_test(NAME blame_${m}_tcp COMMAND ${FOLD_TEST_DIR}/p2p/blame_test.sh $<TARGET_FILE:foldrun> $<TARGET_FILE:blame_rank> ${m} 12)
  set_tests_properties(blame_${m}_tcp PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE)
endforeach()

# Rank 2 of 4 stops itself (SIGSTOP): the ranks that time out name the
# rank they wait for and the step (round or chunk), over shm and tcp.
foreach(t shm tcp)
  add_test(NAME blame_stop_${t} COMMAND ${FOLD_TEST_DIR}/p2p/stop_test.sh $<TARGET_FILE:foldrun> $<TARGET_FILE:blame_rank> ${t})
  set_tests_properties(blame_stop_${t} PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
endforeach()
