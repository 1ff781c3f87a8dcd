# tests/tree.cmake — the architecture stays true: layer order of includes and of calls (the library's objects
# in this build), file sizes (scripts/check_tree.sh).
add_test(NAME tree_check COMMAND ${FOLD_TEST_DIR}/tree/check_tree_test.sh ${CMAKE_BINARY_DIR})
set_tests_properties(tree_check PROPERTIES TIMEOUT 60)
