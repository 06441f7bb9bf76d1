# SPDX-License-Identifier: Apache-2.0
# CPU tests (label cpu): run everywhere, no GPU needed. Included by tests/CMakeLists.txt.
find_package(Threads REQUIRED)

# The C ABI, the plan and the dispatch table, reached through the library's own objects (not the .so,
# which hides ewi_handle_make and the table).
set(EW_CPU_TEST_LIBS elementwise_objects CUDA::cudart_static Threads::Threads m)
ew_add_test(test_api SOURCES abi/test_api.c LIBS ${EW_CPU_TEST_LIBS})
ew_add_test(test_dispatch SOURCES catalogue/test_dispatch.c LIBS ${EW_CPU_TEST_LIBS})
ew_add_test(test_launch SOURCES launch/test_launch.c LIBS ${EW_CPU_TEST_LIBS})
ew_add_test(test_plan SOURCES plan/test_plan.c LIBS ${EW_CPU_TEST_LIBS})
ew_add_test(test_catalogue SOURCES catalogue/test_catalogue.c LIBS ${EW_CPU_TEST_LIBS})
ew_add_test(test_batched SOURCES plan/test_batched.c LIBS ${EW_CPU_TEST_LIBS})
set_target_properties(test_batched PROPERTIES LINKER_LANGUAGE CXX)
ew_add_test(test_layout SOURCES plan/test_layout.c LIBS ${EW_CPU_TEST_LIBS})
# Run-time compiled kernels through NVRTC, for sm_90, no GPU needed: skipped (77) where NVRTC cannot
# be loaded. Its longest test, every architecture, runs as a test of its own beside the rest (two
# cores: half the time); the third run points EW_NVRTC_LIBRARY at a missing file and checks the refusal.
ew_add_test(test_nvrtc SOURCES rtc/test_nvrtc.c LIBS ${EW_CPU_TEST_LIBS})
target_compile_definitions(test_nvrtc PRIVATE EW_SOURCE_SRC_DIR="${PROJECT_SOURCE_DIR}/src")
set_tests_properties(test_nvrtc PROPERTIES SKIP_RETURN_CODE 77)
# Under AddressSanitizer, LeakSanitizer's tracer crashes reading a dynamic-TLS entry that NVRTC's
# dlopen'ed libraries leave behind after some two hundred compiles ("DTLS 7 at 0x2c6d-..."): the
# leak check of this test reads no thread-local storage, and suppresses the one block that only
# thread-local storage holds.
if(EW_SANITIZE MATCHES "address")
  set_tests_properties(test_nvrtc PROPERTIES ENVIRONMENT
    "LSAN_OPTIONS=report_objects=1:use_tls=0:suppressions=${CMAKE_CURRENT_SOURCE_DIR}/rtc/lsan-nvrtc.supp")
endif()
add_test(NAME test_nvrtc_architectures COMMAND test_nvrtc architectures)
set_tests_properties(test_nvrtc_architectures PROPERTIES LABELS cpu SKIP_RETURN_CODE 77)
add_test(NAME test_nvrtc_missing COMMAND test_nvrtc missing)
set_tests_properties(test_nvrtc_missing PROPERTIES LABELS cpu)
target_compile_definitions(test_catalogue PRIVATE EW_PUBLIC_HEADER="${EW_GENERATED_INCLUDE_DIR}/elementwise.h")
# The objects hold C++ (the table) and CUDA host code: link with the C++ driver.
set_target_properties(test_api test_dispatch test_launch test_plan test_catalogue test_layout test_nvrtc PROPERTIES LINKER_LANGUAGE CXX)
# The on-disk cache of compiled kernels (src/rtc/kernel_cache.c), in fresh directories under $TMPDIR.
ew_add_test(test_kernel_cache SOURCES rtc/test_kernel_cache.c LIBS ${EW_CPU_TEST_LIBS})
set_target_properties(test_kernel_cache PROPERTIES LINKER_LANGUAGE CXX)

