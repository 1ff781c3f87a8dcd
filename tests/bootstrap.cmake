# tests/bootstrap.cmake — auth, stores, cards, rendezvous (fold_comm_init), foldrun, and the fuzz targets.
fold_add_test_exe(test_auth bootstrap/test_auth.c check.c)
add_test(NAME bootstrap_auth COMMAND test_auth)
set_tests_properties(bootstrap_auth PROPERTIES TIMEOUT 30)

fold_add_test_exe(test_store bootstrap/test_store.c check.c)
add_test(NAME bootstrap_store COMMAND test_store)
set_tests_properties(bootstrap_store PROPERTIES TIMEOUT 60)

fold_add_test_exe(test_rendezvous bootstrap/test_rendezvous.c check.c)
add_test(NAME bootstrap_rendezvous COMMAND test_rendezvous)
set_tests_properties(bootstrap_rendezvous PROPERTIES TIMEOUT 90 RUN_SERIAL TRUE)

# fold_comm_init_store: ranks as threads meet at an in-process callback store; errors name ranks.
fold_add_test_exe(test_store_cb bootstrap/test_store_cb.c check.c)
add_test(NAME bootstrap_store_cb COMMAND test_store_cb)
set_tests_properties(bootstrap_store_cb PROPERTIES TIMEOUT 60)

# Regressions: 300 silent connections vs a real store client; rank 0 destroying its comm right after init.
fold_add_test_exe(test_store_dos bootstrap/test_store_dos.c check.c)
add_test(NAME bootstrap_store_dos COMMAND test_store_dos)
set_tests_properties(bootstrap_store_dos PROPERTIES TIMEOUT 90 RUN_SERIAL TRUE)

foreach(case usage bind env prefix exitcode sigkill firstdeath grace forward spew)
  add_test(NAME foldrun_${case} COMMAND ${FOLD_TEST_DIR}/bootstrap/foldrun_test.sh $<TARGET_FILE:foldrun> ${case})
  set_tests_properties(foldrun_${case} PROPERTIES TIMEOUT 60)
endforeach()

# fold_comm_init end to end: 4 processes under foldrun pass a token around a ring.
fold_add_test_exe(ring_launch bootstrap/ring_launch.c)
add_test(NAME foldrun_ring_tcp COMMAND foldrun -n 4 --transport tcp --timeout 20 -- $<TARGET_FILE:ring_launch> tcp)
add_test(NAME foldrun_ring_shm COMMAND foldrun -n 4 --transport shm --timeout 20 -- $<TARGET_FILE:ring_launch> shm)
add_test(NAME foldrun_ring_auto COMMAND foldrun -n 4 --timeout 20 -- $<TARGET_FILE:ring_launch> shm)
# ring_launch exits non-zero on a wrong token or transport; foldrun passes that on.
set_tests_properties(foldrun_ring_tcp foldrun_ring_shm foldrun_ring_auto PROPERTIES TIMEOUT 60)

# libFuzzer targets, built with clang straight from the sources they test
# (the project itself may be built with gcc), only when clang can link a
# fuzzer here, in the normal build (FOLD_FUZZ). Each runs 10 s as a test.
if(FOLD_FUZZ)
  set(_fz_flags -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -std=c11
      -I${CMAKE_SOURCE_DIR}/include -I${CMAKE_SOURCE_DIR}/src)
  set(_fz_store_src ${FOLD_TEST_DIR}/fuzz/fuzz_store.c ${CMAKE_SOURCE_DIR}/src/bootstrap/store.c
      ${CMAKE_SOURCE_DIR}/src/transport/card.c)
  set(_fz_auth_src ${FOLD_TEST_DIR}/fuzz/fuzz_auth.c ${CMAKE_SOURCE_DIR}/src/net/auth.c ${CMAKE_SOURCE_DIR}/src/net/fdio.c
      ${CMAKE_SOURCE_DIR}/src/core/clock.c)
  add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/fuzz_store
    COMMAND ${FOLD_CLANG} ${_fz_flags} ${_fz_store_src} -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz_store
    DEPENDS ${_fz_store_src} ${CMAKE_SOURCE_DIR}/src/bootstrap/store.h VERBATIM)
  add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/fuzz_auth
    COMMAND ${FOLD_CLANG} ${_fz_flags} ${_fz_auth_src} ${OPENSSL_CRYPTO_LIBRARY} -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz_auth
    DEPENDS ${_fz_auth_src} ${CMAKE_SOURCE_DIR}/src/net/auth.h VERBATIM)
  add_custom_target(fold_fuzzers ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/fuzz_store ${CMAKE_CURRENT_BINARY_DIR}/fuzz_auth)
  foreach(f fuzz_store fuzz_auth)
    # -artifact_prefix keeps crash files in the build tree
    add_test(NAME ${f} COMMAND ${CMAKE_CURRENT_BINARY_DIR}/${f} -max_total_time=10 -timeout=5
      -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/${f}-)
    set_tests_properties(${f} PROPERTIES TIMEOUT 60 LABELS fuzz)
  endforeach()
