# tests/cxx.cmake — fold.h from C++. fold itself is C: the one C++ source is
# built only where a C++ compiler exists, so a machine without one still
# configures, builds and tests the library.
include(CheckLanguage)
check_language(CXX)
if(CMAKE_CXX_COMPILER)
  enable_language(CXX)
  add_executable(header_cxx_test ${FOLD_TEST_DIR}/cxx/header_cxx_test.cpp)
  set_target_properties(header_cxx_test PROPERTIES CXX_STANDARD 11 CXX_STANDARD_REQUIRED ON)
  target_link_libraries(header_cxx_test PRIVATE fold Threads::Threads)
  add_test(NAME header_cxx COMMAND header_cxx_test)
  set_tests_properties(header_cxx PROPERTIES TIMEOUT 60)
else()
  message(STATUS "fold: no C++ compiler, so the C++ header test (header_cxx) is skipped")
endif()

# ...and a machine without one configures: every C++ compiler hidden.
add_test(NAME build_nocxx COMMAND ${FOLD_TEST_DIR}/cxx/nocxx_test.sh ${CMAKE_SOURCE_DIR} ${CMAKE_C_COMPILER})
set_tests_properties(build_nocxx PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 LABELS nosan)
