# GPU tests (label gpu): every catalogue entry against the CPU reference (ew_ref, tests/ref.cmake),
# calls on streams and in CUDA graphs. With no GPU each prints "SKIP: <reason>" and exits 77.
# EW_TEST_SCALE=small shrinks them about tenfold for compute-sanitizer; EW_REQUIRE_GPU=1 makes a
# missing GPU a failure instead of a skip (for the GPU machine's script).
add_library(ew_gpu_util STATIC ${CMAKE_CURRENT_SOURCE_DIR}/gpu_util.c)
target_include_directories(ew_gpu_util PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(ew_gpu_util PUBLIC elementwise ew_ref ew_cmocka CUDA::cudart Threads::Threads m)
target_compile_options(ew_gpu_util PRIVATE -Wall -Wextra)

ew_add_test(test_kernels_gpu SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_kernels_gpu.c LIBS ew_gpu_util GPU)
ew_add_test(test_stream_graph_gpu SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_stream_graph_gpu.c
            LIBS ew_gpu_util GPU)
set_tests_properties(test_kernels_gpu test_stream_graph_gpu PROPERTIES TIMEOUT 600)
