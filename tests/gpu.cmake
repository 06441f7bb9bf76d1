# SPDX-License-Identifier: Apache-2.0
# GPU tests (label gpu): every catalogue entry against the CPU reference (ew_ref, tests/ref.cmake),
# calls on streams and in CUDA graphs. With no GPU each prints "SKIP: <reason>" and exits 77.
# EW_TEST_SCALE=small shrinks them about tenfold for compute-sanitizer; EW_REQUIRE_GPU=1 makes a
# missing GPU a failure instead of a skip (for the GPU machine's script).
add_library(ew_gpu_util STATIC ${CMAKE_CURRENT_SOURCE_DIR}/gpu_util.c)
target_include_directories(ew_gpu_util PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(ew_gpu_util PUBLIC elementwise ew_ref ew_cmocka CUDA::cudart Threads::Threads m)
target_compile_options(ew_gpu_util PRIVATE -Wall -Wextra)
# Its skip rule, on the CPU: a partly skipped run exits 77; EW_REQUIRE_GPU fails all but the allow-list.
ew_add_test(test_gpu_util SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_util.c LIBS ew_gpu_util)

ew_add_test(test_catalogue_gpu SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/device/test_catalogue_gpu.c LIBS ew_gpu_util GPU)
ew_add_test(test_stream_graph_gpu SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/abi/test_stream_graph_gpu.c
            LIBS ew_gpu_util GPU)
set_tests_properties(test_catalogue_gpu test_stream_graph_gpu PROPERTIES TIMEOUT 600)
# The strided calls: random layouts, each kernel at its boundaries, a call past 2^32 elements.
ew_add_test(test_strided_gpu SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/device/test_strided_gpu.c LIBS ew_gpu_util GPU)
set_tests_properties(test_strided_gpu PROPERTIES TIMEOUT 600)
# And with no bulk copies: the rows kernel's threads load every input (as GPUs before cc 9.0 run it).
add_test(NAME test_strided_gpu_direct COMMAND test_strided_gpu)
set_tests_properties(test_strided_gpu_direct PROPERTIES ENVIRONMENT "EW_BULK_COPY=0" LABELS "gpu;direct"
                                                     SKIP_RETURN_CODE 77 TIMEOUT 600)

# The scaled casts (quantize, dequantize, amax), and again with the bulk-copy kernel at every n in
# small tiles and with the direct kernel alone.
ew_add_test(test_scaled_gpu SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/device/test_scaled_gpu.c LIBS ew_gpu_util GPU)
add_test(NAME test_scaled_gpu_bulk COMMAND test_scaled_gpu)
add_test(NAME test_scaled_gpu_direct COMMAND test_scaled_gpu)
set_tests_properties(test_scaled_gpu_bulk PROPERTIES ENVIRONMENT "EW_BULK_COPY=always;EW_BULK_TILE_BYTES=1024"
                     LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600)
set_tests_properties(test_scaled_gpu_direct PROPERTIES ENVIRONMENT "EW_BULK_COPY=0" LABELS "gpu;direct"
                     SKIP_RETURN_CODE 77 TIMEOUT 600)
set_tests_properties(test_scaled_gpu PROPERTIES TIMEOUT 600)

# The block-scaled casts (MX, NVFP4): every format and dtype pair, both scale rules and layouts, the
# global scale NULL and in device memory, a graph. Their kernels are their own (src/device/blocks.cuh),
# untouched by EW_BULK_COPY: no _bulk or _direct run; their offsets take both the vector and the
# element path.
ew_add_test(test_blocks_gpu SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/device/test_blocks_gpu.c LIBS ew_gpu_util GPU)
set_tests_properties(test_blocks_gpu PROPERTIES TIMEOUT 600)

# User-defined kernels (NVRTC at run time): chains against catalogue calls, every offset, the caches;
# again with the bulk-copy kernel at every n in small tiles (cc >= 9.0; elsewhere a repeat), one to four
# inputs staged, and with the direct kernel alone.
ew_add_test(test_user_kernel_gpu SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/rtc/test_user_kernel_gpu.c LIBS ew_gpu_util GPU)
add_test(NAME test_user_kernel_gpu_bulk COMMAND test_user_kernel_gpu)
add_test(NAME test_user_kernel_gpu_direct COMMAND test_user_kernel_gpu)
# The largest tiles too: 1-byte kernels, of fewer blocks an SM, take them larger still up to the cap.
add_test(NAME test_user_kernel_gpu_bulk_large COMMAND test_user_kernel_gpu)
set_tests_properties(test_user_kernel_gpu_bulk PROPERTIES ENVIRONMENT "EW_BULK_COPY=always;EW_BULK_TILE_BYTES=1024")
set_tests_properties(test_user_kernel_gpu_bulk_large PROPERTIES ENVIRONMENT "EW_BULK_COPY=always;EW_BULK_TILE_BYTES=32768")
set_tests_properties(test_user_kernel_gpu_direct PROPERTIES ENVIRONMENT "EW_BULK_COPY=0")
set_tests_properties(test_user_kernel_gpu PROPERTIES TIMEOUT 600)
set_tests_properties(test_user_kernel_gpu_bulk test_user_kernel_gpu_bulk_large PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600)
set_tests_properties(test_user_kernel_gpu_direct PROPERTIES LABELS "gpu;direct" SKIP_RETURN_CODE 77 TIMEOUT 600)

# Tensor lists (src/plan/batched.h), and again with the 4 KiB kernel alone (as drivers before CUDA 12.1 run).
ew_add_test(test_batched_gpu SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/device/test_batched_gpu.c LIBS ew_gpu_util GPU)
target_include_directories(test_batched_gpu PRIVATE ${PROJECT_SOURCE_DIR}/src)
add_test(NAME test_batched_gpu_small_params COMMAND test_batched_gpu)
set_tests_properties(test_batched_gpu_small_params PROPERTIES ENVIRONMENT "EW_BATCHED_PARAMS=4096" LABELS gpu
                     SKIP_RETURN_CODE 77)
set_tests_properties(test_batched_gpu test_batched_gpu_small_params PROPERTIES TIMEOUT 600)

# The same checks with the kernel forced: the bulk-copy kernel at every n, with small tiles so the
# sweeps cross several of them (cc >= 9.0; elsewhere this repeats the default run), and the direct
# kernels at every n. The default run takes whichever the plan picks for each n.
add_test(NAME test_catalogue_gpu_bulk COMMAND test_catalogue_gpu)
add_test(NAME test_catalogue_gpu_direct COMMAND test_catalogue_gpu)
set_tests_properties(test_catalogue_gpu_bulk PROPERTIES ENVIRONMENT "EW_BULK_COPY=always;EW_BULK_TILE_BYTES=1024")
set_tests_properties(test_catalogue_gpu_direct PROPERTIES ENVIRONMENT "EW_BULK_COPY=0")
set_tests_properties(test_catalogue_gpu_bulk PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600)
# Label direct: left out of compute-sanitizer, where the default run's small sizes take the direct
# kernels already.
set_tests_properties(test_catalogue_gpu_direct PROPERTIES LABELS "gpu;direct" SKIP_RETURN_CODE 77 TIMEOUT 600)

# Calls on streams and in graphs launched in plain stream order too (the default on cc >= 9.0 is a
# programmatic dependent launch; elsewhere this repeats the default run).
add_test(NAME test_stream_graph_gpu_plain COMMAND test_stream_graph_gpu)
set_tests_properties(test_stream_graph_gpu_plain PROPERTIES ENVIRONMENT "EW_DEPENDENT_LAUNCH=0" LABELS gpu
                     SKIP_RETURN_CODE 77 TIMEOUT 600)

# The device-mismatch test alone: it needs two GPUs and skips, visibly, on one.
add_test(NAME test_stream_graph_gpu.device_mismatch COMMAND test_stream_graph_gpu test_device_mismatch)
set_tests_properties(test_stream_graph_gpu.device_mismatch PROPERTIES LABELS "gpu;twogpu" SKIP_RETURN_CODE 77
                     TIMEOUT 600)
# The edge-value table is read from the document itself.
target_compile_definitions(test_catalogue_gpu PRIVATE EW_SEMANTICS_MD="${PROJECT_SOURCE_DIR}/docs/semantics.md")
# The disk cache's own code, to plant entries the driver refuses; that test runs only when named
# (faults: compute-sanitizer reports the refused module load).
target_sources(test_user_kernel_gpu PRIVATE ${PROJECT_SOURCE_DIR}/src/rtc/kernel_cache.c)
target_include_directories(test_user_kernel_gpu PRIVATE ${PROJECT_SOURCE_DIR}/src)
add_test(NAME test_user_kernel_gpu.rejected_cubin COMMAND test_user_kernel_gpu rejected_cubin_recompiled)
set_tests_properties(test_user_kernel_gpu.rejected_cubin PROPERTIES LABELS "gpu;faults" SKIP_RETURN_CODE 77 TIMEOUT 600)
# Past 2^31 output elements, checked whole by the device checksum (tests/checksum.cu): named only.
target_link_libraries(test_strided_gpu PRIVATE ew_reliability_kernels)
add_test(NAME test_strided_gpu.broadcast_past_2_31 COMMAND test_strided_gpu test_broadcast_past_2_31)
set_tests_properties(test_strided_gpu.broadcast_past_2_31 PROPERTIES LABELS "gpu;huge" SKIP_RETURN_CODE 77 TIMEOUT 600)
# List entries past 2^30 elements (the slicing path), checked whole by the device checksum: named only.
target_link_libraries(test_batched_gpu PRIVATE ew_reliability_kernels)
add_test(NAME test_batched_gpu.entries_past_2_30 COMMAND test_batched_gpu test_entries_past_2_30)
set_tests_properties(test_batched_gpu.entries_past_2_30 PROPERTIES LABELS "gpu;huge" SKIP_RETURN_CODE 77 TIMEOUT 600)
