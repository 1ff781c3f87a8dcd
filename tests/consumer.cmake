# tests/consumer.cmake — fold where its users are: a CMake project gets fold by add_subdirectory, FetchContent,
# the build tree (fold_DIR) and an install prefix (find_package), and runs a checked 2-rank allreduce
# (docs/cmake.md). Normal build only (nosan): each builds a small project, the first two fold's library too.
foreach(how subdir fetch build_tree prefix)
  add_test(NAME consumer_${how} COMMAND ${FOLD_TEST_DIR}/consumer/consumer_test.sh ${how}
    ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR} ${CMAKE_C_COMPILER})
  set_tests_properties(consumer_${how} PROPERTIES TIMEOUT 600 LABELS nosan)
endforeach()
# pip install ./python into a fresh venv (Debian's pip and setuptools, offline), import, python -m fold.run -n 2
if(TARGET fold_python)
  add_test(NAME python_pip COMMAND ${FOLD_TEST_DIR}/consumer/pip_test.sh ${PROJECT_SOURCE_DIR})
  set_tests_properties(python_pip PROPERTIES TIMEOUT 600 LABELS nosan)
  # python -m fold.run from the build tree: the arguments as foldrun gets them, 2 ranks of a script
  add_test(NAME python_run COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${PROJECT_BINARY_DIR}/python
    /usr/bin/python3 ${FOLD_TEST_DIR}/consumer/run_test.py)
  set_tests_properties(python_run PROPERTIES TIMEOUT 120 LABELS nosan)
endif()
