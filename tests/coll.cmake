# tests/coll.cmake — collectives: the verification matrix, one test per collective.
fold_add_test_exe(coll_matrix coll/coll_matrix.c coll/coll_case.c coll/coll_ref.c check.c)
set(FOLD_MATRIX_ARGS "")
if(FOLD_SANITIZE)
  set(FOLD_MATRIX_ARGS --quick) # sanitizers run 5-20x slower: sample rank counts and pairs
endif()
foreach(c broadcast reduce allreduce reduce_scatter allgather gather scatter alltoall barrier)
  add_test(NAME coll_matrix_${c} COMMAND coll_matrix --coll ${c} ${FOLD_MATRIX_ARGS})
  set_tests_properties(coll_matrix_${c} PROPERTIES TIMEOUT 1200)
endforeach()
# The algorithm registry (src/coll/registry.h): lists, tables and lookups agree; indexes and names stay.
fold_add_test_exe(registry_unit coll/registry_unit.c check.c)
add_test(NAME coll_registry_unit COMMAND registry_unit)
set_tests_properties(coll_registry_unit PROPERTIES TIMEOUT 30)
fold_add_test_exe(coll_faults coll/coll_faults.c shm/shm_harness.c check.c)
add_test(NAME coll_faults COMMAND coll_faults)
set_tests_properties(coll_faults PROPERTIES TIMEOUT 300)

# The sampled matrix as real processes: shared memory, TCP, and four network namespaces.
fold_add_test_exe(coll_procs coll/coll_procs.c coll/coll_case.c coll/coll_ref.c check.c)
foreach(l foldrun-shm foldrun-tcp netns)
  add_test(NAME coll_procs_${l} COMMAND ${FOLD_TEST_DIR}/launch/with_launcher.sh ${l} 4 ${CMAKE_BINARY_DIR} $<TARGET_FILE:coll_procs>)
  set_tests_properties(coll_procs_${l} PROPERTIES TIMEOUT 900 RUN_SERIAL TRUE)
endforeach()
set_tests_properties(coll_procs_netns PROPERTIES LABELS nosan)
# 3 ranks on tcp: an odd count across processes
add_test(NAME coll_procs_tcp3 COMMAND ${FOLD_TEST_DIR}/launch/with_launcher.sh foldrun-tcp 3 ${CMAKE_BINARY_DIR} $<TARGET_FILE:coll_procs>)
set_tests_properties(coll_procs_tcp3 PROPERTIES TIMEOUT 900 RUN_SERIAL TRUE)
# 64-byte shm rings: every message is queued, so a call must not finish
# before its own signature has left (a use-after-free the ASan build catches).
add_test(NAME coll_procs_tinyring COMMAND ${FOLD_TEST_DIR}/launch/with_launcher.sh foldrun-shm 5 ${CMAKE_BINARY_DIR} $<TARGET_FILE:coll_procs>)
set_tests_properties(coll_procs_tinyring PROPERTIES TIMEOUT 900 RUN_SERIAL TRUE ENVIRONMENT FOLD_SHM_RING_BYTES=64)
# The shm collectives with one-page slots and the two-exchange allreduce
# from 64 bytes on: every count above a few hundred elements runs several
# pipelined chunks (and the mid phase), at an odd rank count.
add_test(NAME coll_procs_shmcoll COMMAND ${FOLD_TEST_DIR}/launch/with_launcher.sh foldrun-shm 3 ${CMAKE_BINARY_DIR} $<TARGET_FILE:coll_procs> --algo shm)
set_tests_properties(coll_procs_shmcoll PROPERTIES TIMEOUT 900 RUN_SERIAL TRUE ENVIRONMENT "FOLD_SHM_COLL_BYTES=4096;FOLD_SHM_SMALL_BYTES=64")

# The executor's per-communicator state and scratch reused across calls.
fold_add_test_exe(coll_reuse coll/coll_reuse.c check.c)
add_test(NAME coll_reuse COMMAND coll_reuse)
set_tests_properties(coll_reuse PROPERTIES TIMEOUT 300)

