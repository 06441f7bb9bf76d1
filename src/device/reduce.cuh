// SPDX-License-Identifier: Apache-2.0
// Reductions over a launch into one device scalar (the amax of the scaled casts, a user kernel's
// reduction output). A functor that
// reduces has a `mutable` member `reduction`, into which it folds each element as it computes it;
// each kernel runs such a functor as a copy per thread (reducing()) and ends with the block's
// values combined through warp shuffles and shared memory, then one atomic per block into the
// scalar. Whether the scalar starts from zero is the launch's (src/launch/launch.h: ew_launch_t's
// reset), so a reduction overwrites or accumulates by the same kernel. NVRTC compiles it too.
#pragma once

#include "device/ew_ops.cuh"

namespace ew {

// What a reduction computes over the values folded into it: max |v|, max v, min v or the sum.
// Numbered as ew_reduce_op_t (include/elementwise.h).
enum class ReduceOp { AbsMax = 1, Max = 2, Min = 3, Sum = 4 };

// The unsigned integer of T's bits.
template <typename T> using BitsOf = Conditional<sizeof(T) == 8, unsigned long long, uint32_t>;

// A reduction of values of T (float or double) into a T in device memory, folded per thread into a
// key whose combination is exact and the same in any order but for the sum's. Max and min keep keys
// in the values' order (the bits, their order flipped for negatives; flipped again for min), NaN
// above every other key: the result is NaN if any value is; AbsMax keeps |v|'s bits, whose order as
// integers is the order of the values, NaN above infinity. Key 0 is the identity of all three (no
// value has it); the sum's key is the sum. Committed to target with an atomic on the value's bits:
// AbsMax a signed integer max (an old value with its sign bit set counts as below every result; NaN
// as the canonical positive quiet NaN); max and min a signed max (min) on values with the sign bit
// clear and an unsigned min (max) on the others, which orders any old float value with the new one
// (NaN the canonical quiet NaN, positive for max, negative for min, so that it wins).
template <ReduceOp Op, typename T> struct Reduce {
    static_assert(kSame<T, float> || kSame<T, double>);
    using Value = T;
    using Bits = BitsOf<T>;
    using Key = Conditional<Op == ReduceOp::Sum, T, Bits>;
    static constexpr Bits kSign = Bits(1) << (8 * sizeof(T) - 1);
    static constexpr Bits kInfinity = kSame<T, float> ? Bits(0x7F800000u) : Bits(0x7FF0000000000000ull);
    static constexpr Bits kQuietNan = kSame<T, float> ? Bits(0x7FC00000u) : Bits(0x7FF8000000000000ull);

    T *target; // NULL: nothing is written
    Key key;   // the fold so far; 0 is the identity

    __device__ __forceinline__ static Bits bits(T v) { return bits_as<Bits>(v); }
    __device__ __forceinline__ static bool is_nan(Bits b) { return (b & ~kSign) > kInfinity; }
    // v's place in the order of values: the bits, flipped for negatives so that they count down
    __device__ __forceinline__ static Bits ordered(Bits b) { return b & kSign ? ~b : b | kSign; }

    __device__ __forceinline__ void fold(T v)
    {
        if constexpr (Op == ReduceOp::Sum) {
            key += v;
        } else if constexpr (Op == ReduceOp::AbsMax) {
            key = max(key, bits(v) & ~kSign);
        } else {
            const Bits b = bits(v);
            const Bits k = is_nan(b) ? ~Bits(0) : Op == ReduceOp::Max ? ordered(b) : ~ordered(b);
            key = max(key, k);
        }
    }
    __device__ __forceinline__ static Key combine(Key a, Key b)
    {
        if constexpr (Op == ReduceOp::Sum)
            return a + b;
        else
            return max(a, b);
    }
    __device__ __forceinline__ void commit(Key block_key) const
    {
        using Signed = Conditional<sizeof(T) == 8, long long, int>;
        if constexpr (Op == ReduceOp::Sum) {
            atomicAdd(target, block_key);
        } else if constexpr (Op == ReduceOp::AbsMax) {
            const Bits canonical = block_key > kInfinity ? kQuietNan : block_key;
            atomicMax(reinterpret_cast<Signed *>(target), static_cast<Signed>(canonical));
        } else if (block_key != 0) {
            Bits b;
            if (block_key == ~Bits(0))
                b = Op == ReduceOp::Max ? kQuietNan : kQuietNan | kSign;
            else {
                const Bits k = Op == ReduceOp::Max ? block_key : ~block_key;
                b = k & kSign ? k & ~kSign : ~k;
            }
            if ((b & kSign) == 0) // max: a signed max; min: a signed min
                atomic_extreme<Op == ReduceOp::Max>(reinterpret_cast<Signed *>(target), static_cast<Signed>(b));
            else // max: an unsigned min; min: an unsigned max
                atomic_extreme<Op != ReduceOp::Max>(reinterpret_cast<Bits *>(target), b);
        }
    }
    // atomicMax (Greatest) or atomicMin
    template <bool Greatest, typename I> __device__ __forceinline__ static void atomic_extreme(I *p, I v)
    {
        if constexpr (Greatest)
            atomicMax(p, v);
        else
            atomicMin(p, v);
    }
};

// max |v| over floats into a float: the amax of the scaled casts.
using AbsMax = Reduce<ReduceOp::AbsMax, float>;

template <typename F, typename = void> inline constexpr bool kReduces = false;
template <typename F> inline constexpr bool kReduces<F, typename VoidOf<decltype(F::reduction)>::Type> = true;

// The block's keys combined, then one commit by thread 0. Every thread of the block calls it once,
// after its last element.
template <typename R> __device__ __forceinline__ void finish_block(const R &reduction)
{
    using Key = typename R::Key;
    __shared__ Key warp_keys[32];
    Key key = reduction.key;
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
