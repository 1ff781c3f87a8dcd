# tests/python.cmake — the Python package `fold` (python/): every call against numpy, errors, signals, a killed rank.
# Python cannot load a sanitizer-built libfold without LD_PRELOAD: the Python tests are labelled nosan, and
# the ASan build runs seven of them again with ASan and UBSan preloaded (python_asan_*, below).
if(TARGET fold_python AND FOLD_SANITIZE STREQUAL "address")
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so OUTPUT_VARIABLE _asan OUTPUT_STRIP_TRAILING_WHITESPACE)
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libubsan.so OUTPUT_VARIABLE _ubsan OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(EXISTS "${_asan}" AND EXISTS "${_ubsan}")
    # the interpreter is not instrumented: its own allocations look leaked to LeakSanitizer
    set(_run ${CMAKE_COMMAND} -E env "LD_PRELOAD=${_asan} ${_ubsan}" ASAN_OPTIONS=detect_leaks=0
      PYTHONPATH=${CMAKE_BINARY_DIR}/python FOLD_TIMEOUT=2)
    add_test(NAME python_asan_calls COMMAND ${_run} $<TARGET_FILE:foldrun> -n 3 --transport shm
      /usr/bin/python3 ${FOLD_TEST_DIR}/python/calls.py)
    add_test(NAME python_asan_errors COMMAND ${_run} $<TARGET_FILE:foldrun> -n 3 --transport tcp
      /usr/bin/python3 ${FOLD_TEST_DIR}/python/errors.py)
    add_test(NAME python_asan_areduce_ml COMMAND ${_run} $<TARGET_FILE:foldrun> -n 3
      /usr/bin/python3 ${FOLD_TEST_DIR}/python/areduce_ml.py)
    add_test(NAME python_asan_sim COMMAND ${_run} /usr/bin/python3 ${FOLD_TEST_DIR}/python/sim.py)
    add_test(NAME python_asan_iterq COMMAND ${_run} $<TARGET_FILE:foldrun> -n 3
      /usr/bin/python3 ${FOLD_TEST_DIR}/python/iterq.py)
    # Ctrl-C (the abort from the wakeup-fd guard's thread included) and a killed peer
    add_test(NAME python_asan_sigint COMMAND ${_run} /usr/bin/python3 ${FOLD_TEST_DIR}/python/driver.py sigint 2 shm
      ${CMAKE_BINARY_DIR}/python)
    add_test(NAME python_asan_kv_sigint COMMAND ${_run} /usr/bin/python3 ${FOLD_TEST_DIR}/python/kv_sigint.py 3 shm
      ${CMAKE_BINARY_DIR}/python)
    add_test(NAME python_asan_kill COMMAND ${_run} /usr/bin/python3 ${FOLD_TEST_DIR}/python/driver.py kill 3 tcp
      ${CMAKE_BINARY_DIR}/python)
    # fold.KVStore: a local store, and dist_sync with two servers (the updater on the progress thread)
    add_test(NAME python_asan_kv_local COMMAND ${_run} /usr/bin/python3 ${FOLD_TEST_DIR}/python/kv.py)
    add_test(NAME python_asan_kv_dist COMMAND ${_run} FOLD_TIMEOUT=30 FOLD_KV_SERVERS=2 FOLD_KV_BIGARRAY_BOUND=256
      FOLD_PROGRESS_THREAD=1 $<TARGET_FILE:foldrun> -n 4 --transport shm /usr/bin/python3 ${FOLD_TEST_DIR}/python/kv.py)
    set_tests_properties(python_asan_calls python_asan_errors python_asan_areduce_ml python_asan_sim
      python_asan_iterq python_asan_sigint python_asan_kv_sigint python_asan_kill python_asan_kv_local
      python_asan_kv_dist PROPERTIES TIMEOUT 120)
    set_tests_properties(python_asan_sigint python_asan_kv_sigint python_asan_kill PROPERTIES RUN_SERIAL TRUE)
  endif()
