# SPDX-License-Identifier: Apache-2.0
# Reliability (issue 4). CPU: the handle lifecycle (also run under ASan/LSan by scripts/ci/asan.sh).
# GPU: huge n, one handle shared by threads, graph replay, two GPUs, sticky errors, the pointer-check
# mode and per-call costs; one ctest entry per part so each runs, skips and times out on its own.

ew_add_test(test_lifecycle SOURCES abi/test_lifecycle.c
  LIBS elementwise_objects CUDA::cudart_static Threads::Threads)
# The internal ewi_handle_make lives in the objects; the nvcc-compiled ones need the C++ runtime.
set_target_properties(test_lifecycle PROPERTIES LINKER_LANGUAGE CXX)

# Device helpers of the GPU tests: fill, whole-output checksum, a faulting and a spinning kernel.
add_library(ew_reliability_kernels STATIC checksum.cu)
target_include_directories(ew_reliability_kernels PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
set_target_properties(ew_reliability_kernels PROPERTIES CUDA_RUNTIME_LIBRARY Shared)

add_executable(test_reliability_gpu abi/test_reliability_gpu.c ref/ref.c)
target_include_directories(test_reliability_gpu PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
  ${PROJECT_SOURCE_DIR}/src) # src/abi/registry.h alone, header-only
target_link_libraries(test_reliability_gpu PRIVATE
  ew_cmocka elementwise ew_reliability_kernels CUDA::cudart Threads::Threads m)
target_compile_options(test_reliability_gpu PRIVATE -Wall -Wextra)
# ENABLE_EXPORTS: the test's malloc family must be in the dynamic symbol table so that the library,
# cudart and the driver allocate through it (the no_hidden_costs part counts allocations).
set_target_properties(test_reliability_gpu PROPERTIES
  ENABLE_EXPORTS ON CUDA_RUNTIME_LIBRARY Shared LINKER_LANGUAGE CXX)

set(EW_RELIABILITY_GPU_PARTS
  huge_add_u8 huge_cast_i8_f16 concurrency graph_replay two_gpus sticky_errors pointer_check no_hidden_costs
  recycled_values)
foreach(part IN LISTS EW_RELIABILITY_GPU_PARTS)
  add_test(NAME reliability_gpu.${part} COMMAND test_reliability_gpu ${part})
  set_tests_properties(reliability_gpu.${part} PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600)
endforeach()
# Labels to leave out of compute-sanitizer runs (scripts/gpu-check: -LE 'huge|faults|costs|twogpu'):
# huge: 4 GiB buffers; faults: the part faults the context on purpose (in a child process);
# costs: counts device memory and host allocations, which the tool's own would spoil (the part also
# skips by itself when it sees a CUDA tool injected into the process).
set_tests_properties(reliability_gpu.huge_add_u8 reliability_gpu.huge_cast_i8_f16
  PROPERTIES LABELS "gpu;huge")
set_tests_properties(reliability_gpu.sticky_errors PROPERTIES LABELS "gpu;faults")
# twogpu: needs two GPUs and skips, visibly, on one (left out of compute-sanitizer, where a skip fails).
set_tests_properties(reliability_gpu.two_gpus PROPERTIES LABELS "gpu;twogpu")
# RUN_SERIAL: the part compares the device's free memory around its calls; a test beside it
# (ctest -j) would allocate in between.
set_tests_properties(reliability_gpu.no_hidden_costs PROPERTIES LABELS "gpu;costs" RUN_SERIAL TRUE)