# Ranks that disagree (one rank forces another algorithm, or names another
# root, op or dtype): never FOLD_OK with wrong data, FOLD_EMISMATCH (not a
# timeout) naming both algorithms. Threads, then processes over shm and tcp.
fold_add_test_exe(coll_mismatch coll/coll_mismatch.c check.c)
add_test(NAME coll_mismatch COMMAND coll_mismatch)
add_test(NAME coll_mismatch_shm COMMAND ${FOLD_TEST_DIR}/launch/with_launcher.sh foldrun-shm 4 ${CMAKE_BINARY_DIR} $<TARGET_FILE:coll_mismatch> --procs)
add_test(NAME coll_mismatch_tcp COMMAND ${FOLD_TEST_DIR}/launch/with_launcher.sh foldrun-tcp 4 ${CMAKE_BINARY_DIR} $<TARGET_FILE:coll_mismatch> --procs)
set_tests_properties(coll_mismatch coll_mismatch_shm coll_mismatch_tcp PROPERTIES TIMEOUT 300)
# A mismatch reported by a peer fails the collectives from the mismatched one
# on; an earlier one whose data is all here still completes (3 threads, 20 times).
fold_add_test_exe(coll_mismatch_order coll/coll_mismatch_order.c check.c)
add_test(NAME coll_mismatch_order COMMAND coll_mismatch_order)
set_tests_properties(coll_mismatch_order PROPERTIES TIMEOUT 120)
# A rank that comes late to a collective that timed out on the others
# fails too (never FOLD_OK on the data it finds waiting), and the ranks
# that timed out all name the silent rank, not one that only waited:
# processes over shm, threads over tcp; allreduce and a rooted call.
fold_add_test_exe(coll_late coll/coll_late.c shm/shm_harness.c tcp/tcp_harness.c check.c)
# tcplazy: tcp with connections on first use (FOLD_TCP_CONNECT=lazy), where
# a rank's own report may take long enough (it connects) for a peer's report
# and close to come meanwhile (docs/bootstrap.md 1.2; engine_fail_*).
foreach(tp shm tcp tcplazy)
  foreach(cl allreduce broadcast)
    if(tp STREQUAL "tcplazy")
      add_test(NAME coll_late_${tp}_${cl} COMMAND coll_late tcp ${cl})
      set_tests_properties(coll_late_${tp}_${cl} PROPERTIES ENVIRONMENT "FOLD_TCP_CONNECT=lazy")
    else()
      add_test(NAME coll_late_${tp}_${cl} COMMAND coll_late ${tp} ${cl})
    endif()
    set_tests_properties(coll_late_${tp}_${cl} PROPERTIES TIMEOUT 120)
  endforeach()
endforeach()
# Record types (fold_dtype_create) through every algorithm of every
# collective, MINLOC/MAXLOC pairs and bad inputs (issue 9 item 2).
# Segments of 1000 and 100 bytes and shm slots of 4096 are not multiples
# of the 12-byte record, and smaller than the 5000-byte one: nothing may
# split a record.
fold_add_test_exe(coll_records coll/coll_records.c check.c)
add_test(NAME coll_records_unit COMMAND coll_records unit)
add_test(NAME coll_records_threads3 COMMAND coll_records threads 3)
add_test(NAME coll_records_threads4 COMMAND coll_records threads 4)
add_test(NAME coll_records_threads5 COMMAND coll_records threads 5)
set_tests_properties(coll_records_threads3 PROPERTIES ENVIRONMENT "FOLD_SEGMENT_BYTES=1000;FOLD_PIECE_SIZE=7")
set_tests_properties(coll_records_threads5 PROPERTIES ENVIRONMENT "FOLD_SEGMENT_BYTES=100;FOLD_PIECE_SIZE=1000")
add_test(NAME coll_records_sim3 COMMAND coll_records sim 3)
add_test(NAME coll_records_sim8 COMMAND coll_records sim 8)
set_tests_properties(coll_records_sim8 PROPERTIES ENVIRONMENT "FOLD_SEGMENT_BYTES=1000;FOLD_PIECE_SIZE=7")
set_tests_properties(coll_records_unit coll_records_threads3 coll_records_threads4 coll_records_threads5
  coll_records_sim3 coll_records_sim8 PROPERTIES TIMEOUT 600)
add_test(NAME coll_records_procs_shm3 COMMAND ${FOLD_TEST_DIR}/launch/with_launcher.sh foldrun-shm 3 ${CMAKE_BINARY_DIR} $<TARGET_FILE:coll_records> procs)
set_tests_properties(coll_records_procs_shm3 PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE ENVIRONMENT
  "FOLD_SHM_COLL_BYTES=4096;FOLD_SHM_SMALL_BYTES=64;FOLD_SEGMENT_BYTES=1000;FOLD_PIECE_SIZE=7")
