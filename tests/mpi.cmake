# tests/mpi.cmake — libfoldmpi (docs/mpi.md): mpi_test, a matrix over the supported calls through mpi.h alone
# (collectives against a serial reference, MPI_IN_PLACE, nonblocking, p2p wildcards, communicators, error
# classes, unsupported calls) under fold-mpiexec on shm and tcp; an unsupported call under
# MPI_ERRORS_ARE_FATAL; and the OSU Micro-Benchmarks built unmodified with fold-mpicc (skipped without them).
if(TARGET foldmpi)
  add_executable(mpi_test ${FOLD_TEST_DIR}/mpi/mpi_test.c)
  target_link_libraries(mpi_test PRIVATE foldmpi) # mpi.h and fold's public headers only
  foreach(n 1 2 3 4)
    add_test(NAME mpi_matrix_shm${n} COMMAND foldrun -n ${n} --transport shm --timeout 60 -- $<TARGET_FILE:mpi_test>)
  endforeach()
  add_test(NAME mpi_matrix_tcp3 COMMAND foldrun -n 3 --transport tcp --timeout 60 -- $<TARGET_FILE:mpi_test>)
  set_tests_properties(mpi_matrix_shm1 mpi_matrix_shm2 mpi_matrix_shm3 mpi_matrix_shm4 mpi_matrix_tcp3
    PROPERTIES TIMEOUT 180 PASS_REGULAR_EXPRESSION "0 failures in all")
  # the default handler ends the job, naming the call and the class (foldrun exits nonzero: the output decides)
  add_test(NAME mpi_fatal_unsupported COMMAND foldrun -n 2 --timeout 30 -- $<TARGET_FILE:mpi_test> fatal)
  set_tests_properties(mpi_fatal_unsupported PROPERTIES TIMEOUT 60
    PASS_REGULAR_EXPRESSION "MPI_Win_create: rank [01]: .*MPI_ERR_UNSUPPORTED_OPERATION"
    FAIL_REGULAR_EXPRESSION "returned under MPI_ERRORS_ARE_FATAL")
  # OMB through fold-mpicc: the wrapper compiles without the sanitizer flags, so normal builds only
  # next to the checkout (../shared/external), or next to the worktrees' folder
  set(_omb "${PROJECT_SOURCE_DIR}/../shared/external/osu-micro-benchmarks-5.7")
  if(NOT EXISTS "${_omb}")
    set(_omb "${PROJECT_SOURCE_DIR}/../../shared/external/osu-micro-benchmarks-5.7")
  endif()
  get_filename_component(_omb "${_omb}" ABSOLUTE)
  set(FOLD_OMB_DIR "${_omb}" CACHE PATH
    "OSU Micro-Benchmarks 5.7 sources for the mpi_omb test (skipped when absent)")
  add_test(NAME mpi_omb COMMAND ${FOLD_TEST_DIR}/mpi/omb_test.sh ${FOLD_OMB_DIR} ${PROJECT_BINARY_DIR})
  set_tests_properties(mpi_omb PROPERTIES TIMEOUT 300 LABELS nosan SKIP_RETURN_CODE 77)
endif()
if(TARGET foldmpi AND TARGET foldrun)
  add_test(NAME mpi_install COMMAND ${FOLD_TEST_DIR}/mpi/install_test.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(mpi_install PROPERTIES TIMEOUT 120 LABELS nosan)
endif()
