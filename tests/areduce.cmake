# tests/areduce.cmake — asynchronous tree reduction (fold_areduce): the tree, threads, bad input, simulator, processes.
fold_add_test_exe(areduce_test areduce/areduce_test.c check.c)
foreach(case tree threads bad sim)
  add_test(NAME areduce_${case} COMMAND areduce_test ${case})
  set_tests_properties(areduce_${case} PROPERTIES TIMEOUT 60)
endforeach()
# Processes over shm and tcp (tcp: fragments of 80 KB travel as rendezvous messages).
foreach(t shm tcp)
  add_test(NAME areduce_procs_${t} COMMAND foldrun -n 5 --transport ${t} --timeout 30 -- $<TARGET_FILE:areduce_test> procs)
  set_tests_properties(areduce_procs_${t} PROPERTIES TIMEOUT 90 RUN_SERIAL TRUE)
  add_test(NAME areduce_lost_${t} COMMAND foldrun -n 5 --transport ${t} --timeout 30 -- $<TARGET_FILE:areduce_test> lost)
  set_tests_properties(areduce_lost_${t} PROPERTIES TIMEOUT 90 RUN_SERIAL TRUE)
endforeach()
# Real transports with fragments made by an engine timer (areduce_real: also
# the measurements of docs/areduce.md, `bench` and `rate`): a leaf that
# computes 50 ms after its done without calling fold does not delay the
# final result, an inner node does (medians of 5, compared by orders of magnitude).
fold_add_test_exe(areduce_real areduce/areduce_real.c check.c)
target_link_libraries(areduce_real PRIVATE m)
foreach(t shm tcp)
  add_test(NAME areduce_slow_${t} COMMAND foldrun -n 4 --transport ${t} --timeout 30 -- $<TARGET_FILE:areduce_real> slow)
  set_tests_properties(areduce_slow_${t} PROPERTIES TIMEOUT 90 RUN_SERIAL TRUE)
endforeach()
# fold-sim's thesis experiments: every run must end with the full result at the target (exit 1 otherwise).
foreach(x full partial)
  add_test(NAME areduce_fold_sim_${x} COMMAND fold-sim areduce-${x})
  set_tests_properties(areduce_fold_sim_${x} PROPERTIES TIMEOUT 60)
endforeach()
# ... with --op sum_exact: every run (every degree, both modes, float64 and
# float32) gives the same bits, math.fsum's; FOLD_SUM's bits vary; the CSV
# and both plots of the full sweep; bad options.
foreach(x exact-full exact-partial-f32 rounded csv badargs)
  add_test(NAME areduce_fold_sim_op_${x} COMMAND ${FOLD_TEST_DIR}/areduce/fold_sim_op.sh $<TARGET_FILE:fold-sim> ${FOLD_TEST_DIR} ${x})
  set_tests_properties(areduce_fold_sim_op_${x} PROPERTIES TIMEOUT 60)
endforeach()
# The Monte Carlo pi example: the target stops the run at a standard error of 1e-3 and checks the estimate.
add_test(NAME areduce_pi COMMAND foldrun -n 4 --transport shm --timeout 30 -- $<TARGET_FILE:areduce_pi> 1e-3)
set_tests_properties(areduce_pi PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE)
# A rank killed with SIGKILL mid-reduction (its own harness: foldrun would stop the job): its ancestors and
# its children see FOLD_EPEER naming it within 3 s, in their contribute loop; the others end without hanging.
fold_add_test_exe(areduce_kill areduce/areduce_kill.c check.c)
foreach(case shm_inner:shm:1 tcp_inner:tcp:1 tcp_leaf:tcp:5)
  string(REPLACE ":" ";" _k ${case})
  list(GET _k 0 _name)
  list(GET _k 1 _tp)
  list(GET _k 2 _victim)
  add_test(NAME areduce_kill_${_name} COMMAND areduce_kill 7 ${_tp} ${_victim})
  set_tests_properties(areduce_kill_${_name} PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
endforeach()