add_test(NAME coll_records_procs_tcp3 COMMAND ${FOLD_TEST_DIR}/launch/with_launcher.sh foldrun-tcp 3 ${CMAKE_BINARY_DIR} $<TARGET_FILE:coll_records> procs)
set_tests_properties(coll_records_procs_tcp3 PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE ENVIRONMENT "FOLD_SEGMENT_BYTES=1000")

# ring_skip (issue 10): exact results under random stragglers on threads
# (n = 2..17) and in the simulator (n = 4 and 1,024), the skip reported,
# a straggler past FOLD_TIMEOUT, a non-commutative op refused; then 5
# processes over shm and tcp with a delayed rank, and a killed rank
# (FOLD_EPEER naming it).
fold_add_test_exe(ring_skip_test coll/ring_skip_test.c)
foreach(case threads sim late timeout refuse)
  add_test(NAME ring_skip_${case} COMMAND ring_skip_test ${case})
  set_tests_properties(ring_skip_${case} PROPERTIES TIMEOUT 60)
endforeach()
foreach(t shm tcp)
  add_test(NAME ring_skip_mp_${t} COMMAND foldrun -n 5 --transport ${t} --timeout 30 -- $<TARGET_FILE:ring_skip_test> mp)
  set_tests_properties(ring_skip_mp_${t} PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE
                       ENVIRONMENT "FOLD_INJECT_DELAY=2:0.002;FOLD_SKIP_T=0.0005")
  # rank 3 exits: pass when the 4 others each failed with FOLD_EPEER, its neighbours naming it
  add_test(NAME ring_skip_kill_${t} COMMAND sh -c "out=$($0 -n 5 --transport ${t} --timeout 30 -- $1 mp kill); echo \"$out\"; test $(echo \"$out\" | grep -c EPEER) = 4 && test $(echo \"$out\" | grep -c EPEER-naming-rank-3) -ge 2"
           $<TARGET_FILE:foldrun> $<TARGET_FILE:ring_skip_test>)
  set_tests_properties(ring_skip_kill_${t} PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE
                       ENVIRONMENT "FOLD_INJECT_DELAY=3:0.002;FOLD_SKIP_T=0.0005")
endforeach()
# ring_skip in a training loop's pattern (virtual time): sizes interleaved
# (4 MiB / 8 B, 1 MiB / 64 KiB, a DDP-like step), a straggler late in some
# calls only, a size seen for the first time, the threshold's noise margin,
# a persistent straggler late by less than alpha*T, one late once, and one
# late in bursts.
fold_add_test_exe(ring_skip_mix_test coll/ring_skip_mix_test.c)
foreach(case alt alt2 ddp some newsize noise small once bursts)
  add_test(NAME ring_skip_mix_${case} COMMAND ring_skip_mix_test ${case})
  set_tests_properties(ring_skip_mix_${case} PROPERTIES TIMEOUT 120)
endforeach()
# The DDP-like step moves 25 MiB buffers through the simulator: 6 s in the
# normal build, 39 s under ASan, over 120 s under TSan; the sanitizer builds
# skip it (the other four cases run there).
set_tests_properties(ring_skip_mix_ddp PROPERTIES LABELS slow)
# fold-sim ring-skip: the paper's sweep at n = 4 has 205 points, and a
# straggler late once is recovered in part (some saving above 5%)
add_test(NAME ring_skip_fold_sim COMMAND sh -c "$0 ring-skip --once --max-n 4 | awk -F, 'NR > 1 { n++; if ($7 > m) m = $7 } END { exit !(n == 205 && m > 0.05) }'" $<TARGET_FILE:fold-sim>)
# Several slow ranks (--slow K, --adjacent): two adjacent ranks late once in an allreduce at n = 4 and 8 (410
# points, every row naming "2a", some saving above 3%); four slow ranks leave no n = 4 (nobody would be fast):
# no rows; --slow 0 is refused.
add_test(NAME ring_skip_fold_sim_slow COMMAND sh -c "$0 ring-skip --once --allreduce --slow 2 --adjacent --max-n 8 | awk -F, 'NR > 1 { n++; if ($8 != \"2a\") bad++; if ($7 > m) m = $7 } END { exit !(n == 410 && !bad && m > 0.03) }' && test \"$($0 ring-skip --once --slow 4 --max-n 4 | wc -l)\" = 1 && ! $0 ring-skip --slow 0 2>/dev/null" $<TARGET_FILE:fold-sim>)
set_tests_properties(ring_skip_fold_sim ring_skip_fold_sim_slow PROPERTIES TIMEOUT 60)
# Per-call options (fold_coll_opts): every collective's algorithms through
# opts, the algorithm and segment size in the signature, bad options,
# a per-call timeout.
fold_add_test_exe(coll_opts coll/coll_opts.c check.c)
add_test(NAME coll_opts COMMAND coll_opts)
set_tests_properties(coll_opts PROPERTIES TIMEOUT 300)

