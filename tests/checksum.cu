// SPDX-License-Identifier: Apache-2.0
// Device helpers for the reliability tests (see checksum.h). Written apart from src/ on purpose:
// these kernels check the library's output, so they share nothing with its kernels.
#include <cuda_runtime.h>

#include "checksum.h"

namespace
{

constexpr int kThreads = 256;

__global__ void fill_hash_bytes(uint8_t *p, uint64_t n, uint64_t seed)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = ewt_hash_byte(seed, i);
}

template <typename T> __global__ void weighted_sum(const T *p, uint64_t n, unsigned long long *result)
{
    __shared__ unsigned long long partial[kThreads];
    unsigned long long sum = 0;
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        sum += (unsigned long long)p[i] * ewt_checksum_weight(i);
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(result, partial[0]); // addition modulo 2^64 commutes, so block order does not matter
}

__global__ void write_to_unmapped_address(int *unmapped) { *unmapped = 0x5EED; }

__device__ uint64_t global_nanoseconds()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void spin(uint64_t nanoseconds)
{
    uint64_t start = global_nanoseconds();
    while (global_nanoseconds() - start < nanoseconds) {
    }
}

unsigned grid_for(uint64_t n)
{
    uint64_t blocks = (n + kThreads - 1) / kThreads;
    return (unsigned)(blocks < 8192 ? (blocks ? blocks : 1) : 8192);
}

} // namespace

extern "C" cudaError_t ewt_fill_hash_bytes(void *p, uint64_t n, uint64_t seed, cudaStream_t stream)
{
    fill_hash_bytes<<<grid_for(n), kThreads, 0, stream>>>(static_cast<uint8_t *>(p), n, seed);
    return cudaGetLastError();
}

extern "C" cudaError_t ewt_checksum(const void *p, uint64_t n, int element_size, uint64_t *result,
                                    cudaStream_t stream)
{
    if (element_size != 1 && element_size != 2)
        return cudaErrorInvalidValue;
    unsigned long long *device_sum = nullptr;
    cudaError_t error = cudaMalloc(&device_sum, sizeof *device_sum);
    if (error != cudaSuccess)
        return error;
    unsigned long long host_sum = 0;
    error = cudaMemsetAsync(device_sum, 0, sizeof *device_sum, stream);
    if (error == cudaSuccess) {
        if (element_size == 1)
            weighted_sum<<<grid_for(n), kThreads, 0, stream>>>(static_cast<const uint8_t *>(p), n,
                                                               device_sum);
        else
            weighted_sum<<<grid_for(n), kThreads, 0, stream>>>(static_cast<const uint16_t *>(p), n,
                                                               device_sum);
        error = cudaGetLastError();
    }
    if (error == cudaSuccess)
        error = cudaMemcpyAsync(&host_sum, device_sum, sizeof host_sum, cudaMemcpyDeviceToHost, stream);
    if (error == cudaSuccess)
        error = cudaStreamSynchronize(stream);
    cudaFree(device_sum);
    *result = host_sum;
    return error;
}

extern "C" cudaError_t ewt_launch_faulting_kernel(cudaStream_t stream)
{
    // The first page of the address space is never mapped, on the device as on the host. The address
    // arrives as a parameter so the compiler cannot see a null store and turn it into a trap.
    int *unmapped = reinterpret_cast<int *>(uintptr_t{16});
    write_to_unmapped_address<<<1, 1, 0, stream>>>(unmapped);
    return cudaGetLastError();
}

extern "C" cudaError_t ewt_launch_spin_kernel(uint64_t nanoseconds, cudaStream_t stream)
{
    spin<<<1, 1, 0, stream>>>(nanoseconds);
    return cudaGetLastError();
}
