# tests/ml.cmake — KMeans and logistic regression on the iterative queue, checked against scikit-learn under foldrun.
fold_add_test_exe(ml_run ml/ml_run.c ${CMAKE_SOURCE_DIR}/examples/ml_csv.c)
target_include_directories(ml_run PRIVATE ${CMAKE_SOURCE_DIR}/examples)
target_link_libraries(ml_run PRIVATE m)
set(FOLD_SKDATA /usr/lib/python3/dist-packages/sklearn/datasets/data)
set(FOLD_ML_CHECK ${FOLD_TEST_DIR}/ml/ml_check.sh $<TARGET_FILE:foldrun> $<TARGET_FILE:ml_run> ${CMAKE_SOURCE_DIR}/examples/ml_ref.py)
# Same initial centroids as scikit-learn: centroids, labels and inertia to 1e-9 relative at 1..4 ranks.
foreach(case "iris;iris.csv;3" "wine;wine_data.csv;3" "digits;digits.csv.gz;10")
  list(GET case 0 name)
  list(GET case 1 file)
  list(GET case 2 k)
  add_test(NAME ml_kmeans_${name} COMMAND ${FOLD_ML_CHECK} kmeans ${FOLD_SKDATA}/${file} ${k})
  set_tests_properties(ml_kmeans_${name} PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
endforeach()
# Standardised breast_cancer: coefficients to 1e-6 of newton-cg's optimum, the same training accuracy.
add_test(NAME ml_logreg_breast_cancer COMMAND ${FOLD_ML_CHECK} logreg ${FOLD_SKDATA}/breast_cancer.csv)
set_tests_properties(ml_logreg_breast_cancer PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
# k-means++ from a fixed seed: deterministic, rank-count independent on digits, the best inertia on iris.
add_test(NAME ml_kmeans_pp COMMAND ${FOLD_TEST_DIR}/ml/kmeans_pp.sh $<TARGET_FILE:foldrun> $<TARGET_FILE:ml_run> ${FOLD_SKDATA})
set_tests_properties(ml_kmeans_pp PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
