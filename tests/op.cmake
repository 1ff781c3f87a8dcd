# tests/op.cmake — reduction kernels and conversions.
fold_add_test_exe(op_unit op/op_unit.c coll/coll_ref.c check.c)
target_link_libraries(op_unit PRIVATE m)
add_test(NAME op_unit COMMAND op_unit)
set_tests_properties(op_unit PROPERTIES TIMEOUT 120)

# FOLD_SUM_EXACT: the accumulators, the collectives on 2, 3 and 5 thread ranks
# under every reduction algorithm, each result checked against math.fsum.
fold_add_test_exe(op_exact op/exact.c check.c)
target_link_libraries(op_exact PRIVATE m)
add_test(NAME op_exact COMMAND /usr/bin/python3 ${FOLD_TEST_DIR}/op/exact_fsum.py $<TARGET_FILE:op_exact>)
set_tests_properties(op_exact PROPERTIES TIMEOUT 120)
# ... and as processes on shm (with the shm algorithms) and tcp.
add_test(NAME op_exact_procs_shm COMMAND /usr/bin/python3 ${FOLD_TEST_DIR}/op/exact_fsum.py ${FOLD_TEST_DIR}/launch/with_launcher.sh foldrun-shm 3 ${CMAKE_BINARY_DIR} $<TARGET_FILE:op_exact> procs shm)
add_test(NAME op_exact_procs_tcp COMMAND /usr/bin/python3 ${FOLD_TEST_DIR}/op/exact_fsum.py ${FOLD_TEST_DIR}/launch/with_launcher.sh foldrun-tcp 4 ${CMAKE_BINARY_DIR} $<TARGET_FILE:op_exact> procs)
set_tests_properties(op_exact_procs_shm op_exact_procs_tcp PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
