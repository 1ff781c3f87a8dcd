# tests/bench.cmake — fold-bench: checked sweeps at n = 3 under foldrun, every allreduce algorithm, bad options; bench/compare --quick.
set(FOLD_BENCH_CHECK ${FOLD_TEST_DIR}/bench/bench_check.sh)
set(FOLD_BENCH_SMALL -b 8 -e 64K -n 2 -w 1 --check)

# name | transport | sections | fold-bench arguments
add_test(NAME bench_allreduce COMMAND ${FOLD_BENCH_CHECK} ${CMAKE_BINARY_DIR} run 3 shm 1
  -c allreduce ${FOLD_BENCH_SMALL})
add_test(NAME bench_reduce_scatter COMMAND ${FOLD_BENCH_CHECK} ${CMAKE_BINARY_DIR} run 3 shm 1
  -c reduce_scatter -d int32 -o max ${FOLD_BENCH_SMALL})
add_test(NAME bench_allgather COMMAND ${FOLD_BENCH_CHECK} ${CMAKE_BINARY_DIR} run 3 shm 1
  -c allgather -d float16 ${FOLD_BENCH_SMALL})
add_test(NAME bench_alltoall COMMAND ${FOLD_BENCH_CHECK} ${CMAKE_BINARY_DIR} run 3 shm 1
  -c alltoall -d int8 ${FOLD_BENCH_SMALL})
# Every collective once, rooted ones at the last rank.
add_test(NAME bench_all COMMAND ${FOLD_BENCH_CHECK} ${CMAKE_BINARY_DIR} run 3 shm 9
  -c all -r 2 -d uint8 -o prod -f 4 ${FOLD_BENCH_SMALL})
# -a all: one section per allreduce algorithm (docs/collectives.md lists nine, shm, ring_skip and hier included).
add_test(NAME bench_allreduce_algos COMMAND ${FOLD_BENCH_CHECK} ${CMAKE_BINARY_DIR} run 3 shm 9
  -c allreduce -a all -f 4 ${FOLD_BENCH_SMALL})
# TCP and the JSON file.
add_test(NAME bench_reduce_tcp_json COMMAND ${FOLD_BENCH_CHECK} ${CMAKE_BINARY_DIR} run 3 tcp 1
  -c reduce -r 1 -d float64 -o avg -f 8 ${FOLD_BENCH_SMALL} --json ${CMAKE_CURRENT_BINARY_DIR}/bench_reduce.json)
# FOLD_SUM_EXACT, checked (each size also timed with sum: the ratio line, and
# the JSON rows' sum_time_us and sum_exact_ratio, which bench_check.sh checks).
add_test(NAME bench_allreduce_sum_exact COMMAND ${FOLD_BENCH_CHECK} ${CMAKE_BINARY_DIR} run 3 shm 1
  -c allreduce -d float64 -o sum_exact -b 8 -e 4K -f 8 -n 2 -w 1 --check
  --json ${CMAKE_CURRENT_BINARY_DIR}/bench_sum_exact.json)
# --user-loop: each timed call followed by an 8 B MAX allreduce of its time (a user's timing loop).
add_test(NAME bench_allreduce_user_loop COMMAND ${FOLD_BENCH_CHECK} ${CMAKE_BINARY_DIR} run 2 shm 1
  -c allreduce --user-loop ${FOLD_BENCH_SMALL})
set_tests_properties(bench_allreduce bench_reduce_scatter bench_allgather bench_alltoall bench_all
  bench_allreduce_algos bench_reduce_tcp_json bench_allreduce_sum_exact bench_allreduce_user_loop
  PROPERTIES TIMEOUT 180 RUN_SERIAL TRUE)
# fold-skip-pattern (bench/straggler/pattern_bench.sh's runs): its line, the calls it counts, `some` without a whole cycle refused.
add_test(NAME bench_skip_pattern COMMAND ${FOLD_TEST_DIR}/bench/skip_pattern_check.sh ${CMAKE_BINARY_DIR})
set_tests_properties(bench_skip_pattern PROPERTIES TIMEOUT 120)
# bench/regress.sh's command line (its runs build two trees: not a unit test).
add_test(NAME bench_regress_usage COMMAND ${FOLD_TEST_DIR}/bench/regress_check.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(bench_regress_usage PROPERTIES TIMEOUT 60)

# Bad command lines: usage on stderr, exit 2.
add_test(NAME bench_badopt_unknown COMMAND ${FOLD_BENCH_CHECK} ${CMAKE_BINARY_DIR} badopt --bogus)
add_test(NAME bench_badopt_size COMMAND ${FOLD_BENCH_CHECK} ${CMAKE_BINARY_DIR} badopt -e 12Q)
add_test(NAME bench_badopt_float_band COMMAND ${FOLD_BENCH_CHECK} ${CMAKE_BINARY_DIR} badopt -o band)
add_test(NAME bench_badopt_algo COMMAND ${FOLD_BENCH_CHECK} ${CMAKE_BINARY_DIR} badopt -c gather -a ring)
add_test(NAME bench_badopt_int_sum_exact COMMAND ${FOLD_BENCH_CHECK} ${CMAKE_BINARY_DIR} badopt -d int32 -o sum_exact)
add_test(NAME bench_badopt_minloc COMMAND ${FOLD_BENCH_CHECK} ${CMAKE_BINARY_DIR} badopt -o minloc)
set_tests_properties(bench_badopt_unknown bench_badopt_size bench_badopt_float_band bench_badopt_algo
  bench_badopt_int_sum_exact bench_badopt_minloc
  PROPERTIES TIMEOUT 60)

# bench/compare --quick: fold next to Open MPI, MPICH and Gloo, one setting per
# test (the netns one needs root). The peers are MPI launchers and torch:
# not for sanitizer builds. They check the tables, not the figures, so they run
# next to other tests.
add_test(NAME bench_compare_host COMMAND ${FOLD_TEST_DIR}/bench/compare_check.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} host)
add_test(NAME bench_compare_netns COMMAND ${FOLD_TEST_DIR}/bench/compare_check.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR} netns)
set_tests_properties(bench_compare_host bench_compare_netns PROPERTIES TIMEOUT 900 LABELS nosan)
