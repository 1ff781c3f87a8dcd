# tests/sim.cmake — the simulated network: event heap, cost model, compute/callbacks/per-rank params, rings at scale, fold-sim.
fold_add_test_exe(sim_heap_test ${FOLD_TEST_DIR}/sim/sim_heap_test.c)
add_test(NAME sim_heap COMMAND sim_heap_test)
set_tests_properties(sim_heap PROPERTIES TIMEOUT 30)

fold_add_test_exe(sim_model_test ${FOLD_TEST_DIR}/sim/sim_model_test.c)
target_link_libraries(sim_model_test PRIVATE m)
foreach(case one_message ring_step sender_serialises receiver_serialises order determinism deadlock
        blocking charge_and_timers destroy_rank virtual_timeout args oversized)
  add_test(NAME sim_model_${case} COMMAND sim_model_test ${case})
  set_tests_properties(sim_model_${case} PROPERTIES TIMEOUT 30)
endforeach()

# fold_sim_compute, fold_sim_at, per-rank parameters and op_overhead, timed exactly.
fold_add_test_exe(sim_compute_test ${FOLD_TEST_DIR}/sim/sim_compute_test.c)
foreach(case compute_send compute_recv at rank_params_2 rank_params_3 op_overhead args)
  add_test(NAME sim_compute_${case} COMMAND sim_compute_test ${case})
  set_tests_properties(sim_compute_${case} PROPERTIES TIMEOUT 30)
endforeach()

# Hosts: grouping and split_host, the shared NIC timed exactly, bad arguments, collectives at 320 ranks.
fold_add_test_exe(sim_hosts_test ${FOLD_TEST_DIR}/sim/sim_hosts_test.c)
foreach(case split_host nic_share one_per_host args coll)
  add_test(NAME sim_hosts_${case} COMMAND sim_hosts_test ${case})
  set_tests_properties(sim_hosts_${case} PROPERTIES TIMEOUT 120)
endforeach()

fold_add_test_exe(sim_ring_test ${FOLD_TEST_DIR}/sim/sim_ring_test.c)
foreach(n 1 2 64 1024 4096)
  add_test(NAME sim_ring_${n} COMMAND sim_ring_test ${n})
  set_tests_properties(sim_ring_${n} PROPERTIES TIMEOUT 60)
endforeach()

# Every collective algorithm at 64, 255 and 1024 simulated ranks; allreduce costs against the textbook.
fold_add_test_exe(sim_coll sim/sim_coll.c check.c ${CMAKE_SOURCE_DIR}/tools/sim_model.c)
target_include_directories(sim_coll PRIVATE ${CMAKE_SOURCE_DIR}/tools)
target_link_libraries(sim_coll PRIVATE m)
add_test(NAME sim_coll COMMAND sim_coll)
set_tests_properties(sim_coll PROPERTIES TIMEOUT 900 LABELS slow)

# fold-sim: output format, sim/model ratios, CSV and PNG, --slow and --op-overhead, --hosts, hier against its
# closed form and bench/hier_sim.sh, bad arguments.
foreach(case run csv slow hosts hier badargs)
  add_test(NAME fold_sim_${case} COMMAND ${FOLD_TEST_DIR}/sim/fold_sim_test.sh $<TARGET_FILE:fold-sim> ${case})
  set_tests_properties(fold_sim_${case} PROPERTIES TIMEOUT 180)
endforeach()
# Wildcard receives, probe and fold_progress under the virtual clock.
fold_add_test_exe(sim_wild sim/sim_wild.c check.c)
add_test(NAME sim_wild COMMAND sim_wild)
set_tests_properties(sim_wild PROPERTIES TIMEOUT 60)
