# tests/engine.cmake — the engine's services: timers (and a wait after a task's receive took an arrived message), extension slots, message handlers, FOLD_INJECT_DELAY, tasks and watchers.
fold_add_test_exe(engine_timer engine/engine_timer.c)
foreach(case threads_order threads_periodic threads_wait threads_postmatch sim_exact sim_periodic sim_at sim_failed)
  add_test(NAME engine_timer_${case} COMMAND engine_timer ${case})
  set_tests_properties(engine_timer_${case} PROPERTIES TIMEOUT 30)
endforeach()

# Handlers for unsolicited messages (several senders in order, a rendezvous
# message, drops, bad contexts) and extension slots (teardown order), keyed
# and well-known (wkslots).
fold_add_test_exe(engine_handler engine/engine_handler.c)
foreach(case threads sim rules slots wkslots)
  add_test(NAME engine_handler_${case} COMMAND engine_handler ${case})
  set_tests_properties(engine_handler_${case} PROPERTIES TIMEOUT 60)
endforeach()
# The same with real processes: shm, and tcp (whose messages past 64 KiB are rendezvous).
fold_add_test_exe(engine_handler_mp engine/engine_handler_mp.c check.c)
foreach(t shm tcp)
  add_test(NAME engine_handler_mp_${t} COMMAND foldrun -n 3 --transport ${t} --timeout 30 -- $<TARGET_FILE:engine_handler_mp>)
  set_tests_properties(engine_handler_mp_${t} PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE)
endforeach()

# FOLD_INJECT_DELAY: parsing, a measured straggler on threads, exact virtual
# delays in the simulator, and processes over shm (its own shm algorithm's
# chunk loop) and tcp (the round executor).
fold_add_test_exe(engine_delay engine/engine_delay.c)
foreach(case parse threads sim timeout)
  add_test(NAME engine_delay_${case} COMMAND engine_delay ${case})
  set_tests_properties(engine_delay_${case} PROPERTIES TIMEOUT 60)
endforeach()
foreach(t_a shm:shm tcp:ring)
  string(REPLACE ":" ";" _ta ${t_a})
  list(GET _ta 0 _t)
  list(GET _ta 1 _a)
  add_test(NAME engine_delay_mp_${_t} COMMAND foldrun -n 3 --transport ${_t} --timeout 30 -- $<TARGET_FILE:engine_delay> mp ${_a})
  set_tests_properties(engine_delay_mp_${_t} PROPERTIES TIMEOUT 60 RUN_SERIAL TRUE ENVIRONMENT "FOLD_INJECT_DELAY=1:0.05")
endforeach()

# Link measurements (fold__link_ns, ring_skip's T_trans): inproc has none, the simulator's are its model exactly,
# shm and tcp measure large sends (3 processes), and over network namespaces shaped to 1 Gbit/s tcp's
# measured rate must be within a factor 2 of the shaping.
fold_add_test_exe(engine_link engine/engine_link.c)
foreach(case threads sim)
  add_test(NAME engine_link_${case} COMMAND engine_link ${case})
  set_tests_properties(engine_link_${case} PROPERTIES TIMEOUT 30)
endforeach()
foreach(t shm tcp)
  add_test(NAME engine_link_mp_${t} COMMAND foldrun -n 3 --transport ${t} --timeout 30 -- $<TARGET_FILE:engine_link> mp)
  set_tests_properties(engine_link_mp_${t} PROPERTIES TIMEOUT 60)
endforeach()
add_test(NAME engine_link_netns1g COMMAND ${FOLD_TEST_DIR}/netns/netns_run.sh -k 3 -r 1gbit -t 60 --
         $<TARGET_FILE:engine_link> mp 1e9)
set_tests_properties(engine_link_netns1g PROPERTIES TIMEOUT 90 RUN_SERIAL TRUE LABELS nosan)

# Tasks and watchers: watchers once per pass after the tasks (stop/start from callbacks, none once failed), a task
# taken off the engine's list, stepped by hand and handed back; the progress thread drives a lone watcher.
fold_add_test_exe(engine_watch engine/engine_watch.c)
foreach(case order task)
  add_test(NAME engine_watch_${case} COMMAND engine_watch ${case})
  set_tests_properties(engine_watch_${case} PROPERTIES TIMEOUT 30)
endforeach()
add_test(NAME engine_watch_pthread COMMAND engine_watch pthread)
set_tests_properties(engine_watch_pthread PROPERTIES TIMEOUT 30 ENVIRONMENT "FOLD_PROGRESS_THREAD=1")

# A timed-out rank names the silent rank through a peer's failure report, whatever the order of the report and the
# peer's close: both during its own telling (lazy tcp, where telling may include connecting), the report alone
# then, the report later, and a close without a report (a stub transport replays each order).
fold_add_test_exe(engine_fail engine/engine_fail.c check.c)
foreach(case close_in_tell report_in_tell report_after close_no_report)
  add_test(NAME engine_fail_${case} COMMAND engine_fail ${case})
  set_tests_properties(engine_fail_${case} PROPERTIES TIMEOUT 30)
endforeach()
