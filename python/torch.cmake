# python/torch.cmake — the torch.distributed backend "fold": the C++ extension fold._fold_torch (a
# c10d::ProcessGroup, python/fold/csrc/process_group*.cpp) and fold/torch.py. Built when Debian's libtorch-dev
# (headers, libtorch*.so) and python3-torch (libtorch_python.so) are found; included from python/CMakeLists.txt
# after the package's own targets (it needs Python3 and FOLD_PY_OUT).
option(FOLD_BUILD_TORCH "Build the torch.distributed backend (needs libtorch-dev and python3-torch)" ON)
if(NOT FOLD_BUILD_TORCH)
  return()
endif()
execute_process(COMMAND ${Python3_EXECUTABLE} -c
  "import os, torch; print(os.path.dirname(torch.__file__), end=';'); print(int(torch._C._GLIBCXX_USE_CXX11_ABI), end='')"
  OUTPUT_VARIABLE _fold_torch_info RESULT_VARIABLE _rc ERROR_QUIET)
find_path(FOLD_TORCH_INCLUDE torch/csrc/distributed/c10d/ProcessGroup.hpp PATHS /usr/include)
find_library(FOLD_LIBTORCH torch)
find_library(FOLD_LIBTORCH_CPU torch_cpu)
find_library(FOLD_LIBC10 c10)
if(NOT _rc EQUAL 0 OR NOT FOLD_TORCH_INCLUDE OR NOT FOLD_LIBTORCH OR NOT FOLD_LIBTORCH_CPU OR NOT FOLD_LIBC10)
  message(STATUS "fold: torch or its C++ headers not found (Debian: apt-get install python3-torch libtorch-dev "
                 "pybind11-dev): the torch.distributed backend is not built")
  return()
endif()
list(GET _fold_torch_info 0 _fold_torch_dir)
list(GET _fold_torch_info 1 _fold_torch_abi)
find_library(FOLD_LIBTORCH_PYTHON torch_python PATHS ${_fold_torch_dir}/lib NO_DEFAULT_PATH)
if(NOT FOLD_LIBTORCH_PYTHON)
  message(STATUS "fold: libtorch_python.so not found in ${_fold_torch_dir}/lib: the torch backend is not built")
  return()
endif()
# fold is C: where no C++ compiler exists the backend is skipped, not the configure (tests/cxx: build_nocxx).
include(CheckLanguage)
check_language(CXX)
if(NOT CMAKE_CXX_COMPILER)
  message(STATUS "fold: no C++ compiler: the torch.distributed backend is not built")
  return()
endif()
enable_language(CXX)
message(STATUS "fold: torch.distributed backend against ${_fold_torch_dir} (_GLIBCXX_USE_CXX11_ABI=${_fold_torch_abi})")

# process_group.cpp: the group's lifecycle and worker; process_group_ops.cpp: its operations (process_group.h).
Python3_add_library(fold_torch MODULE WITH_SOABI ${CMAKE_CURRENT_SOURCE_DIR}/fold/csrc/process_group.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/fold/csrc/process_group_ops.cpp)
set_target_properties(fold_torch PROPERTIES OUTPUT_NAME _fold_torch LIBRARY_OUTPUT_DIRECTORY ${FOLD_PY_OUT}
  CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_VISIBILITY_PRESET hidden)
# torch's headers are system headers: their warnings are not ours (FOLD_WERROR).
target_include_directories(fold_torch SYSTEM PRIVATE ${FOLD_TORCH_INCLUDE} ${FOLD_TORCH_INCLUDE}/torch/csrc/api/include)
target_compile_definitions(fold_torch PRIVATE _GLIBCXX_USE_CXX11_ABI=${_fold_torch_abi}
  TORCH_EXTENSION_NAME=_fold_torch TORCH_API_INCLUDE_EXTENSION_H)
# -Wextra's unused-parameter would flag torch's overridden signatures; the rest of the warnings stay.
target_compile_options(fold_torch PRIVATE -Wno-unused-parameter)
target_link_libraries(fold_torch PRIVATE fold ${FOLD_LIBTORCH_PYTHON} ${FOLD_LIBTORCH} ${FOLD_LIBTORCH_CPU} ${FOLD_LIBC10})
add_dependencies(fold_torch fold_python_files)
set_target_properties(fold_torch PROPERTIES INSTALL_RPATH "${_fold_py_rpath}" BUILD_WITH_INSTALL_RPATH ${FOLD_PYTHON_WHEEL})
install(TARGETS fold_torch LIBRARY DESTINATION ${FOLD_PYTHON_INSTALL_DIR}/fold)
