// SPDX-License-Identifier: Apache-2.0
// Op functors. Each is built on the host from the call's run-time values by its static make()
// (the factory) and travels to the kernel by value. A functor with kHasPair gets elements two at a
// time (16-bit floats through the half2 / bfloat162 intrinsics, fp8 results through the fp8x2
// conversions), one with kHasQuad four 1-byte elements of a 32-bit word at once (their results as a
// word, or two words for 2-byte results); the kernel picks the form at compile time.
// The scalar forms are the shared definitions of src/device/ew_ops.cuh (ew::add, ew::convert, ...),
// which run-time compiled kernels compile too; the pair and word forms give the same bits each lane.
#pragma once

#include <cuda_fp8.h>

#include <cstring>

#include "catalogue/params.h"
#include "catalogue/types.cuh"
#include "device/reduce.cuh"

namespace ew {

// Two adjacent 16-bit floats as the CUDA pair type.
template <typename T> struct PairOf;
template <> struct PairOf<__half> {
    using Type = __half2;
};
template <> struct PairOf<__nv_bfloat16> {
    using Type = __nv_bfloat162;
};
template <typename T> __device__ __forceinline__ typename PairOf<T>::Type &as_pair(T *x)
{
    return *reinterpret_cast<typename PairOf<T>::Type *>(x);
}
template <typename T> __device__ __forceinline__ const typename PairOf<T>::Type &as_pair(const T *x)
{
    return *reinterpret_cast<const typename PairOf<T>::Type *>(x);
}

// Two adjacent 16-bit floats to floats and back, each lane as the scalar widen() and narrow() give it
// (the same rounding and NaN bits); narrowing is one instruction a pair, where the scalar form takes
// one a lane and a permute to join them.
template <typename T> __device__ __forceinline__ float2 widen_pair(const T *x)
{
    if constexpr (std::is_same_v<T, __half>) {
        return __half22float2(as_pair(x));
    } else { // from the word, which the intrinsic first splits into two 16-bit registers
        uint32_t word;
        memcpy(&word, x, sizeof word);
        return make_float2(__uint_as_float(word << 16), __uint_as_float(word & 0xFFFF0000u));
    }
}
template <typename T> __device__ __forceinline__ void narrow_pair(T *out, float2 value)
{
    if constexpr (std::is_same_v<T, __half>)
        as_pair(out) = __float22half2_rn(value);
    else
        as_pair(out) = __float22bfloat162_rn(value);
}

// Four bools of a word, each 0 or 1: a byte is true when nonzero.
__device__ __forceinline__ uint32_t bools_of(uint32_t bytes) { return __vcmpne4(bytes, 0u) & 0x01010101u; }

template <typename T>
inline constexpr bool kIsByteInteger = std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>;

template <typename T> struct Add {
    using Out = T;
    using In1 = T;
    using In2 = T;
    static constexpr bool kHasPair = kIsHalfLike<T>;
    // i8/u8 in byte lanes of a word: faster than bytewise since runs stay in word registers.
    static constexpr bool kHasQuad = kIsBool<T> || kIsByteInteger<T>;
    static Add make(const ew_op_params_t &) { return {}; }

    // Bytes wrap: the low seven bits of each lane add without a carry out of it, the top bit is the
    // sum's parity.
    __device__ __forceinline__ uint32_t quad(uint32_t a, uint32_t b) const
    {
        if constexpr (kIsBool<T>)
            return bools_of(a | b);
        else
            return ((a & 0x7F7F7F7Fu) + (b & 0x7F7F7F7Fu)) ^ ((a ^ b) & 0x80808080u);
    }

    __device__ __forceinline__ T operator()(T a, T b) const { return ew::add(a, b); }
    // Same bits as the scalar form: one rounding of the exact sum.
    __device__ __forceinline__ void pair(T *out, const T *a, const T *b) const
    {
        as_pair(out) = __hadd2(as_pair(a), as_pair(b));
    }
};

template <typename T> struct Mul {
    using Out = T;
    using In1 = T;
    using In2 = T;
    static constexpr bool kHasPair = kIsHalfLike<T>;
    static constexpr bool kHasQuad = kIsBool<T>;
    static Mul make(const ew_op_params_t &) { return {}; }

    __device__ __forceinline__ uint32_t quad(uint32_t a, uint32_t b) const
    {
        return bools_of(a) & bools_of(b);
    }

    __device__ __forceinline__ T operator()(T a, T b) const { return ew::mul(a, b); }
    __device__ __forceinline__ void pair(T *out, const T *a, const T *b) const
    {
        as_pair(out) = __hmul2(as_pair(a), as_pair(b));
    }
};

template <typename T> struct Relu {
    using Out = T;
    using In1 = T;
    using In2 = NoInput;
    static constexpr bool kHasPair = kIsHalfLike<T>;
    static constexpr bool kHasQuad = kIsByteInteger<T>;
    static Relu make(const ew_op_params_t &) { return {}; }

    // Bytes with the sign bit set become 0: plain word arithmetic, not the emulated __vmaxs4.
    __device__ __forceinline__ uint32_t quad(uint32_t x) const
    {
        if constexpr (std::is_same_v<T, uint8_t>)
            return x;
        else
            return x & ~(((x & 0x80808080u) >> 7) * 0xFFu);
    }

    __device__ __forceinline__ T operator()(T x) const { return ew::relu(x); }
    // Both lanes at once on the 32-bit word: keep a lane if its sign is clear or it is NaN.
    __device__ __forceinline__ void pair(T *out, const T *x) const
    {
        const uint32_t word = *reinterpret_cast<const uint32_t *>(x);
        const uint32_t infinity = FloatBits<T>::kInfinity * 0x10001u;
        const uint32_t keep = __vcmpeq2(word & 0x80008000u, 0u) | __vcmpgtu2(word & 0x7FFF7FFFu, infinity);
        *reinterpret_cast<uint32_t *>(out) = word & keep;
    }
};

template <typename T> struct ScaleAdd {
    using Out = T;
    using In1 = T;
    using In2 = T;
    // Pairs: 16-bit floats widened and narrowed two at a time around two fmaf (no fused bf16x2/half2
    // form rounds once to float first); i16 two lanes of a word at once.
    static constexpr bool kHasPair = kIsHalfLike<T> || std::is_same_v<T, int16_t>;
    static constexpr bool kHasQuad = kIsBool<T>;
    using Alpha = AlphaType<T>; // f64 keeps alpha in double, other floats round it to float once; integers wrap
    Alpha alpha;

    static ScaleAdd make(const ew_op_params_t &params)
    {
        if constexpr (kIsFloat<T>)
            return {static_cast<Alpha>(params.alpha)};
        else
            return {static_cast<Alpha>(params.alpha_integer)};
    }

    __device__ __forceinline__ uint32_t quad(uint32_t a, uint32_t b) const
    {
        return bools_of(b | (alpha != 0 ? a : 0u));
    }

    __device__ __forceinline__ void pair(T *out, const T *a, const T *b) const
    {
        if constexpr (kIsHalfLike<T>) {
            const float2 x = widen_pair(a), y = widen_pair(b);
            narrow_pair(out, make_float2(__fmaf_rn(alpha, x.x, y.x), __fmaf_rn(alpha, x.y, y.y)));
        } else {
            // Each lane is the low 16 bits of alpha * a + b. In low, the high lanes add only above bit
            // 15; in high, a's low lane is cleared, so below bit 16 stands b's low lane alone, which
            // carries nothing into the high lane.
            uint32_t a_word, b_word;
            memcpy(&a_word, a, sizeof a_word);
            memcpy(&b_word, b, sizeof b_word);
            const uint32_t low = alpha * a_word + b_word, high = alpha * (a_word & 0xFFFF0000u) + b_word;
            const uint32_t word = __byte_perm(low, high, 0x7610); // low half of low, high half of high
            memcpy(out, &word, sizeof word);
        }
    }

    __device__ __forceinline__ T operator()(T a, T b) const { return ew::scale_add_by<T>(alpha, a, b); }
};

// 0xFF in each byte of x whose magnitude (low 7 bits) is `first` or more, 0 in the others; no carry
// crosses a byte.
template <uint32_t first> __device__ __forceinline__ uint32_t bytes_from(uint32_t x)
{
    static_assert(first >= 1 && first <= 0x7F);
    return ((((x & 0x7F7F7F7Fu) + (0x80u - first) * 0x01010101u) & 0x80808080u) >> 7) * 0xFFu;
}

// Four fp8 codes, none of them NaN, as the four f16 of the same values (exact: e5m2 is the top byte
// of its f16; e4m3 takes the cc 8.9 instruction), low byte first.
template <typename Fp8> __device__ __forceinline__ uint2 fp8x4_to_halves(uint32_t x)
{
    if constexpr (std::is_same_v<Fp8, F8E5M2>) {
        return make_uint2(__byte_perm(x, 0, 0x1404), __byte_perm(x, 0, 0x3424));
    } else {
#if EW_HAS_FP8_CVT
        return make_uint2(bits_as<uint32_t>(__nv_cvt_fp8x2_to_halfraw2(x & 0xFFFFu, __NV_E4M3)),
                          bits_as<uint32_t>(__nv_cvt_fp8x2_to_halfraw2(x >> 16, __NV_E4M3)));
#else
        return make_uint2(0, 0); // not called below cc 8.9
#endif
    }
}

// From cc 8.9 the f16 -> fp8 instruction rounds an f16 as convert() rounds its exact f32 value;
// fp8 -> f16 is exact. Ranges PyTorch sends to NaN (e4m3) or infinity (e5m2) take convert()'s rule.

template <typename OutT, typename InT> struct Cast {
    using Out = OutT;
    using In1 = InT;
    using In2 = NoInput;
    // f16 -> fp8, and every other input convert() takes through one float (f32, f64, bf16, i16, i32,
    // i64), two at a time (cc 8.9).
    static constexpr bool kToFp8Pair =
        kIsFp8<OutT> && !kIsByteFloat<InT> && !kIsBool<InT> && !kIsByteInteger<InT>;
    static constexpr bool kHasPair = (std::is_same_v<InT, float> && kIsHalfLike<OutT>) ||
                                     (std::is_same_v<OutT, float> && kIsHalfLike<InT>) || kToFp8Pair;
    // Among bool, i8 and u8: to bool is "nonzero", from bool is 0 or 1 (the same), i8 <-> u8 keeps bits.
    static constexpr bool kOutIsByte = kIsBool<OutT> || kIsByteInteger<OutT>;
    // fp8 -> f16, bf16 and i16: four at once through f16 (fp8x4_to_halves).
    static constexpr bool kFromFp8Quad = kIsFp8<InT> && (kIsHalfLike<OutT> || std::is_same_v<OutT, int16_t>);
    // fp8 -> bool: a code is zero when its magnitude bits are (measured faster than the table).
    static constexpr bool kFp8ToBool = kIsBool<OutT> && kIsFp8<InT>;
    // Other 1-byte -> 1-byte casts with a 1-byte float side (fp8 or e8m0 <-> another of them, i8,
    // u8; bool -> them; e8m0 -> bool): an input byte has 256 values, so each block fills a table
    // with convert()'s results (the same bits by construction) and looks codes up. Through the
    // conversion instructions the fp8 casts were compute-bound at 0.74-0.92x memcpy.
    static constexpr bool kByteTable = sizeof(OutT) == 1 && sizeof(InT) == 1 && !std::is_same_v<OutT, InT> &&
                                       !kFp8ToBool && (kIsByteFloat<InT> || kIsByteFloat<OutT>);
    static constexpr bool kHasQuad =
        (kOutIsByte && (kIsBool<InT> || kIsByteInteger<InT>)) || kFromFp8Quad || kFp8ToBool || kByteTable;
    static Cast make(const ew_op_params_t &) { return {}; }

    // The block's table (a shared variable of this function: one per block and instantiation).
    __device__ __forceinline__ static unsigned char *byte_table()
    {
        __shared__ unsigned char codes[256];
        return codes;
    }
    // Called by every thread of the block, before a barrier and before the first quad().
    __device__ __forceinline__ static void fill_table()
    {
        for (unsigned i = threadIdx.x; i < 256; i += blockDim.x)
            byte_table()[i] =
                bits_as<unsigned char>(convert<Out>(bits_as<In1>(static_cast<unsigned char>(i))));
    }

    using QuadResult = std::conditional_t<sizeof(Out) == 1, uint32_t, uint2>;

    // Four results of convert(), as a word (1-byte Out) or two (2-byte Out).
    __device__ __forceinline__ static QuadResult each_of(uint32_t x)
    {
        Out results[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const uint8_t byte = static_cast<uint8_t>(x >> (8 * k));
            In1 value;
            memcpy(&value, &byte, 1);
            results[k] = convert<Out>(value);
        }
        QuadResult word;
        memcpy(&word, results, sizeof word);
        return word;
    }

    __host__ __device__ static constexpr __nv_fp8_interpretation_t fp8_kind()
    {
        return std::is_same_v<OutT, F8E4M3> ? __NV_E4M3 : __NV_E5M2;
    }

    __device__ __forceinline__ QuadResult quad(uint32_t x) const
    {
        if constexpr (kByteTable) {
            const unsigned char *codes = byte_table();
            return codes[x & 0xFFu] | codes[x >> 8 & 0xFFu] << 8 | codes[x >> 16 & 0xFFu] << 16 |
                   static_cast<uint32_t>(codes[x >> 24]) << 24;
        } else if constexpr (kFromFp8Quad) {
            // Below cc 8.9 e4m3 has no f16 instruction; a NaN lane takes convert()'s canonical widening.
            if ((std::is_same_v<InT, F8E4M3> && !EW_HAS_FP8_CVT) || bytes_from<kFp8Nan<InT>>(x) != 0)
                return each_of(x);
            const uint2 halves = fp8x4_to_halves<InT>(x);
            if constexpr (std::is_same_v<OutT, __half>) {
                return halves;
            } else if constexpr (std::is_same_v<OutT, __nv_bfloat16>) {
                // Exact in f32, so the bf16 is the f32's top half.
                const float2 low = __half22float2(bits_as<__half2>(halves.x));
                const float2 high = __half22float2(bits_as<__half2>(halves.y));
                return make_uint2(__byte_perm(__float_as_uint(low.x), __float_as_uint(low.y), 0x7632),
                                  __byte_perm(__float_as_uint(high.x), __float_as_uint(high.y), 0x7632));
            } else { // i16: the low half of the truncated i32 (infinities saturate alike)
                const __half2 low = bits_as<__half2>(halves.x), high = bits_as<__half2>(halves.y);
                const uint32_t i0 = __half2int_rz(__low2half(low)), i1 = __half2int_rz(__high2half(low));
                const uint32_t i2 = __half2int_rz(__low2half(high)), i3 = __half2int_rz(__high2half(high));
                return make_uint2(__byte_perm(i0, i1, 0x5410), __byte_perm(i2, i3, 0x5410));
            }
        } else if constexpr (kFp8ToBool) {
            return bools_of(x & 0x7F7F7F7Fu);
        } else if constexpr (kIsBool<OutT> || kIsBool<InT>) {
            return bools_of(x);
        } else {
            return x;
        }
    }

    __device__ __forceinline__ Out operator()(In1 x) const { return convert<Out>(x); }

    // The fp8 pair of two inputs through one instruction; false (nothing written) below
    // cc 8.9 or when a lane lies where PyTorch gives NaN (e4m3) or infinity (e5m2).
    __device__ __forceinline__ static bool fp8_pair(Out *out, const In1 *x)
    {
#if EW_HAS_FP8_CVT
        constexpr bool kE4m3 = std::is_same_v<Out, F8E4M3>;
        __nv_fp8x2_storage_t bytes;
        if constexpr (std::is_same_v<In1, __half>) {
            constexpr uint32_t kLargest = kE4m3 ? 0x5F40u : 0x7B7Fu; // 464; the last f16 below 61440
            const uint32_t word = *reinterpret_cast<const uint32_t *>(x);
            if ((word & 0x7FFFu) > kLargest || ((word >> 16) & 0x7FFFu) > kLargest)
                return false;
            bytes = __nv_cvt_halfraw2_to_fp8x2(bits_as<__half2>(word), __NV_SATFINITE, fp8_kind());
        } else {
            constexpr uint32_t kLargest = kE4m3 ? 0x43E80000u : 0x476FFFFFu; // 464; the last below 61440
            float2 value; // as convert() takes it: working_value, then to float
            if constexpr (std::is_same_v<In1, float>)
                value = *reinterpret_cast<const float2 *>(x);
            else if constexpr (std::is_same_v<In1, __nv_bfloat16>)
                value = __bfloat1622float2(as_pair(x));
            else
                value = make_float2(static_cast<float>(x[0]), static_cast<float>(x[1]));
            if ((__float_as_uint(value.x) & 0x7FFFFFFFu) > kLargest ||
                (__float_as_uint(value.y) & 0x7FFFFFFFu) > kLargest)
                return false;
            bytes = __nv_cvt_float2_to_fp8x2(value, __NV_SATFINITE, fp8_kind());
        }
        memcpy(out, &bytes, sizeof bytes);
        return true;
#else
        (void)out;
        (void)x;
        return false;
#endif
    }

    // f32 <-> f16/bf16 two at a time (same rounding and NaN bits as the scalar intrinsics); -> fp8
    // two at a time from cc 8.9 (the instruction rounds as convert() does), unless a lane lies where
    // PyTorch gives NaN (e4m3) or infinity (e5m2): those take convert()'s rule.
    __device__ __forceinline__ void pair(Out *out, const In1 *x) const
    {
        if constexpr (kToFp8Pair) {
            if (!fp8_pair(out, x)) {
                out[0] = convert<Out>(x[0]);
                out[1] = convert<Out>(x[1]);
            }
        } else if constexpr (kIsHalfLike<Out>)
            narrow_pair(out, *reinterpret_cast<const float2 *>(x));
        else
            *reinterpret_cast<float2 *>(out) = widen_pair(x);
    }
};

// out = saturate(x * scale) to fp8 (ew::quantize), the scale read from device memory when the kernel
// runs; folds max |x| into its reduction, which the kernel commits to the amax scalar when given.
template <typename OutT, typename InT> struct Quantize {
    using Out = OutT;
    using In1 = InT;
    using In2 = NoInput;
    // Two at a time: the widening of 16-bit pairs, and the products converted by one fp8x2
    // instruction (cc 8.9), which after the clamp rounds as convert() does.
    static constexpr bool kHasPair = true;
    static constexpr bool kHasQuad = false;
    const float *scale;
    mutable AbsMax reduction;
    static Quantize make(const ew_op_params_t &params) { return {params.scale, {params.reduction, 0u}}; }

    __device__ __forceinline__ Out operator()(In1 x) const
    {
        reduction.fold(static_cast<float>(working_value(x)));
        return quantize<Out>(x, __ldg(scale));
    }

    __device__ __forceinline__ void pair(Out *out, const In1 *x) const
    {
        float2 v;
        if constexpr (kIsHalfLike<In1>)
            v = widen_pair(x);
        else
            v = make_float2(static_cast<float>(x[0]), static_cast<float>(x[1]));
        reduction.fold(v.x);
        reduction.fold(v.y);
        const float s = __ldg(scale);
        const float p0 = clamp_to_finite<Out>(__fmul_rn(v.x, s)), p1 = clamp_to_finite<Out>(__fmul_rn(v.y, s));
#if EW_HAS_FP8_CVT
        if (p0 == p0 && p1 == p1) { // NaN takes convert()'s code
            const __nv_fp8x2_storage_t bytes =
                __nv_cvt_float2_to_fp8x2(make_float2(p0, p1), __NV_SATFINITE, Cast<Out, float>::fp8_kind());
            memcpy(out, &bytes, sizeof bytes);
            return;
        }
#endif
        out[0] = convert<Out>(p0);
        out[1] = convert<Out>(p1);
    }
};

// out = q * scale_inv from fp8 (ew::dequantize), the scale read from device memory when the kernel runs.
template <typename OutT, typename InT> struct Dequantize {
    using Out = OutT;
    using In1 = InT;
    using In2 = NoInput;
    static constexpr bool kHasPair = false;
    static constexpr bool kHasQuad = false;
    const float *scale;
    static Dequantize make(const ew_op_params_t &params) { return {params.scale}; }

    __device__ __forceinline__ Out operator()(In1 q) const { return dequantize<Out>(q, __ldg(scale)); }
};

// max |x| alone: no output, the fold committed to the amax scalar.
template <typename T> struct Amax {
    using Out = NoInput;
    using In1 = T;
    using In2 = NoInput;
    static constexpr bool kHasPair = false;
    static constexpr bool kHasQuad = false;
    mutable AbsMax reduction;
    static Amax make(const ew_op_params_t &params) { return {{params.reduction, 0u}}; }

    __device__ __forceinline__ Out operator()(In1 x) const
    {
        reduction.fold(static_cast<float>(working_value(x)));
        return {};
    }
};

} // namespace ew
