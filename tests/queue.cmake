# tests/queue.cmake — the iterative queue (fold_iterq) under foldrun: supersteps, stop, bad input, failures, checkpoints.
fold_add_test_exe(iterq_test queue/iterq_test.c check.c)
set(FOLD_IQ_RUN $<TARGET_FILE:foldrun> -n 3 --timeout 20 $<TARGET_FILE:iterq_test>)
foreach(mode basic bad fail stopfail positive mismatch-count mismatch-dtype mismatch-later mismatch-told missing)
  add_test(NAME iterq_${mode} COMMAND ${FOLD_IQ_RUN} ${mode})
  set_tests_properties(iterq_${mode} PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE)
endforeach()
# Resume after a failure, a torn file, and refusals (other data, steps, rank count, past max_iter, renamed or
# swapped files, KMeans' and logistic regression's parameters).
add_test(NAME iterq_checkpoint COMMAND ${FOLD_TEST_DIR}/queue/iterq_ckpt.sh $<TARGET_FILE:foldrun> $<TARGET_FILE:iterq_test>)
set_tests_properties(iterq_checkpoint PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE)
# Allreduce steps use `direct` unless the user forced another algorithm.
add_test(NAME iterq_direct COMMAND ${FOLD_TEST_DIR}/queue/iterq_algo.sh $<TARGET_FILE:foldrun> $<TARGET_FILE:iterq_test>)
set_tests_properties(iterq_direct PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE)
# KMeans on digits, one rank SIGKILLed mid-run; a rerun with a smaller max_iter is refused; the rerun resumes
# and equals an uninterrupted run bit for bit.
add_test(NAME iterq_kill_resume COMMAND ${FOLD_TEST_DIR}/queue/kill_resume.sh $<TARGET_FILE:foldrun> $<TARGET_FILE:ml_run>
  /usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz)
set_tests_properties(iterq_kill_resume PROPERTIES TIMEOUT 90 RUN_SERIAL TRUE)
