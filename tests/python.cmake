# tests/python.cmake — the Python package `fold` (python/): every call against numpy, errors, signals, a killed rank.
# Python cannot load a sanitizer-built libfold without LD_PRELOAD: every test here is labelled nosan.
if(TARGET fold_python)
  set(FOLD_PY_ENV "PYTHONPATH=${CMAKE_BINARY_DIR}/python")
  set(FOLD_PY_RUN ${CMAKE_COMMAND} -E env ${FOLD_PY_ENV} FOLD_TIMEOUT=30)
  foreach(t shm tcp)
    foreach(n 1 3)
      add_test(NAME python_smoke_${t}_${n}
        COMMAND ${FOLD_PY_RUN} FOLD_TRANSPORT=${t} $<TARGET_FILE:foldrun> -n ${n} /usr/bin/python3 ${FOLD_TEST_DIR}/python/smoke.py)
      set_tests_properties(python_smoke_${t}_${n} PROPERTIES TIMEOUT 60 LABELS nosan)
    endforeach()
  endforeach()
endif()
