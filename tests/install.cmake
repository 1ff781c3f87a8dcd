# tests/install.cmake — the installed package works for consumers.
add_test(NAME install_consumer COMMAND ${FOLD_TEST_DIR}/install/install_test.sh ${CMAKE_BINARY_DIR})
set_tests_properties(install_consumer PROPERTIES TIMEOUT 120 LABELS nosan)
