// SPDX-License-Identifier: Apache-2.0
// The benchmark's device helpers (see raw_kernel.h). CUDA C++ because C cannot define kernels.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "elementwise.h"
#include "raw_kernel.h"

namespace
{

__device__ __forceinline__ uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// One branch per dtype, uniform across the grid: the fill runs once per pool, not per timed call.
__global__ void fill_random(void *dst, int dtype, int64_t count, uint64_t seed)
{
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        const uint64_t h = splitmix64(seed ^ splitmix64(static_cast<uint64_t>(i)));
        const double unit = static_cast<double>(h >> 11) * 0x1p-53;      // [0, 1)
        const double value = (h & 1 ? -1.0 : 1.0) * (1.0 + 99.0 * unit); // +-[1, 100)
        const int whole = static_cast<int>(value);                       // +-[1, 99]
        const float single = static_cast<float>(value);
        switch (dtype) {
        case EW_BOOL: static_cast<uint8_t *>(dst)[i] = static_cast<uint8_t>(1 + (h >> 8) % 255); break;
        case EW_I8: static_cast<int8_t *>(dst)[i] = static_cast<int8_t>(whole); break;
        case EW_U8: static_cast<uint8_t *>(dst)[i] = static_cast<uint8_t>(whole); break;
        case EW_I16: static_cast<int16_t *>(dst)[i] = static_cast<int16_t>(whole); break;
        case EW_I32: static_cast<int32_t *>(dst)[i] = whole; break;
        case EW_I64: static_cast<int64_t *>(dst)[i] = whole; break;
        case EW_F16: static_cast<__half *>(dst)[i] = __float2half_rn(single); break;
        case EW_BF16: static_cast<__nv_bfloat16 *>(dst)[i] = __float2bfloat16_rn(single); break;
        case EW_F32: static_cast<float *>(dst)[i] = single; break;
        case EW_F64: static_cast<double *>(dst)[i] = value; break;
        case EW_F8E4M3:
            static_cast<uint8_t *>(dst)[i] = __nv_cvt_float_to_fp8(single, __NV_SATFINITE, __NV_E4M3);
            break;
        case EW_F8E5M2:
            static_cast<uint8_t *>(dst)[i] = __nv_cvt_float_to_fp8(single, __NV_SATFINITE, __NV_E5M2);
            break;
        default: break;
        }
    }
}

__global__ void raw_add_f32(float *out, const float *a, const float *b, int64_t n)
{
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a[i] + b[i];
}

__device__ __forceinline__ uint64_t global_timer_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// One thread, sleeping between reads of the global timer: it holds the stream without loading the GPU.
__global__ void hold_back(uint64_t ns)
{
    const uint64_t start = global_timer_ns();
    while (global_timer_ns() - start < ns) {
#if __CUDA_ARCH__ >= 700
        __nanosleep(2000);
#endif
    }
}

} // namespace

namespace
{
// Every word read and folded, so no load can be dropped; one store a block.
__global__ void raw_read(const uint4 *src, size_t count, unsigned *sink)
{
    unsigned folded = 0;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        const uint4 v = __ldg(src + i);
        folded ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    for (int lane = 16; lane > 0; lane /= 2)
        folded ^= __shfl_xor_sync(0xFFFFFFFFu, folded, lane);
    if (threadIdx.x == 0)
        sink[blockIdx.x] = folded;
}
} // namespace

extern "C" cudaError_t ewb_raw_read(const void *src, size_t bytes, unsigned *sink, int blocks, cudaStream_t stream)
{
    raw_read<<<blocks, 512, 0, stream>>>(static_cast<const uint4 *>(src), bytes / 16, sink);
    return cudaGetLastError();
}

extern "C" cudaError_t ewb_hold_back(uint64_t ns, cudaStream_t stream)
{
    hold_back<<<1, 1, 0, stream>>>(ns);
    return cudaGetLastError();
}

extern "C" cudaError_t ewb_fill_random(void *dst, int dtype, int64_t count, uint64_t seed,
                                       cudaStream_t stream)
{
    if (count <= 0)
        return cudaSuccess;
    const int64_t wanted = (count + 255) / 256;
    const unsigned blocks = static_cast<unsigned>(wanted < 16384 ? wanted : 16384);
    fill_random<<<blocks, 256, 0, stream>>>(dst, dtype, count, seed);
    return cudaGetLastError();
}

extern "C" const void *ewb_raw_add_f32_kernel(void) { return reinterpret_cast<const void *>(&raw_add_f32); }
