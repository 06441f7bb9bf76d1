# SPDX-License-Identifier: Apache-2.0
# EW_SANITIZE: a -fsanitize list (e.g. "address,undefined") applied to the C host code: the
# library's C files, every C test and the fuzzer (the asan and fuzz presets set it). nvcc-compiled
# objects are left alone (the device side has compute-sanitizer). Included by CMakeLists.txt after
# project() and before the first add_library/add_executable, because add_compile_options only
# reaches targets created after it.
include_guard(GLOBAL)
set(EW_SANITIZE "" CACHE STRING "Sanitizers for the C host code, e.g. address,undefined (empty: none)")

if(EW_SANITIZE)
  if(NOT EW_SANITIZE MATCHES "^[a-z,]+$")
    message(FATAL_ERROR "EW_SANITIZE='${EW_SANITIZE}': expected a list such as address,undefined")
  endif()
  message(STATUS "elementwise: C host code built with -fsanitize=${EW_SANITIZE}")
  # Every report is fatal, so a test cannot pass with a report in its log; frame pointers for readable stacks.
  add_compile_options(
    "$<$<COMPILE_LANGUAGE:C>:-fsanitize=${EW_SANITIZE};-fno-sanitize-recover=all;-fno-omit-frame-pointer;-g>")
  # Whatever links sanitized C objects needs the runtimes. The shared library links as CXX; test
  # executables link as C, or as CUDA where they hold .cu code (CMake then links through the host
  # compiler, which takes the same flag).
  add_link_options("$<$<LINK_LANGUAGE:C,CXX,CUDA>:-fsanitize=${EW_SANITIZE}>")
endif()
