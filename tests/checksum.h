/* SPDX-License-Identifier: Apache-2.0 */
/* Test helpers on the device for the reliability tests, independent of the library's kernels:
 * a hash fill for inputs too large to upload, a position-weighted checksum of a whole output,
 * a kernel that faults the context on purpose, and a kernel that keeps a stream busy.
 * The same inline formulas below run on the host (expected values) and on the device (fill). */
#ifndef EW_TEST_CHECKSUM_H
#define EW_TEST_CHECKSUM_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __CUDACC__
#define EWT_HOST_DEVICE __host__ __device__
#else
#define EWT_HOST_DEVICE
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Byte i of the pseudo-random stream named by seed: two multiply-xorshift rounds, so neighbouring
 * indices and neighbouring seeds give unrelated bytes. */
static inline EWT_HOST_DEVICE uint8_t ewt_hash_byte(uint64_t seed, uint64_t i)
{
    uint64_t x = (i ^ (seed * 0xA0761D6478BD642Full)) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 32;
    x *= 0xD6E8FEB86659FD93ull;
    x ^= x >> 29;
    return (uint8_t)(x >> 56);
}

/* Weight of element i in a checksum: odd, so a change of one element by less than 2^63 always
 * changes the sum, and position-dependent, so two swapped elements change it too. */
static inline EWT_HOST_DEVICE uint64_t ewt_checksum_weight(uint64_t i) { return 2 * i + 1; }

/* p[i] = ewt_hash_byte(seed, i) for i in [0, n), queued on stream. */
cudaError_t ewt_fill_hash_bytes(void *p, uint64_t n, uint64_t seed, cudaStream_t stream);

/* *result = sum over i < n of element[i] * ewt_checksum_weight(i) modulo 2^64, where the elements
 * are n unsigned integers of element_size bytes (1 or 2) at p. Synchronous: waits for stream. */
cudaError_t ewt_checksum(const void *p, uint64_t n, int element_size, uint64_t *result, cudaStream_t stream);

/* A kernel that writes to an address no allocation can hold, which faults the context
 * (cudaErrorIllegalAddress, sticky). Returns the launch status; the fault shows at the next sync. */
cudaError_t ewt_launch_faulting_kernel(cudaStream_t stream);

/* A single-thread kernel that spins for about the given time, to keep a stream busy. */
cudaError_t ewt_launch_spin_kernel(uint64_t nanoseconds, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
