// SPDX-License-Identifier: Apache-2.0
// Reductions over a launch into one device scalar (the amax of the scaled casts). A functor that
// reduces has a `mutable` member `reduction`, into which it folds each element as it computes it;
// each kernel runs such a functor as a copy per thread (reducing()) and ends with the block's
// values combined through warp shuffles and shared memory, then one atomic per block into the
// scalar. Whether the scalar starts from zero is the launch's (src/launch/launch.h: ew_launch_t's
// reset), so a reduction overwrites or accumulates by the same kernel. NVRTC compiles it too.
#pragma once

#include "device/ew_ops.cuh"

namespace ew {

// max |v| over floats into a float in device memory. The key is |v|'s bits, whose order as
// unsigned integers is the order of the values, NaN above infinity: max is exact and the same in
// any order. Committed as a signed integer max, so that any old value with its sign bit set counts
// as below every result, and a NaN as the canonical 0x7FC00000.
struct AbsMax {
    float *target; // NULL: nothing is written
    uint32_t key;  // the fold so far; 0 is +0.0, the identity

    __device__ __forceinline__ void fold(float v) { key = max(key, __float_as_uint(v) & 0x7FFFFFFFu); }
    __device__ __forceinline__ static uint32_t combine(uint32_t a, uint32_t b) { return max(a, b); }
    __device__ __forceinline__ void commit(uint32_t block_key) const
    {
        const uint32_t canonical = block_key > 0x7F800000u ? 0x7FC00000u : block_key;
        atomicMax(reinterpret_cast<int *>(target), static_cast<int>(canonical));
    }
};

template <typename F, typename = void> inline constexpr bool kReduces = false;
template <typename F> inline constexpr bool kReduces<F, typename VoidOf<decltype(F::reduction)>::Type> = true;

// The block's keys combined, then one commit by thread 0. Every thread of the block calls it once,
// after its last element.
template <typename R> __device__ __forceinline__ void finish_block(const R &reduction)
{
    __shared__ uint32_t warp_keys[32];
    uint32_t key = reduction.key;
#pragma unroll
    for (int lane = 16; lane > 0; lane /= 2)
        key = R::combine(key, __shfl_xor_sync(0xFFFFFFFFu, key, lane));
    const unsigned warps = (blockDim.x + 31) / 32;
    if (threadIdx.x % 32 == 0)
        warp_keys[threadIdx.x / 32] = key;
    __syncthreads();
    if (threadIdx.x == 0 && reduction.target != nullptr) {
        for (unsigned w = 1; w < warps; ++w)
            key = R::combine(key, warp_keys[w]);
        reduction.commit(key);
    }
}

// A kernel's body on f: as it is, or, for a functor that reduces, on a copy per thread whose fold
// the block then commits.
template <typename F, typename Body> __device__ __forceinline__ void reducing(const F &f, Body body)
{
    if constexpr (kReduces<F>) {
        F g = f;
        body(g);
        finish_block(g.reduction);
    } else {
        body(f);
    }
}

// F writes out: every op but those whose result is their reduction alone (Out is NoInput).
template <typename F> inline constexpr bool kWritesOut = !kSame<typename F::Out, NoInput>;

} // namespace ew
