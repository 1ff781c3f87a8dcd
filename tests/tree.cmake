# tests/tree.cmake — the architecture stays true: layer order of includes and file sizes (scripts/check_tree.sh).
add_test(NAME tree_check COMMAND ${FOLD_TEST_DIR}/tree/check_tree_test.sh)
set_tests_properties(tree_check PROPERTIES TIMEOUT 60)