# ew_handle_create on a driver older than the runtime: a stub libcuda.so.1 (the test's own source)
# first on the loader's path, where the static runtime's dlopen finds it before any real driver.
add_library(ew_stub_driver SHARED abi/test_driver_version.c)
target_compile_definitions(ew_stub_driver PRIVATE EW_STUB_DRIVER)
set_target_properties(ew_stub_driver PROPERTIES OUTPUT_NAME cuda SOVERSION 1 C_VISIBILITY_PRESET hidden
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/stub_driver)
ew_add_test(test_driver_version SOURCES abi/test_driver_version.c LIBS ${EW_CPU_TEST_LIBS})
set_target_properties(test_driver_version PROPERTIES LINKER_LANGUAGE CXX)
add_dependencies(test_driver_version ew_stub_driver)
set_tests_properties(test_driver_version PROPERTIES
  ENVIRONMENT_MODIFICATION "LD_LIBRARY_PATH=path_list_prepend:$<TARGET_FILE_DIR:ew_stub_driver>")

# ---- the public header: compiled at test time, so a broken header fails a test ----
# No CUDA include path and none from the environment: the header must stand alone.
set(EW_NO_CUDA_ENV ${CMAKE_COMMAND} -E env --unset=CPATH --unset=C_INCLUDE_PATH --unset=CPLUS_INCLUDE_PATH)
set(EW_HEADER_DIR ${CMAKE_CURRENT_SOURCE_DIR}/header)
set(EW_HEADER_OUT ${CMAKE_CURRENT_BINARY_DIR}/header)
file(MAKE_DIRECTORY ${EW_HEADER_OUT})
set(EW_STRICT -pedantic -Wall -Wextra -Werror)

add_test(NAME header_c99
  COMMAND ${EW_NO_CUDA_ENV} ${CMAKE_C_COMPILER} -std=c99 ${EW_STRICT} -I${EW_GENERATED_INCLUDE_DIR}
          -c ${EW_HEADER_DIR}/header_strict.c -o ${EW_HEADER_OUT}/header_c99.o)
add_test(NAME header_cxx11
  COMMAND ${EW_NO_CUDA_ENV} ${CMAKE_CXX_COMPILER} -x c++ -std=c++11 ${EW_STRICT}
          -I${EW_GENERATED_INCLUDE_DIR} -c ${EW_HEADER_DIR}/header_strict.c
          -o ${EW_HEADER_OUT}/header_cxx11.o)

# ew_stream_t is cudaStream_t: compiled with the CUDA headers, as C11 and as C++11.
set(EW_CUDA_INCLUDES)
foreach(dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
  list(APPEND EW_CUDA_INCLUDES -I${dir})
endforeach()
add_test(NAME header_stream_is_cudastream_c11
  COMMAND ${CMAKE_C_COMPILER} -std=c11 ${EW_STRICT} -I${EW_GENERATED_INCLUDE_DIR} ${EW_CUDA_INCLUDES}
          -c ${EW_HEADER_DIR}/stream_identity.c -o ${EW_HEADER_OUT}/stream_c11.o)
add_test(NAME header_stream_is_cudastream_cxx11
  COMMAND ${CMAKE_CXX_COMPILER} -x c++ -std=c++11 ${EW_STRICT} -I${EW_GENERATED_INCLUDE_DIR}
          ${EW_CUDA_INCLUDES} -c ${EW_HEADER_DIR}/stream_identity.c -o ${EW_HEADER_OUT}/stream_cxx11.o)
# The identity check can fail: against another pointer type it must stop at its own assertion.
add_test(NAME header_stream_check_can_fail
  COMMAND ${CMAKE_C_COMPILER} -std=c11 ${EW_STRICT} -DEW_EXPECT_MISMATCH -I${EW_GENERATED_INCLUDE_DIR}
          ${EW_CUDA_INCLUDES} -c ${EW_HEADER_DIR}/stream_identity.c -o ${EW_HEADER_OUT}/stream_mismatch.o)
set_tests_properties(header_stream_check_can_fail PROPERTIES
  PASS_REGULAR_EXPRESSION "ew_stream_t is not cudaStream_t")

set_tests_properties(header_c99 header_cxx11 header_stream_is_cudastream_c11 header_stream_is_cudastream_cxx11
  header_stream_check_can_fail PROPERTIES LABELS cpu)
