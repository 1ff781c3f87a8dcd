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
# fuzzer here. Each runs 10 s as a test.
if(FOLD_HAVE_LIBFUZZER)
  set(_fz_flags -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -std=c11
      -I${CMAKE_SOURCE_DIR}/include -I${CMAKE_SOURCE_DIR}/src)
  set(_fz_store_src ${FOLD_TEST_DIR}/fuzz/fuzz_store.c ${CMAKE_SOURCE_DIR}/src/bootstrap/store.c
      ${CMAKE_SOURCE_DIR}/src/bootstrap/card.c)
  set(_fz_auth_src ${FOLD_TEST_DIR}/fuzz/fuzz_auth.c ${CMAKE_SOURCE_DIR}/src/bootstrap/auth.c ${CMAKE_SOURCE_DIR}/src/bootstrap/fdio.c
      ${CMAKE_SOURCE_DIR}/src/core/clock.c)
  add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/fuzz_store
    COMMAND ${FOLD_CLANG} ${_fz_flags} ${_fz_store_src} -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz_store
    DEPENDS ${_fz_store_src} ${CMAKE_SOURCE_DIR}/src/bootstrap/store.h VERBATIM)
  add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/fuzz_auth
    COMMAND ${FOLD_CLANG} ${_fz_flags} ${_fz_auth_src} ${OPENSSL_CRYPTO_LIBRARY} -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz_auth
    DEPENDS ${_fz_auth_src} ${CMAKE_SOURCE_DIR}/src/bootstrap/auth.h VERBATIM)
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
