# tests/kv.cmake — the parameter-server key-value store (fold_kv, docs/kvstore.md): local, distributed under foldrun, failures.
fold_add_test_exe(kv_local kv/kv_local.c check.c)
add_test(NAME kv_local COMMAND kv_local)
set_tests_properties(kv_local PROPERTIES TIMEOUT 60)
# Distributed: workers and servers as processes under foldrun, over shm and
# tcp; FOLD_KV_SERVERS servers (the last ranks).
# the worker's outbox (a fifo of messages already in order, a heap for the
# rest): pops against a scan of the queued ones, for six priority patterns
fold_add_test_exe(kv_outbox kv/kv_outbox.c check.c)
add_test(NAME kv_outbox COMMAND kv_outbox)
set_tests_properties(kv_outbox PROPERTIES TIMEOUT 60)
fold_add_test_exe(kv_dist kv/kv_dist.c check.c)
set(FOLD_KV_CASES "sync:3:1" "sync:5:2" "sync:2:1" "sync:6:3" "async:4:2" "ssp:5:2" "opt:4:2" "many:4:2" "bad:3:1" "prio:2:1" "stale:3:1" "sync:5:1" "mismatch:3:1" "order:4:2" "order:3:1")
foreach(t shm tcp)
  foreach(case ${FOLD_KV_CASES})
    string(REPLACE ":" ";" parts ${case})
    list(GET parts 0 mode)
    list(GET parts 1 n)
    list(GET parts 2 ns)
    add_test(NAME kv_${mode}_${n}r${ns}s_${t} COMMAND $<TARGET_FILE:foldrun> -n ${n} --transport ${t} --timeout 60 -- $<TARGET_FILE:kv_dist> ${mode})
    set_tests_properties(kv_${mode}_${n}r${ns}s_${t} PROPERTIES TIMEOUT 90 RUN_SERIAL TRUE
      ENVIRONMENT "FOLD_KV_SERVERS=${ns};FOLD_TIMEOUT=20")
  endforeach()
  # SIGKILL: a worker (3 workers, 2 servers), a server (2 workers, 2 servers)
  foreach(m kill_worker kill_server)
    add_test(NAME kv_${m}_${t} COMMAND kv_dist ${m} ${t} 5)
    set_tests_properties(kv_${m}_${t} PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE ENVIRONMENT "FOLD_KV_SERVERS=2")
  endforeach()
endforeach()
# Across four network namespaces (four "hosts" over tcp): 2 workers, 2 servers.
add_test(NAME kv_sync_netns4 COMMAND ${FOLD_TEST_DIR}/launch/with_launcher.sh netns 4 ${CMAKE_BINARY_DIR} $<TARGET_FILE:kv_dist> sync)
set_tests_properties(kv_sync_netns4 PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE LABELS nosan ENVIRONMENT "FOLD_KV_SERVERS=2;FOLD_TIMEOUT=20")
# With FOLD_PROGRESS_THREAD=1 the helper steps the store's tasks between calls.
foreach(case "sync:5:2:shm" "stale:3:1:tcp" "prio:2:1:tcp")
  string(REPLACE ":" ";" parts ${case})
  list(GET parts 0 mode)
  list(GET parts 1 n)
  list(GET parts 2 ns)
  list(GET parts 3 t)
  add_test(NAME kv_${mode}_pthread_${t} COMMAND $<TARGET_FILE:foldrun> -n ${n} --transport ${t} --timeout 60 -- $<TARGET_FILE:kv_dist> ${mode})
  set_tests_properties(kv_${mode}_pthread_${t} PROPERTIES TIMEOUT 90 RUN_SERIAL TRUE
    ENVIRONMENT "FOLD_KV_SERVERS=${ns};FOLD_TIMEOUT=20;FOLD_PROGRESS_THREAD=1")
endforeach()
# Ranks as threads (inproc): sync and async stores in one process.
fold_add_test_exe(kv_threads kv/kv_threads.c check.c)
add_test(NAME kv_threads COMMAND kv_threads)
set_tests_properties(kv_threads PROPERTIES TIMEOUT 60)
# A live worker that never pushes: the timeout names it (FOLD_TIMEOUT=2).
foreach(t shm tcp)
  add_test(NAME kv_silent_${t} COMMAND $<TARGET_FILE:foldrun> -n 3 --transport ${t} -- $<TARGET_FILE:kv_dist> silent)
  set_tests_properties(kv_silent_${t} PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE ENVIRONMENT "FOLD_KV_SERVERS=1;FOLD_TIMEOUT=2")
endforeach()
# A worker stopped by SIGSTOP (2 or 3 workers, 2 servers, FOLD_TIMEOUT=2):
# every surviving rank's error names it, none blames a survivor.
fold_add_test_exe(kv_stall kv/kv_stall.c check.c)
foreach(t shm tcp)
  add_test(NAME kv_stall_${t} COMMAND kv_stall ${t} 2)
  add_test(NAME kv_stall_3w_${t} COMMAND kv_stall ${t} 3)
  set_tests_properties(kv_stall_${t} kv_stall_3w_${t} PROPERTIES TIMEOUT 90 RUN_SERIAL TRUE)
endforeach()