# hier (docs/hierarchy.md): hierarchical collectives on test layouts. Over
# threads FOLD_TEST_HOST_MAP splits one process into hosts (split_host and
# hier only): uneven, round-robin, one host, a rank per host, a host of
# one; results bit-identical to ring's, nonblocking calls interleaved, a
# rank forcing ring (FOLD_EMISMATCH on all). Then the sampled case matrix
# (counts 0/1/odd/large, dtypes, ops, roots, in place, nonblocking) with
# hier forced, over threads and as processes mixing shm (within a test
# host) and tcp (between), and a rank killed (FOLD_EPEER naming it on every
# survivor).
fold_add_test_exe(hier_test coll/hier_test.c check.c)
foreach(case threads mismatch sim)
  add_test(NAME hier_${case} COMMAND hier_test ${case})
  set_tests_properties(hier_${case} PROPERTIES TIMEOUT 300 ENVIRONMENT "FOLD_TIMEOUT=60")
endforeach()
# a large simulated world: hier's results at 4,096 ranks, and its memory
# per simulated rank bounded (the split keeps no table of the world's size)
add_test(NAME hier_sim_big COMMAND hier_test sim-big)
set_tests_properties(hier_sim_big PROPERTIES TIMEOUT 300 ENVIRONMENT "FOLD_TIMEOUT=60")
# several leaders per host (allreduce: every rank leads its slice), where
# hosts are of one size: FOLD_HIER_LEADERS all, one and unset (by size) on
# contiguous, round-robin and interleaved layouts, and that `all` does run
# the lane calls (FOLD_DEBUG=TRACE names them) and `one` does not
foreach(lead all one auto)
  add_test(NAME hier_lanes_${lead} COMMAND ${CMAKE_COMMAND} -E env FOLD_HIER_LEADERS=${lead} FOLD_TIMEOUT=60
           $<TARGET_FILE:hier_test> lanes)
  set_tests_properties(hier_lanes_${lead} PROPERTIES TIMEOUT 300)
endforeach()
add_test(NAME hier_lanes_used COMMAND sh -c "n=$(FOLD_DEBUG=TRACE FOLD_HIER_LEADERS=all $0 lanes-trace 2>&1 | grep -c 'lane allreduce'); o=$(FOLD_DEBUG=TRACE FOLD_HIER_LEADERS=one $0 lanes-trace 2>&1 | grep -c 'lane allreduce'); echo all: $n one: $o; test $n = 8 && test $o = 0"
         $<TARGET_FILE:hier_test>)
set_tests_properties(hier_lanes_used PROPERTIES TIMEOUT 120 ENVIRONMENT "FOLD_TIMEOUT=60")
# every rank leading, pipelined over chunks (FOLD_HIER_CHUNKS forces it at
# any size): threads at 3 chunks on 3 x 3 round-robin and 3+1+2+2 (one
# leader there) (counts 7 to 100003, in place, nonblocking calls
# interleaved, ring's bits); the simulator on
# 4 x 3 contiguous and round-robin, 2 x 4 and 3 x 2 (counts not divisible
# by chunks or hosts, in place, bxor); the lane calls run per chunk (TRACE
# names 3 per rank) and not at FOLD_HIER_CHUNKS=1
add_test(NAME hier_pipe_lanes COMMAND ${CMAKE_COMMAND} -E env FOLD_HIER_LEADERS=all FOLD_HIER_CHUNKS=3 FOLD_TIMEOUT=60
         $<TARGET_FILE:hier_test> lanes-pipe)
add_test(NAME hier_pipe_sim COMMAND ${CMAKE_COMMAND} -E env FOLD_HIER_LEADERS=all FOLD_HIER_CHUNKS=4 FOLD_TIMEOUT=60
         $<TARGET_FILE:hier_test> sim-pipe)