else()
  message(STATUS "fold: clang with libFuzzer not found; fuzz targets not built")
endif()

# fold_init without a launcher (a clean environment): a world of one; a half-set
# launcher or a lone FOLD_STORE is refused. Node-local rank/size: all local
# under foldrun and in threads, each rank its own host in network namespaces
# and in the simulator (issue 9, items 12 and 13).
fold_add_test_exe(init_world bootstrap/init_world.c check.c)
add_test(NAME init_singleton COMMAND env -i PATH=/usr/bin:/bin $<TARGET_FILE:init_world> 1 all inproc)
add_test(NAME init_singleton_partial_rank COMMAND env -i FOLD_RANK=0 $<TARGET_FILE:init_world> einval FOLD_RANK=0)
add_test(NAME init_singleton_partial_size COMMAND env -i WORLD_SIZE=2 $<TARGET_FILE:init_world> einval WORLD_SIZE=2)
add_test(NAME init_singleton_store_only COMMAND env -i FOLD_STORE=tcp://127.0.0.1:9 $<TARGET_FILE:init_world> einval FOLD_STORE)
add_test(NAME init_singleton_bad_transport COMMAND env -i FOLD_TRANSPORT=carrier-pigeon $<TARGET_FILE:init_world> einval FOLD_TRANSPORT)
add_test(NAME init_local_unit COMMAND init_world unit)
add_test(NAME init_local_foldrun3 COMMAND foldrun -n 3 --timeout 30 -- $<TARGET_FILE:init_world> 3 all)
add_test(NAME init_local_netns3 COMMAND ${FOLD_TEST_DIR}/launch/with_launcher.sh netns 3 ${CMAKE_BINARY_DIR} $<TARGET_FILE:init_world> 3 own tcp)
set_tests_properties(init_singleton init_singleton_partial_rank init_singleton_partial_size init_singleton_store_only
  init_singleton_bad_transport init_local_unit PROPERTIES TIMEOUT 30)
set_tests_properties(init_local_foldrun3 init_local_netns3 PROPERTIES TIMEOUT 120)
set_tests_properties(init_local_netns3 PROPERTIES LABELS nosan RUN_SERIAL TRUE)

# A store port served by something else (PyTorch's TCPStore, a silent or a chatty server) is reported
# within seconds, not after FOLD_TIMEOUT (issue 9, item 14). python3-torch: scripts/deps.sh.
add_test(NAME init_foreign_store COMMAND ${FOLD_TEST_DIR}/bootstrap/foreign_store.sh $<TARGET_FILE:init_world>)
set_tests_properties(init_foreign_store PROPERTIES TIMEOUT 300 LABELS nosan)

# A rank SIGKILLed in fold_init after it joined: the store server sees its
# connection close and the waiting ranks fail at once naming it (FOLD_TIMEOUT 60 s).
foreach(t shm tcp)
  add_test(NAME rdv_kill_${t} COMMAND ${FOLD_TEST_DIR}/bootstrap/rdv_kill_test.sh $<TARGET_FILE:foldrun> $<TARGET_FILE:blame_rank> ${t})
  set_tests_properties(rdv_kill_${t} PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
endforeach()
# A rendezvous missing a rank warns every few seconds (how many joined, who is missing, world size and store
# to check); a rank given another tcp store says it cannot connect and that every rank needs the same store.
foreach(case missing_tcp missing_file wrong_store)
  add_test(NAME bootstrap_rdv_${case} COMMAND ${FOLD_TEST_DIR}/bootstrap/rdv_warn_test.sh $<TARGET_FILE:init_world> ${case})
  set_tests_properties(bootstrap_rdv_${case} PROPERTIES TIMEOUT 90)
endforeach()
# A multi-host launch with no store: the error says what to export, and how.
add_test(NAME init_no_store_hint COMMAND env -i OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2
  $<TARGET_FILE:init_world> einval "FOLD_STORE=tcp://<rank 0's host>" FOLD_JOB_TOKEN "mpirun -x")

# 16 processes over tcp (connections on first use) and shm: fold_init, a
# checked allreduce, a split into even and odd ranks with a checked allreduce
# on each half (fold-boottime). The 128-process runs are a benchmark
# (bench/boot_bench.sh; docs/bootstrap.md 1.2), not a test.
if(TARGET fold-boottime)
  foreach(tp tcp shm)
    add_test(NAME foldrun_boot16_${tp} COMMAND foldrun -n 16 --transport ${tp} --timeout 60 -- $<TARGET_FILE:fold-boottime>)
    set_tests_properties(foldrun_boot16_${tp} PROPERTIES TIMEOUT 90)
  endforeach()
endif()
