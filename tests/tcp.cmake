# tests/tcp.cmake — the tcp transport: pure unit tests, ranks-as-threads scenarios, and the frame fuzzer.
fold_add_test_exe(tcp_unit tcp/tcp_unit.c check.c)
add_test(NAME tcp_unit COMMAND tcp_unit)
set_tests_properties(tcp_unit PROPERTIES TIMEOUT 30)

fold_add_test_exe(tcp_p2p tcp/tcp_p2p.c tcp/tcp_harness.c p2p/p2p_suite.c p2p/p2p_wild.c check.c)
# tcp_<case>: connections on first use (FOLD_TCP_CONNECT=lazy, the default);
# tcp_eager_<case>: made at init, for the cases where that differs (the
# connect phase: strangers, flood, timeout; a start's writes: batch; lost
# peers and quiet ranks: peer_close, quiet).
foreach(t matrix unexpected mismatch peer_close strangers flood batch quiet idle timeout ifname ipv6)
  add_test(NAME tcp_${t} COMMAND tcp_p2p ${t} lazy ${FOLD_TEST_BIG_MIB})
  set_tests_properties(tcp_${t} PROPERTIES TIMEOUT 120)
endforeach()
foreach(t matrix peer_close strangers flood batch quiet timeout)
  add_test(NAME tcp_eager_${t} COMMAND tcp_p2p ${t} eager ${FOLD_TEST_BIG_MIB})
  set_tests_properties(tcp_eager_${t} PROPERTIES TIMEOUT 120)
endforeach()
set_tests_properties(tcp_ipv6 PROPERTIES SKIP_RETURN_CODE 77)
# the matrices: 90 s under TSan on a quiet machine with 64 MiB
set_tests_properties(tcp_matrix tcp_eager_matrix PROPERTIES TIMEOUT 300)
# The flood test bounds how long connecting and a p2p suite take under an
# unpaced flood of strangers (15 s; 1-1.5 s alone, up to 7.4 s with the three
# builds' floods side by side and two busy loops), alone in its build.
set_tests_properties(tcp_flood tcp_eager_flood PROPERTIES RUN_SERIAL TRUE)
# One message over 2 GiB between two threads (4.4 GB of buffers).
add_test(NAME tcp_huge COMMAND tcp_p2p huge)
# FOLD_TIMEOUT bounds the whole send (30 s by default in tcp_p2p): beside the
# sanitizer builds' serial tests 2.2 GB over loopback once took longer.
set_tests_properties(tcp_huge PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE LABELS slow ENVIRONMENT FOLD_TIMEOUT=240)

# libFuzzer target for the frame parser: built with clang straight from the
# sources (the project may be compiled by gcc) and run for 10 s, only when
# clang links a fuzzer here (FOLD_HAVE_LIBFUZZER, probed once in
# tests/CMakeLists.txt), in the normal build (FOLD_FUZZ).
if(FOLD_FUZZ)
  set(_fz_bin ${CMAKE_CURRENT_BINARY_DIR}/fuzz_tcp_frame)
  set(_fz_src ${FOLD_TEST_DIR}/fuzz/fuzz_tcp_frame.c ${CMAKE_SOURCE_DIR}/src/transport/tcp/tcp_wire.c)
  add_custom_command(OUTPUT ${_fz_bin}
    COMMAND ${FOLD_CLANG} -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
            -D_GNU_SOURCE -std=c11 -I${CMAKE_SOURCE_DIR}/include -I${CMAKE_SOURCE_DIR}/src ${_fz_src} -o ${_fz_bin}
    DEPENDS ${_fz_src} ${CMAKE_SOURCE_DIR}/src/transport/tcp/tcp_wire.h ${CMAKE_SOURCE_DIR}/src/core/internal.h
    VERBATIM)
  add_custom_target(fuzz_tcp_frame ALL DEPENDS ${_fz_bin})
  # The corpus lives in the build tree; the dictionary gives the magic.
  set(_fz_corpus ${CMAKE_CURRENT_BINARY_DIR}/fuzz_tcp_frame_corpus)
  file(MAKE_DIRECTORY ${_fz_corpus})
  add_test(NAME tcp_fuzz_frame COMMAND ${_fz_bin} -max_total_time=10 -timeout=5
    -dict=${FOLD_TEST_DIR}/fuzz/tcp_frame.dict -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/fuzz_tcp_frame- ${_fz_corpus})
  set_tests_properties(tcp_fuzz_frame PROPERTIES TIMEOUT 60 LABELS fuzz)
endif()

# Connections on first use (FOLD_TCP_CONNECT): a ring opens 2 connections
# per rank (lazy) or n-1 (eager); all pairs dialing at once keep order; a
# rank that no one talked to and that dies is named by every rank waiting
# on it (tests/tcp/tcp_lazy.c).
fold_add_test_exe(tcp_lazy tcp/tcp_lazy.c check.c)
foreach(m lazy eager)
  foreach(c ring all kill)
    add_test(NAME tcp_${m}_${c} COMMAND tcp_lazy ${c} 6 ${m})
    set_tests_properties(tcp_${m}_${c} PROPERTIES TIMEOUT 120)
  endforeach()
endforeach()
