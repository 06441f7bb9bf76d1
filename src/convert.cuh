// SPDX-License-Identifier: Apache-2.0
// Scalar conversions between the 12 dtypes, as docs/semantics.md defines them (PyTorch on CUDA).
#pragma once

#include <cuda_fp8.h>

#include <cmath>
#include <limits>

#include "types.cuh"

namespace ew {

// ---- float8: round to nearest-even by integer arithmetic on the float's bits ----

// e4m3fn: bias 7, 3 mantissa bits, no infinity, NaN = S.1111.111, largest finite 448.
// From cc 8.9 the conversion instruction rounds the same way; it saturates where PyTorch gives NaN
// (e4m3) or infinity (e5m2), so those ranges are taken first.
__device__ __forceinline__ F8E4M3 f32_to_e4m3(float f)
{
    const uint32_t bits = __float_as_uint(f);
    const uint32_t sign = (bits >> 24) & 0x80u;
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
#if EW_HAS_FP8_CVT
    if (magnitude > 0x43E80000u)
        return F8E4M3{static_cast<uint8_t>(0x7Fu | sign)};
    return F8E4M3{__nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3)};
#else
    uint32_t code;
    if (magnitude > 0x43E80000u) { // beyond 464 (the tie between 448 and 480), inf or NaN
        code = 0x7Fu;
    } else if (magnitude < 0x3C800000u) { // below 2^-6: subnormal steps of 2^-9
        code = __float2uint_rn(__uint_as_float(magnitude) * 512.0f);
    } else { // keep 3 mantissa bits, ties to even, rebias 127 -> 7
        const uint32_t rounded = magnitude + 0x7FFFFu + ((magnitude >> 20) & 1u);
        code = (rounded >> 20) - (120u << 3);
    }
    return F8E4M3{static_cast<uint8_t>(code | sign)};
#endif
}

// e5m2: bias 15, 2 mantissa bits, IEEE-like with infinities; largest finite 57344.
__device__ __forceinline__ F8E5M2 f32_to_e5m2(float f)
{
    const uint32_t bits = __float_as_uint(f);
    const uint32_t sign = (bits >> 24) & 0x80u;
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
#if EW_HAS_FP8_CVT
    if (magnitude > 0x7F800000u)
        return F8E5M2{static_cast<uint8_t>(0x7Fu | sign)};
    if (magnitude >= 0x47700000u)
        return F8E5M2{static_cast<uint8_t>(0x7Cu | sign)};
    return F8E5M2{__nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E5M2)};
#else
    uint32_t code;
    if (magnitude > 0x7F800000u) { // NaN
        code = 0x7Fu;
    } else if (magnitude >= 0x47700000u) { // from 61440 (ties up to 65536) on: infinity
        code = 0x7Cu;
    } else if (magnitude < 0x38800000u) { // below 2^-14: subnormal steps of 2^-16
        code = __float2uint_rn(__uint_as_float(magnitude) * 65536.0f);
    } else {
        const uint32_t rounded = magnitude + 0xFFFFFu + ((magnitude >> 21) & 1u);
        code = (rounded >> 21) - (112u << 2);
    }
    return F8E5M2{static_cast<uint8_t>(code | sign)};
#endif
}

// The smallest magnitude (the low seven bits of a code) that is NaN in each fp8 format.
template <typename Fp8> inline constexpr uint32_t kFp8Nan = std::is_same_v<Fp8, F8E4M3> ? 0x7Fu : 0x7Du;

__device__ __forceinline__ bool e4m3_is_nan(F8E4M3 x) { return (x.bits & 0x7Fu) >= kFp8Nan<F8E4M3>; }
#if EW_HAS_FP8_CVT
// Every e4m3 value but NaN is exact in f16, which the cc 8.9 instruction gives.
__device__ __forceinline__ __half e4m3_as_f16(F8E4M3 x)
{
    return __half(__nv_cvt_fp8_to_halfraw(x.bits, __NV_E4M3));
}
#endif

__device__ __forceinline__ float e4m3_to_f32(F8E4M3 x)
{
    const uint32_t sign = static_cast<uint32_t>(x.bits & 0x80u) << 24;
    if (e4m3_is_nan(x))
        return __uint_as_float(sign | 0x7FF00000u); // PyTorch's widening of the NaN code
#if EW_HAS_FP8_CVT
    return __half2float(e4m3_as_f16(x));
#else
    const uint32_t exponent = (x.bits >> 3) & 0xFu, mantissa = x.bits & 7u;
    if (exponent == 0)
        return __uint_as_float(sign | __float_as_uint(static_cast<float>(mantissa) * 0x1p-9f));
    return __uint_as_float(sign | ((exponent + 120u) << 23) | (mantissa << 20));
#endif
}

// e5m2 is the top byte of an f16, so every value but NaN widens exactly through the f16 conversion.
__device__ __forceinline__ bool e5m2_is_nan(F8E5M2 x) { return (x.bits & 0x7Fu) >= kFp8Nan<F8E5M2>; }
__device__ __forceinline__ __half e5m2_as_f16(F8E5M2 x)
{
    return __ushort_as_half(static_cast<unsigned short>(x.bits << 8));
}

