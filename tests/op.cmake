# tests/op.cmake — reduction kernels and conversions.
fold_add_test_exe(op_unit op/op_unit.c coll/coll_ref.c check.c)
target_link_libraries(op_unit PRIVATE m)
add_test(NAME op_unit COMMAND op_unit)
set_tests_properties(op_unit PROPERTIES TIMEOUT 120)