elseif(TARGET fold_python)
  set(FOLD_PY /usr/bin/python3)
  set(FOLD_PY_RUN ${CMAKE_COMMAND} -E env PYTHONPATH=${CMAKE_BINARY_DIR}/python)
  # fold.config(): the FOLD_* variables as the library reads them (docs/configuration.md)
  add_test(NAME python_config COMMAND ${FOLD_PY_RUN} ${FOLD_PY} ${FOLD_TEST_DIR}/python/config.py)
  set_tests_properties(python_config PROPERTIES TIMEOUT 30 LABELS nosan)
  foreach(t shm tcp)
    # every call, every numpy dtype, in place and not, blocking and i*, n = 1..4
    foreach(n 1 2 3 4)
      add_test(NAME python_calls_${t}_${n} COMMAND ${FOLD_PY_RUN} FOLD_TIMEOUT=30
        $<TARGET_FILE:foldrun> -n ${n} --transport ${t} ${FOLD_PY} ${FOLD_TEST_DIR}/python/calls.py)
      set_tests_properties(python_calls_${t}_${n} PROPERTIES TIMEOUT 60 LABELS nosan)
    endforeach()
    # bad input, Mismatch, Timeout (FOLD_TIMEOUT=2), Aborted: the right class and message
    foreach(n 1 3)
      add_test(NAME python_errors_${t}_${n} COMMAND ${FOLD_PY_RUN} FOLD_TIMEOUT=2
        $<TARGET_FILE:foldrun> -n ${n} --transport ${t} ${FOLD_PY} ${FOLD_TEST_DIR}/python/errors.py)
      set_tests_properties(python_errors_${t}_${n} PROPERTIES TIMEOUT 60 LABELS nosan)
    endforeach()
    # a SIGKILLed rank: PeerLost within 5 s on the others; SIGINT in a blocked recv: KeyboardInterrupt within 1 s
    add_test(NAME python_kill_${t} COMMAND ${FOLD_PY} ${FOLD_TEST_DIR}/python/driver.py kill 3 ${t} ${CMAKE_BINARY_DIR}/python)
    add_test(NAME python_sigint_${t} COMMAND ${FOLD_PY} ${FOLD_TEST_DIR}/python/driver.py sigint 2 ${t} ${CMAKE_BINARY_DIR}/python)
    set_tests_properties(python_kill_${t} python_sigint_${t} PROPERTIES TIMEOUT 90 LABELS nosan RUN_SERIAL TRUE)
  endforeach()
  # the same with the progress thread driving the communicator between calls
  add_test(NAME python_calls_pthread_shm_3 COMMAND ${FOLD_PY_RUN} FOLD_TIMEOUT=30 FOLD_PROGRESS_THREAD=1
    $<TARGET_FILE:foldrun> -n 3 --transport shm ${FOLD_PY} ${FOLD_TEST_DIR}/python/calls.py)
  set_tests_properties(python_calls_pthread_shm_3 PROPERTIES TIMEOUT 60 LABELS nosan)
  # torch CPU tensors (float16, bfloat16 included): importing torch takes seconds, so two runs only
  add_test(NAME python_tensors_shm_2 COMMAND ${FOLD_PY_RUN} FOLD_TIMEOUT=60
    $<TARGET_FILE:foldrun> -n 2 --transport shm ${FOLD_PY} ${FOLD_TEST_DIR}/python/tensors.py)
  add_test(NAME python_tensors_tcp_3 COMMAND ${FOLD_PY_RUN} FOLD_TIMEOUT=60
    $<TARGET_FILE:foldrun> -n 3 --transport tcp ${FOLD_PY} ${FOLD_TEST_DIR}/python/tensors.py)
  set_tests_properties(python_tensors_shm_2 python_tensors_tcp_3 PROPERTIES TIMEOUT 120 LABELS nosan)
  # fold.AsyncReduce (full, partial), fold.KMeans and fold.LogisticRegression against numpy
  foreach(n 1 3)
    add_test(NAME python_areduce_ml_${n} COMMAND ${FOLD_PY_RUN} FOLD_TIMEOUT=30
      $<TARGET_FILE:foldrun> -n ${n} ${FOLD_PY} ${FOLD_TEST_DIR}/python/areduce_ml.py)
    set_tests_properties(python_areduce_ml_${n} PROPERTIES TIMEOUT 60 LABELS nosan)
  endforeach()
  # cmake --install: the package lands in the interpreter's layout and finds libfold by $ORIGIN
  add_test(NAME python_install COMMAND ${FOLD_TEST_DIR}/python/install_test.sh ${CMAKE_BINARY_DIR} ${FOLD_PYTHON_INSTALL_DIR})
  set_tests_properties(python_install PROPERTIES TIMEOUT 120 LABELS nosan)
  # fold.IterQueue with Python steps: gradient descent to the mean, views, a raising step
  foreach(n 1 3)
    add_test(NAME python_iterq_${n} COMMAND ${FOLD_PY_RUN} FOLD_TIMEOUT=30
      $<TARGET_FILE:foldrun> -n ${n} ${FOLD_PY} ${FOLD_TEST_DIR}/python/iterq.py)
    set_tests_properties(python_iterq_${n} PROPERTIES TIMEOUT 60 LABELS nosan)
  endforeach()
  # fold.KVStore (docs/python.md "KVStore"): a local store against numpy (devices, sgd, Python updaters, string
  # keys, bad input); dist_sync with two servers (a key split over them) equal to a serial numpy reference,
  # over shm and tcp, with and without the progress thread; a SIGKILLed worker: PeerLost within 5 s
  add_test(NAME python_kv_local COMMAND ${FOLD_PY_RUN} ${FOLD_PY} ${FOLD_TEST_DIR}/python/kv.py)
  set_tests_properties(python_kv_local PROPERTIES TIMEOUT 60 LABELS nosan)
  foreach(t shm tcp)
    add_test(NAME python_kv_dist_${t} COMMAND ${FOLD_PY_RUN} FOLD_TIMEOUT=30 FOLD_KV_SERVERS=2
      FOLD_KV_BIGARRAY_BOUND=256 $<TARGET_FILE:foldrun> -n 4 --transport ${t} ${FOLD_PY} ${FOLD_TEST_DIR}/python/kv.py)
    add_test(NAME python_kv_kill_${t} COMMAND ${FOLD_PY} ${FOLD_TEST_DIR}/python/kv_kill.py 4 ${t} ${CMAKE_BINARY_DIR}/python)
    set_tests_properties(python_kv_dist_${t} PROPERTIES TIMEOUT 60 LABELS nosan)
    set_tests_properties(python_kv_kill_${t} PROPERTIES TIMEOUT 90 LABELS nosan RUN_SERIAL TRUE)
    # SIGINT to a worker in wait() and barrier() and to the server in serve(): KeyboardInterrupt within 1 s
    add_test(NAME python_kv_sigint_${t} COMMAND ${FOLD_PY} ${FOLD_TEST_DIR}/python/kv_sigint.py 3 ${t}
      ${CMAKE_BINARY_DIR}/python)
    set_tests_properties(python_kv_sigint_${t} PROPERTIES TIMEOUT 90 LABELS nosan RUN_SERIAL TRUE)
  endforeach()
  # SIGINT inside fold.init() (rank 1 never comes): KeyboardInterrupt within 1 s, a second init refused while
  # the first still waits, init working again once it timed out
  add_test(NAME python_init_sigint COMMAND ${FOLD_PY} ${FOLD_TEST_DIR}/python/init_sigint.py ${CMAKE_BINARY_DIR}/python)
  set_tests_properties(python_init_sigint PROPERTIES TIMEOUT 60 LABELS nosan RUN_SERIAL TRUE)
  add_test(NAME python_kv_dist_pthread_shm COMMAND ${FOLD_PY_RUN} FOLD_TIMEOUT=30 FOLD_KV_SERVERS=2
    FOLD_KV_BIGARRAY_BOUND=256 FOLD_PROGRESS_THREAD=1 $<TARGET_FILE:foldrun> -n 4 --transport shm ${FOLD_PY}
    ${FOLD_TEST_DIR}/python/kv.py)
  set_tests_properties(python_kv_dist_pthread_shm PROPERTIES TIMEOUT 60 LABELS nosan)
  # fold.Sim: simulated ranks in one process, virtual time against the model
  add_test(NAME python_sim COMMAND ${FOLD_PY_RUN} ${FOLD_PY} ${FOLD_TEST_DIR}/python/sim.py)
  set_tests_properties(python_sim PROPERTIES TIMEOUT 60 LABELS nosan)
endif()

# fold_wait_for, the sliced wait under every blocking Python call (plain C: runs in the sanitizer builds too).
fold_add_test_exe(wait_for_test ${FOLD_TEST_DIR}/python/wait_for_test.c ${FOLD_TEST_DIR}/check.c)
add_test(NAME python_wait_for COMMAND wait_for_test)
set_tests_properties(python_wait_for PROPERTIES TIMEOUT 30)