add_test(NAME hier_pipe_used COMMAND sh -c "n=$(FOLD_DEBUG=TRACE FOLD_HIER_CHUNKS=3 FOLD_HIER_LEADERS=all $0 lanes-trace 2>&1 | grep -c 'lane allreduce (a chunk)'); o=$(FOLD_DEBUG=TRACE FOLD_HIER_CHUNKS=1 FOLD_HIER_LEADERS=all $0 lanes-trace 2>&1 | grep -c 'lane allreduce (a chunk)'); echo pipelined: $n not: $o; test $n = 24 && test $o = 0"
         $<TARGET_FILE:hier_test>)
set_tests_properties(hier_pipe_lanes hier_pipe_sim hier_pipe_used PROPERTIES TIMEOUT 300 ENVIRONMENT "FOLD_TIMEOUT=60")
# and the sampled case matrix (dtypes, ops, user ops, in place) round-robin, pipelined
add_test(NAME hier_matrix_allreduce_pipe_01 COMMAND coll_matrix --coll allreduce --algo hier --n 4,6,8,12 --quick)
set_tests_properties(hier_matrix_allreduce_pipe_01 PROPERTIES TIMEOUT 600
                     ENVIRONMENT "FOLD_TEST_HOST_MAP=0,1;FOLD_HIER_LEADERS=all;FOLD_HIER_CHUNKS=3;FOLD_TIMEOUT=60")

foreach(map "0,0,1,1" "0,1")
  string(REPLACE "," "" tag ${map})
  add_test(NAME hier_matrix_allreduce_lanes_${tag} COMMAND coll_matrix --coll allreduce --algo hier --n 4,6,8,12 --quick)
  set_tests_properties(hier_matrix_allreduce_lanes_${tag} PROPERTIES TIMEOUT 600
                       ENVIRONMENT "FOLD_TEST_HOST_MAP=${map};FOLD_HIER_LEADERS=all;FOLD_TIMEOUT=60")
endforeach()
set(FOLD_HIER_MAPS "0,0,0,1,2,2,3,3" "0,1,2" "0,1,1,1,1")
set(i 0)
foreach(map ${FOLD_HIER_MAPS})
  foreach(c allreduce broadcast reduce barrier allgather reduce_scatter)
    add_test(NAME hier_matrix_${c}_${i} COMMAND coll_matrix --coll ${c} --algo hier --n 1,2,3,5,8,13 --quick)
    set_tests_properties(hier_matrix_${c}_${i} PROPERTIES TIMEOUT 600 ENVIRONMENT "FOLD_TEST_HOST_MAP=${map};FOLD_TIMEOUT=60")
  endforeach()
  math(EXPR i "${i} + 1")
endforeach()
# record types through every algorithm (hier included) with the threads
# split into hosts: uneven 3+1+2+2, and round-robin on 2 hosts
add_test(NAME hier_records_uneven COMMAND coll_records threads 8)
add_test(NAME hier_records_rr COMMAND coll_records threads 5)
set_tests_properties(hier_records_uneven PROPERTIES TIMEOUT 600 ENVIRONMENT "FOLD_TEST_HOST_MAP=0,0,0,1,2,2,3,3;FOLD_TIMEOUT=60")
set_tests_properties(hier_records_rr PROPERTIES TIMEOUT 600 ENVIRONMENT "FOLD_TEST_HOST_MAP=0,1;FOLD_SEGMENT_BYTES=1000;FOLD_TIMEOUT=60")
# and with every rank leading its slice (2 x 4 round-robin, FOLD_HIER_LEADERS=all)
add_test(NAME hier_records_lanes COMMAND coll_records threads 8)
set_tests_properties(hier_records_lanes PROPERTIES TIMEOUT 600 ENVIRONMENT "FOLD_TEST_HOST_MAP=0,1;FOLD_HIER_LEADERS=all;FOLD_TIMEOUT=60")
# processes: 8 ranks as 3+1+2+2 hosts, 5 ranks round-robin on 2 hosts, and
# 6 ranks as 3 hosts x 2 (allreduce from 1 KiB: every rank leads its slice)
foreach(lay "8;0,0,0,1,2,2,3,3;uneven" "5;0,1;rr" "6;0,0,1,1,2,2;lanes")
  list(GET lay 0 np)
  list(GET lay 1 map)
  list(GET lay 2 tag)
  add_test(NAME hier_procs_${tag} COMMAND ${CMAKE_COMMAND} -E env FOLD_TEST_HOST_MAP=${map} FOLD_TIMEOUT=60
           $<TARGET_FILE:foldrun> -n ${np} -- $<TARGET_FILE:hier_test> procs)
  add_test(NAME hier_coll_procs_${tag} COMMAND ${CMAKE_COMMAND} -E env FOLD_TEST_HOST_MAP=${map} FOLD_TIMEOUT=60
           ${FOLD_TEST_DIR}/launch/with_launcher.sh foldrun-auto ${np} ${CMAKE_BINARY_DIR} $<TARGET_FILE:coll_procs> --algo hier)
  set_tests_properties(hier_procs_${tag} hier_coll_procs_${tag} PROPERTIES TIMEOUT 900 RUN_SERIAL TRUE)