__device__ __forceinline__ float e5m2_to_f32(F8E5M2 x)
{
    if (e5m2_is_nan(x)) // NaNs widen canonical, with their sign
        return __uint_as_float((static_cast<uint32_t>(x.bits & 0x80u) << 24) | 0x7FFFFFFFu);
    return __half2float(e5m2_as_f16(x));
}

// ---- narrow floats <-> float ----

__device__ __forceinline__ float widen(__half x) { return __half2float(x); }
__device__ __forceinline__ float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float widen(F8E4M3 x) { return e4m3_to_f32(x); }
__device__ __forceinline__ float widen(F8E5M2 x) { return e5m2_to_f32(x); }

template <typename T> __device__ __forceinline__ T narrow(float f);
template <> __device__ __forceinline__ __half narrow<__half>(float f) { return __float2half_rn(f); }
template <> __device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16>(float f)
{
    return __float2bfloat16_rn(f);
}
template <> __device__ __forceinline__ F8E4M3 narrow<F8E4M3>(float f) { return f32_to_e4m3(f); }
template <> __device__ __forceinline__ F8E5M2 narrow<F8E5M2>(float f) { return f32_to_e5m2(f); }
template <> __device__ __forceinline__ float narrow<float>(float f) { return f; }

// A floating value as the float (or, for f64, double) that conversions start from.
template <typename T> __device__ __forceinline__ auto working_value(T x)
{
    if constexpr (kIsNarrowFloat<T>)
        return widen(x);
    else
        return x;
}

// ---- floats -> integers: truncate toward zero, saturate; NaN per source width ----

__device__ __forceinline__ int32_t to_i32(float f) { return f != f ? 0 : __float2int_rz(f); }
__device__ __forceinline__ int32_t to_i32(double d) { return d != d ? INT32_MIN : __double2int_rz(d); }
__device__ __forceinline__ int64_t to_i64(float f) { return f != f ? INT64_MIN : __float2ll_rz(f); }
__device__ __forceinline__ int64_t to_i64(double d) { return d != d ? INT64_MIN : __double2ll_rz(d); }

// ---- the cast rule for every ordered pair ----

template <typename Out, typename In> __device__ __forceinline__ Out convert(In x)
{
    if constexpr (kIsBool<Out>) {
        if constexpr (kIsBool<In>)
            return Bool8{static_cast<uint8_t>(x.bits != 0)};
        else if constexpr (kIsFp8<In>) // zero is the only code with no magnitude bits; NaN is true
            return Bool8{static_cast<uint8_t>((x.bits & 0x7Fu) != 0)};
        else if constexpr (kIsFloat<In>)
            return Bool8{static_cast<uint8_t>(working_value(x) != 0)}; // NaN is true, -0.0 false
        else
            return Bool8{static_cast<uint8_t>(x != 0)};
    } else if constexpr (std::is_same_v<Out, In>) {
        return x; // bits copied, NaN payloads included
    } else if constexpr (kIsBool<In>) {
        return convert<Out>(static_cast<int32_t>(x.bits != 0));
    } else if constexpr (kIsInteger<Out> && kIsFloat<In>) {
        const auto v = working_value(x);
        if constexpr (std::is_same_v<Out, int64_t>)
            return to_i64(v);
        else if constexpr (std::is_same_v<Out, uint8_t>)
            return static_cast<uint8_t>(static_cast<uint64_t>(to_i64(v)));
        else // i32, and i16/i8 keep the low bits of the i32
            return static_cast<Out>(static_cast<uint32_t>(to_i32(v)));
    } else if constexpr (kIsInteger<Out> && kIsInteger<In>) {
        using Unsigned = std::make_unsigned_t<Out>;
        return static_cast<Out>(static_cast<Unsigned>(x)); // wrap to the low bits
    } else if constexpr (std::is_same_v<Out, double>) {
        return static_cast<double>(working_value(x)); // integers and f32 exactly or RNE; narrow via float
    } else if constexpr (std::is_same_v<Out, float>) {
        return static_cast<float>(working_value(x));
    } else if constexpr (std::is_same_v<Out, __half> && std::is_same_v<In, F8E5M2>) {
        return e5m2_is_nan(x) ? narrow<__half>(e5m2_to_f32(x)) : e5m2_as_f16(x); // exact but NaN
#if EW_HAS_FP8_CVT
    } else if constexpr (std::is_same_v<Out, __half> && std::is_same_v<In, F8E4M3>) {
        return e4m3_is_nan(x) ? narrow<__half>(e4m3_to_f32(x)) : e4m3_as_f16(x); // exact but NaN
#endif
    } else { // f16, bf16, fp8 targets: through float, as PyTorch does (so f64 and wide integers round twice)
        return narrow<Out>(static_cast<float>(working_value(x)));
    }
}

} // namespace ew
