# tests/engine.cmake — the engine's services: timers, extension slots, message handlers, FOLD_INJECT_DELAY.
fold_add_test_exe(engine_timer engine/engine_timer.c)
foreach(case threads_order threads_periodic threads_wait sim_exact sim_periodic sim_at sim_failed)
  add_test(NAME engine_timer_${case} COMMAND engine_timer ${case})
  set_tests_properties(engine_timer_${case} PROPERTIES TIMEOUT 30)
endforeach()
