# tests/kv.cmake — the parameter-server key-value store (fold_kv, docs/kvstore.md): local, distributed under foldrun, failures.
fold_add_test_exe(kv_local kv/kv_local.c check.c)
add_test(NAME kv_local COMMAND kv_local)
set_tests_properties(kv_local PROPERTIES TIMEOUT 60)
