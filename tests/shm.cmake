# tests/shm.cmake — the shared-memory transport: the ring alone, then real processes.
fold_add_test_exe(shm_ring_test shm/shm_ring_test.c)
add_test(NAME shm_ring COMMAND shm_ring_test)
set_tests_properties(shm_ring PROPERTIES TIMEOUT 60)

fold_add_test_exe(shm_mp_test shm/shm_mp_test.c shm/shm_harness.c check.c)
# scenario:ranks
foreach(s sizes:2 sizes:4 order:3 unexpected:2 mismatch:2 kill:4 earlykill:3 midkill:3 rcptkill:2 leave:3 pingpong:4)
  string(REPLACE ":" ";" sn ${s})
  list(GET sn 0 scen)
  list(GET sn 1 nr)
  add_test(NAME shm_${scen}_${nr} COMMAND shm_mp_test ${scen} ${nr})
  set_tests_properties(shm_${scen}_${nr} PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
endforeach()
# A peer writes a 2 TiB length (0) or an index past the ring (1) into our
# segment: the receiver fails with FOLD_EINTERNAL naming it, never trusting it.
foreach(how 0 1)
  add_test(NAME shm_corrupt_${how} COMMAND shm_mp_test corrupt 2 ${how})
  set_tests_properties(shm_corrupt_${how} PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE)
endforeach()
# Throughput figures (printed, not asserted).
add_test(NAME shm_bandwidth_2 COMMAND shm_mp_test bandwidth 2)
set_tests_properties(shm_bandwidth_2 PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
# Tiny rings: every message wraps and is chunked, headers straddle the end.
add_test(NAME shm_order_tinyring COMMAND shm_mp_test order 3)
add_test(NAME shm_sizes_tinyring COMMAND shm_mp_test sizes 3)
set_tests_properties(shm_order_tinyring shm_sizes_tinyring PROPERTIES
  ENVIRONMENT "FOLD_SHM_RING_BYTES=4096" TIMEOUT 120 RUN_SERIAL TRUE)
# The smallest ring (64 B): every header straddles the end at some point.
add_test(NAME shm_order_minring COMMAND shm_mp_test order 3)
add_test(NAME shm_mismatch_minring COMMAND shm_mp_test mismatch 2)
set_tests_properties(shm_order_minring shm_mismatch_minring PROPERTIES
  ENVIRONMENT "FOLD_SHM_RING_BYTES=64" TIMEOUT 120 RUN_SERIAL TRUE)
# One message over 2 GiB (needs ~2.2 GiB of RAM). FOLD_TIMEOUT bounds the
# whole send (30 s by default): 8.9 s alone, it ran past 30 s beside the
# sanitizer builds' serial tests in a CI run, as tcp_huge once did.
add_test(NAME shm_huge_2 COMMAND shm_mp_test huge 2)
set_tests_properties(shm_huge_2 PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE LABELS slow ENVIRONMENT FOLD_TIMEOUT=240)

# A rank killed during bootstrap leaves its segment; the next job sweeps it.
add_test(NAME shm_sweep COMMAND ${FOLD_TEST_DIR}/shm/shm_sweep_test.sh ${CMAKE_BINARY_DIR})
set_tests_properties(shm_sweep PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)

# Ranks ended by SIGTERM (foldrun's stop after a failure; with the program's
# own handler chained) or SIGINT (forwarded by foldrun) inside fold_init
# remove their segments; the next job finds none of them stale.
fold_add_test_exe(sigterm_rank shm/sigterm_rank.c)
foreach(m fail int chain)
  add_test(NAME shm_sigterm_${m} COMMAND ${FOLD_TEST_DIR}/shm/sigterm_test.sh $<TARGET_FILE:foldrun> $<TARGET_FILE:sigterm_rank> ${m} $<TARGET_FILE:ring_demo>)
  set_tests_properties(shm_sigterm_${m} PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
endforeach()
