/* Device helpers of the benchmark, written in CUDA C++ (bench/raw_kernel.cu) behind a C interface,
 * because C cannot define kernels: the random fill of the input pools and a raw kernel whose launch
 * cost is the floor the host-overhead mode compares against. */
#ifndef EWB_RAW_KERNEL_H
#define EWB_RAW_KERNEL_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fill count elements of dtype (an ew_dtype_t value) at dst with random values that are never zero:
 * magnitudes in [1, 100) with random signs, converted to the dtype (integers truncate, so they stay
 * in +-[1, 99]; u8 keeps the low byte of that; bool gets random bytes in [1, 255]). Deterministic for a
 * seed. Queued on stream; returns the launch's error. */
cudaError_t ewb_fill_random(void *dst, int dtype, int64_t count, uint64_t seed, cudaStream_t stream);

/* The kernel void raw_add_f32(float *out, const float *a, const float *b, int64_t n): one element
 * per thread, no grid-stride loop, nothing else. For cudaLaunchKernel from C. */
const void *ewb_raw_add_f32_kernel(void);

#ifdef __cplusplus
}
#endif

#endif
