# tests/kvparts.cmake — the key-value store's summing kernel, optimizers, example and benchmarks' helpers.
fold_add_test_exe(kvparts_sum kvparts/sum_unit.c check.c)
add_test(NAME kvparts_sum COMMAND kvparts_sum)
set_tests_properties(kvparts_sum PROPERTIES TIMEOUT 60)

# The optimizers against a serial reference written in the test ...
fold_add_test_exe(kvparts_optim kvparts/optim_unit.c check.c)
target_link_libraries(kvparts_optim PRIVATE m)
add_test(NAME kvparts_optim COMMAND kvparts_optim)
set_tests_properties(kvparts_optim PROPERTIES TIMEOUT 60)
# ... and against torch.optim.SGD / Adam (Debian's python3-torch).
add_test(NAME kvparts_optim_torch COMMAND /usr/bin/python3 ${FOLD_TEST_DIR}/kvparts/optim_torch.py $<TARGET_FILE:kvparts_optim>)
set_tests_properties(kvparts_optim_torch PROPERTIES TIMEOUT 120 LABELS nosan)

# bench/kv_resnet50.h is what bench/kv_resnet50.py derives from torchvision.
add_test(NAME kvparts_resnet50_header COMMAND sh -c "/usr/bin/python3 ${CMAKE_SOURCE_DIR}/bench/kv_resnet50.py | diff -u ${CMAKE_SOURCE_DIR}/bench/kv_resnet50.h -")
set_tests_properties(kvparts_resnet50_header PROPERTIES TIMEOUT 120 LABELS nosan)

# examples/kv_logreg: logistic regression through a dist_sync store under
# foldrun (1-3 servers, 1-3 workers, shm and tcp, weights split over the
# servers or not) equals training alone.
add_test(NAME kvparts_logreg COMMAND ${FOLD_TEST_DIR}/kvparts/kv_logreg_test.sh $<TARGET_FILE:foldrun> $<TARGET_FILE:kv_logreg> /usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv)
set_tests_properties(kvparts_logreg PROPERTIES TIMEOUT 200 RUN_SERIAL TRUE)

# ... and as four "hosts" (network namespaces over a bridge, tcp): 2 workers, 2 servers.
add_test(NAME kvparts_logreg_netns4 COMMAND ${FOLD_TEST_DIR}/launch/with_launcher.sh netns 4 ${CMAKE_BINARY_DIR} $<TARGET_FILE:kv_logreg> /usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv)
set_tests_properties(kvparts_logreg_netns4 PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE LABELS nosan ENVIRONMENT "FOLD_KV_SERVERS=2;FOLD_KV_BIGARRAY_BOUND=8")

# The benchmarks still run and their checks hold (no timing is judged):
# fold-kvlocal on 1 MiB, fold-kvdist with one iteration of ResNet-50 (its
# arrays 8 times smaller) and 200 small keys on 2 workers + 2 servers, and
# its allreduce comparison.
add_test(NAME kvparts_bench_local COMMAND fold-kvlocal -s 1 -r 1)
add_test(NAME kvparts_bench_dist COMMAND ${CMAKE_COMMAND} -E env FOLD_KV_SERVERS=2
  $<TARGET_FILE:foldrun> -n 4 --timeout 60 $<TARGET_FILE:fold-kvdist> -i 1 -w 0 -k 200 -j 1 -d 8)
add_test(NAME kvparts_bench_allreduce COMMAND $<TARGET_FILE:foldrun> -n 2 --timeout 60 $<TARGET_FILE:fold-kvdist> -a 1 -i 1 -w 0 -d 8)
set_tests_properties(kvparts_bench_local kvparts_bench_dist kvparts_bench_allreduce PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
