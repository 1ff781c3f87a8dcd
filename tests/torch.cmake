# tests/torch.cmake — the torch.distributed backend "fold" (python/fold/torch.py): every operation against a
# reference and gloo, a killed rank, DistributedDataParallel training equal to gloo's, and the DDP straggler
# bench (bench/straggler/ddp_bench.py) kept from rotting.
# Pass = every rank exits 0 (foldrun and kill.py pass the first failure on); a "FAIL" or a traceback in the output
# fails the test too. Python cannot load a sanitizer-built libfold without LD_PRELOAD: every test here is labelled nosan.
if(TARGET fold_torch)
  set(FOLD_TORCH_RUN ${CMAKE_COMMAND} -E env PYTHONPATH=${CMAKE_BINARY_DIR}/python FOLD_TIMEOUT=60)
  set(FOLD_TORCH_DIR ${FOLD_TEST_DIR}/torch)
  # Every operation, every dtype, fold against a local reference and gloo (ops.py). foldrun with shm and
  # tcp, and torchrun's variables by hand.
  foreach(n 2 4)
    add_test(NAME torch_ops_foldrun_${n}
      COMMAND ${FOLD_TORCH_RUN} $<TARGET_FILE:foldrun> -n ${n} --timeout 120 /usr/bin/python3 ${FOLD_TORCH_DIR}/ops.py)
  endforeach()
  add_test(NAME torch_ops_foldrun_tcp_2
    COMMAND ${FOLD_TORCH_RUN} $<TARGET_FILE:foldrun> -n 2 --transport tcp --timeout 120 /usr/bin/python3
            ${FOLD_TORCH_DIR}/ops.py)
  add_test(NAME torch_ops_torchrun_env_3
    COMMAND ${FOLD_TORCH_RUN} ${FOLD_TEST_DIR}/launch/with_launcher.sh torchrun-env 3 ${CMAKE_BINARY_DIR}
            /usr/bin/python3 ${FOLD_TORCH_DIR}/ops.py)
  # Debian's real torchrun (a c10d rendezvous on a free port; with --redirects 1 --tee 1, without which it crashes on Python 3.11):
  # the backend, and the plain package's fold.init() (fold serves its own store at MASTER_PORT: torchrun's
  # c10d rendezvous leaves that port to the workers)
  add_test(NAME torch_ops_torchrun_2
    COMMAND ${FOLD_TORCH_RUN} ${FOLD_TEST_DIR}/launch/with_launcher.sh torchrun 2 ${CMAKE_BINARY_DIR}
            /usr/bin/python3 ${FOLD_TORCH_DIR}/ops.py)
  add_test(NAME python_calls_torchrun_2
    COMMAND ${FOLD_TORCH_RUN} ${FOLD_TEST_DIR}/launch/with_launcher.sh torchrun 2 ${CMAKE_BINARY_DIR}
            /usr/bin/python3 ${FOLD_TEST_DIR}/python/calls.py)
  # torchrun's static rendezvous (--master_port): its own TCPStore holds MASTER_PORT, so fold.init() says so
  # and names the way out (FOLD_STORE), which works
  add_test(NAME python_calls_torchrun_static_store_2
    COMMAND ${FOLD_TORCH_RUN} FOLD_STORE=auto ${FOLD_TEST_DIR}/launch/with_launcher.sh torchrun-static 2
            ${CMAKE_BINARY_DIR} /usr/bin/python3 ${FOLD_TEST_DIR}/python/calls.py)
  add_test(NAME python_init_torchrun_static_2
    COMMAND ${FOLD_TORCH_RUN} FOLD_TIMEOUT=20 ${FOLD_TEST_DIR}/launch/with_launcher.sh torchrun-static 2
            ${CMAKE_BINARY_DIR} /usr/bin/python3 ${FOLD_TEST_DIR}/python/calls.py)
  set_tests_properties(python_init_torchrun_static_2 PROPERTIES TIMEOUT 150 LABELS nosan
    PASS_REGULAR_EXPRESSION "rank 1: tcp://127.0.0.1:[0-9]+ is not a fold store \\(it is PyTorch's TCPStore.*set FOLD_STORE=")
  set_tests_properties(torch_ops_foldrun_2 torch_ops_foldrun_4 torch_ops_foldrun_tcp_2 torch_ops_torchrun_env_3
    torch_ops_torchrun_2 python_calls_torchrun_2 python_calls_torchrun_static_store_2
    PROPERTIES TIMEOUT 150 LABELS nosan FAIL_REGULAR_EXPRESSION "FAIL|Traceback")
  # A rank killed with SIGKILL: work.wait() raises naming it within 5 s on every other rank (kill.py starts
  # the ranks itself with torchrun's variables, so that they outlive the victim).
  add_test(NAME torch_kill_shm_3 COMMAND ${FOLD_TORCH_RUN} /usr/bin/python3 ${FOLD_TORCH_DIR}/kill.py 3 shm)
  add_test(NAME torch_kill_tcp_4 COMMAND ${FOLD_TORCH_RUN} /usr/bin/python3 ${FOLD_TORCH_DIR}/kill.py 4 tcp)
  set_tests_properties(torch_kill_shm_3 torch_kill_tcp_4 PROPERTIES TIMEOUT 90 LABELS nosan RUN_SERIAL TRUE
    FAIL_REGULAR_EXPRESSION "FAIL|hangs|Traceback")
  # DistributedDataParallel on the digits: per-step losses of fold equal gloo's to 1e-6, same accuracy.
  foreach(n 2 4)
    add_test(NAME torch_ddp_digits_${n}
      COMMAND ${FOLD_TORCH_RUN} $<TARGET_FILE:foldrun> -n ${n} --timeout 150 /usr/bin/python3
              ${FOLD_TORCH_DIR}/ddp_digits.py)
    set_tests_properties(torch_ddp_digits_${n} PROPERTIES TIMEOUT 180 LABELS nosan
      FAIL_REGULAR_EXPRESSION "FAIL|Traceback")
  endforeach()
  set_tests_properties(torch_ddp_digits_4 PROPERTIES LABELS "nosan;slow")
  # bench/straggler/ddp_bench.py (DDP step time with a straggler: fold's ring, ring_skip and default
  # selection against gloo) in its tiny mode, so that it does not rot: every configuration gets a positive
  # figure, and a rank that fails fails the run, named (ddp_bench_check.sh; the figures are not judged).
  add_test(NAME torch_ddp_bench_tiny
    COMMAND ${FOLD_TORCH_RUN} sh ${FOLD_TORCH_DIR}/ddp_bench_check.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
  set_tests_properties(torch_ddp_bench_tiny PROPERTIES TIMEOUT 120 LABELS nosan)
  # `import fold` after `import torch.distributed` registers "fold" (no `import fold.torch`); fold alone no torch.
  add_test(NAME torch_backend_autoregister
    COMMAND ${FOLD_TORCH_RUN} $<TARGET_FILE:foldrun> -n 2 --timeout 60 /usr/bin/python3 ${FOLD_TORCH_DIR}/autoregister.py)
  set_tests_properties(torch_backend_autoregister PROPERTIES TIMEOUT 90 LABELS nosan FAIL_REGULAR_EXPRESSION "FAIL|Traceback")
endif()