endforeach()
# pipelined as processes: 6 ranks as 3 hosts x 2, 3 chunks (the host
# child's reduce_scatter and allgather of two chunks at once through shm)
add_test(NAME hier_procs_pipe COMMAND ${CMAKE_COMMAND} -E env FOLD_TEST_HOST_MAP=0,0,1,1,2,2 FOLD_HIER_LEADERS=all
         FOLD_HIER_CHUNKS=3 FOLD_TIMEOUT=60 $<TARGET_FILE:foldrun> -n 6 -- $<TARGET_FILE:hier_test> procs)
set_tests_properties(hier_procs_pipe PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE)
# several leaders per host (4 x 2, FOLD_HIER_LEADERS=all): rank 5 (local
# rank 1, in the lane of the odd ranks) and rank 2 (a leader) exit after
# the first allreduce: the 7 others each name it, the other lane's too
foreach(k 5 2)
  add_test(NAME hier_kill_lanes_${k} COMMAND sh -c "out=$(FOLD_TEST_HOST_MAP=0,0,1,1,2,2,3,3 FOLD_HIER_LEADERS=all FOLD_TIMEOUT=30 $0 -n 8 -- $1 kill ${k}); echo \"$out\"; test $(echo \"$out\" | grep -c EPEER-naming-rank-K) = 7"
           $<TARGET_FILE:foldrun> $<TARGET_FILE:hier_test>)
  set_tests_properties(hier_kill_lanes_${k} PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
endforeach()
# and pipelined (FOLD_HIER_CHUNKS=4, allreduces of 64 elements): rank 5 exits
# after the first call, the 7 others name it
add_test(NAME hier_kill_pipe_5 COMMAND sh -c "out=$(FOLD_TEST_HOST_MAP=0,0,1,1,2,2,3,3 FOLD_HIER_LEADERS=all FOLD_HIER_CHUNKS=4 FOLD_TIMEOUT=30 $0 -n 8 -- $1 kill 5 allreduce64); echo \"$out\"; test $(echo \"$out\" | grep -c EPEER-naming-rank-K) = 7"
         $<TARGET_FILE:foldrun> $<TARGET_FILE:hier_test>)
set_tests_properties(hier_kill_pipe_5 PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
# rank 3 (the only rank of its host: a leader) and rank 5 (not a leader)
# exit after the first call: every survivor fails with FOLD_EPEER naming it
# (allreduce calls; hier_kill_K_<coll>: allgather or reduce_scatter calls)
foreach(kc 3 5 "3;allgather" "5;reduce_scatter")
  list(GET kc 0 k)
  list(LENGTH kc len)
  set(coll "")
  set(tname hier_kill_${k})
  if(len GREATER 1)
    list(GET kc 1 coll)
    set(tname hier_kill_${k}_${coll})
  endif()
  add_test(NAME ${tname} COMMAND sh -c "out=$(FOLD_TEST_HOST_MAP=0,0,0,1,2,2,3,3 FOLD_TIMEOUT=30 $0 -n 8 -- $1 kill ${k} ${coll}); echo \"$out\"; test $(echo \"$out\" | grep -c EPEER-naming-rank-K) = 7"
           $<TARGET_FILE:foldrun> $<TARGET_FILE:hier_test>)
  set_tests_properties(${tname} PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
endforeach()
# Over shm, ring allreduce posts a step's receive while its send to a
# neighbour that is away still waits (fold__co_send_nowait).
fold_add_test_exe(ring_nowait coll/ring_nowait.c shm/shm_harness.c check.c)
add_test(NAME coll_ring_nowait_shm COMMAND ring_nowait)
set_tests_properties(coll_ring_nowait_shm PROPERTIES TIMEOUT 120)
