/* SPDX-License-Identifier: Apache-2.0 */
/* Device helpers of the benchmark, written in CUDA C++ (bench/raw_kernel.cu) behind a C interface,
 * because C cannot define kernels: the random fill of the input pools, a raw kernel whose launch
 * cost is the floor the host-overhead mode compares against, and the kernel that holds a stream while
 * the host queues an isolated batch. */
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

/* Queue on stream a read of `bytes` at src (a multiple of 16, 16-byte aligned) in 16-byte loads, one
 * word per block written to sink (at least the grid's blocks words): the GPU's read bandwidth, which an
 * amax that reads its input once can reach at best. Returns the launch's error. */
cudaError_t ewb_raw_read(const void *src, size_t bytes, unsigned *sink, int blocks, cudaStream_t stream);

/* Queue on stream one single-thread kernel that returns once ns nanoseconds of the GPU's global timer
 * have passed since it started: nothing queued after it on that stream starts earlier, so the host can
 * queue a whole batch before the GPU runs any of it. Returns the launch's error. */
cudaError_t ewb_hold_back(uint64_t ns, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
