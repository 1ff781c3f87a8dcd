# tests/consumer.cmake — fold where its users are: a CMake project gets fold by add_subdirectory, FetchContent,
# the build tree (fold_DIR) and an install prefix (find_package), and runs a checked 2-rank allreduce
# (docs/cmake.md). Normal build only (nosan): each builds a small project, the first two fold's library too.
foreach(how subdir fetch build_tree prefix)
  add_test(NAME consumer_${how} COMMAND ${FOLD_TEST_DIR}/consumer/consumer_test.sh ${how}
    ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR} ${CMAKE_C_COMPILER})
  set_tests_properties(consumer_${how} PROPERTIES TIMEOUT 600 LABELS nosan)
endforeach()
