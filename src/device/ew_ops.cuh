// SPDX-License-Identifier: Apache-2.0
// The catalogue's scalar semantics (docs/semantics.md), written once: the storage types of the 12
// dtypes, the conversion of every ordered pair (ew::convert), and the scalar add, mul, relu and
// scale_add. nvcc compiles it into the catalogue's kernels (src/catalogue/functors.cuh calls it for every scalar
// form), and NVRTC compiles it into run-time compiled kernels: the library embeds this file as a string
// (src/CMakeLists.txt, src/rtc/rtc.c), so a chain of ew::add, ew::mul, ew::relu, ew::scale_add and
// ew::cast<T> in a user's kernel gives the bits of the same chain of catalogue calls.
//
// Self-contained under NVRTC (__CUDACC_RTC__): NVRTC has no standard headers and no cuda_fp16.h,
// cuda_bf16.h or cuda_fp8.h ("could not open source file"), so this file includes nothing there and
// defines what it needs: the fixed-width integers, a few type traits, and the f16/bf16/fp8
// conversions as the same PTX the toolkit's headers emit (their instruction strings copied, so the
// catalogue's code is unchanged by this file's move). Under nvcc the storage types of f16 and bf16 are
// the toolkit's __half and __nv_bfloat16, which the pair forms of src/catalogue/functors.cuh need; under NVRTC
// they are this file's own structs of the same size and alignment. Only the bits matter here: every
// function below reads and writes a __half through its 16 bits.
#pragma once

#if defined(__CUDACC_RTC__)
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#endif

// The cc 8.9 conversion instructions (fp8x2 <-> f16x2, f32x2 -> fp8x2). A build with
// EW_GENERIC_CONVERSIONS (CMake option EW_GENERIC_CONVERSIONS, which src/rtc/rtc.c passes on to NVRTC)
// compiles the paths of older GPUs for every GPU, so that a newer one runs the same tests over them.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890 && !defined(EW_GENERIC_CONVERSIONS)
#define EW_HAS_FP8_CVT 1
#else
#define EW_HAS_FP8_CVT 0
#endif

#if defined(__CUDACC_RTC__)
// The 16-bit floats of a run-time compiled kernel: storage, and a conversion to float so that user
// expressions such as `in0 > 0.f ? in0 : 0.01f * in0` compile (arithmetic on them is float
// arithmetic). No constructor from float, on purpose: with conversions both ways the conditional
// operator above would be ambiguous; a result is narrowed by the kernel's return (ew::cast rules).
struct __half {
    unsigned short __x;
    __device__ operator float() const;
};
struct __nv_bfloat16 {
    unsigned short __x;
    __device__ operator float() const;
};
#endif

namespace ew {

// ---- type traits: the few the semantics need, the same code under nvcc and NVRTC ----

template <typename A, typename B> inline constexpr bool kSame = false;
template <typename A> inline constexpr bool kSame<A, A> = true;

template <bool Condition, typename A, typename B> struct ConditionalOf {
    using Type = A;
};
template <typename A, typename B> struct ConditionalOf<false, A, B> {
    using Type = B;
};
template <bool Condition, typename A, typename B> using Conditional = typename ConditionalOf<Condition, A, B>::Type;

// The integer dtypes (and their unsigned partners, which the wrapping arithmetic uses).
template <typename T> struct UnsignedOf;
template <> struct UnsignedOf<int8_t> {
    using Type = uint8_t;
};
template <> struct UnsignedOf<uint8_t> {
    using Type = uint8_t;
};
template <> struct UnsignedOf<int16_t> {
    using Type = uint16_t;
};
template <> struct UnsignedOf<uint16_t> {
    using Type = uint16_t;
};
template <> struct UnsignedOf<int32_t> {
    using Type = uint32_t;
};
template <> struct UnsignedOf<uint32_t> {
    using Type = uint32_t;
};
template <> struct UnsignedOf<int64_t> {
    using Type = uint64_t;
};
template <> struct UnsignedOf<uint64_t> {
    using Type = uint64_t;
};
template <typename T> using Unsigned = typename UnsignedOf<T>::Type;

// Void for any type: the detection idiom (std::void_t) without the standard library.
template <typename T> struct VoidOf {
    using Type = void;
};

// An input slot an op does not have: no storage, never loaded (the second input of unary ops).
struct NoInput {};

// Bytes one element of T occupies in memory; NoInput counts as 1 so that sizes stay non-zero.
template <typename T> inline constexpr size_t kStorageSize = kSame<T, NoInput> ? 1 : sizeof(T);

inline constexpr int32_t kInt32Min = -2147483647 - 1;
inline constexpr int64_t kInt64Min = -9223372036854775807ll - 1;

// ---- storage types ----

// Byte-sized types get their own wrappers so overloads never confuse bool, u8 and the 1-byte floats;
// a bool byte may hold any value (nonzero reads as true), which C++ bool would not allow. Aggregates,
// so the catalogue builds them as F8E4M3{bits}; under NVRTC the 1-byte floats are also the user's
// __nv_fp8_e4m3 / __nv_fp8_e5m2 / __nv_fp8_e8m0 (below) and convert to float like __half.
struct Bool8 {
    uint8_t bits;
};
struct F8E4M3 {
    uint8_t bits;
#if defined(__CUDACC_RTC__)
    __device__ operator float() const;
#endif
};
struct F8E5M2 {
    uint8_t bits;
#if defined(__CUDACC_RTC__)
    __device__ operator float() const;
#endif
};
// e8m0 "fnu", the MX block scale: 2^(bits - 127), 0xFF NaN; no sign, no zero. The cast alone takes it.
struct F8E8M0 {
    uint8_t bits;
#if defined(__CUDACC_RTC__)
    __device__ operator float() const;
#endif
};

// The fp8 element formats (quantize's targets); e8m0 is a scale, not one of them.
template <typename T> inline constexpr bool kIsFp8 = kSame<T, F8E4M3> || kSame<T, F8E5M2>;
template <typename T> inline constexpr bool kIsScale = kSame<T, F8E8M0>;
template <typename T> inline constexpr bool kIsHalfLike = kSame<T, __half> || kSame<T, __nv_bfloat16>;
// Floating types that widen exactly to float.
template <typename T> inline constexpr bool kIsNarrowFloat = kIsHalfLike<T> || kIsFp8<T> || kIsScale<T>;
// The 1-byte floats, which only convert (the ops add, mul, relu and scale_add take none of them).
template <typename T> inline constexpr bool kIsByteFloat = kIsFp8<T> || kIsScale<T>;
template <typename T> inline constexpr bool kIsFloat = kIsNarrowFloat<T> || kSame<T, float> || kSame<T, double>;
template <typename T> inline constexpr bool kIsBool = kSame<T, Bool8>;
template <typename T>
inline constexpr bool kIsInteger = kSame<T, int8_t> || kSame<T, uint8_t> || kSame<T, int16_t> || kSame<T, uint16_t> ||
                                   kSame<T, int32_t> || kSame<T, uint32_t> || kSame<T, int64_t> || kSame<T, uint64_t>;
// The storage types of the 13 dtypes (uint16_t, uint32_t and uint64_t are integers above but no dtype).
template <typename T>
inline constexpr bool kIsDtype = kIsBool<T> || kIsFloat<T> || kSame<T, int8_t> || kSame<T, uint8_t> ||
                                 kSame<T, int16_t> || kSame<T, int32_t> || kSame<T, int64_t>;

// The bytes of `from` as a To of the same size. Through memcpy, which compiles to register moves:
// cuda::std::bit_cast asks for trivially copyable types, which __half2 and friends are not.
template <typename To, typename From> __host__ __device__ __forceinline__ To bits_as(const From &from)
{
    static_assert(sizeof(To) == sizeof(From));
    To to;
    memcpy(&to, &from, sizeof to);
    return to;
}

// ---- f16, bf16 <-> f32: the toolkit's instructions (cuda_fp16.hpp, cuda_bf16.hpp) ----

__device__ __forceinline__ float widen(__half x)
{
    float f;
    asm("{  cvt.f32.f16 %0, %1;}\n" : "=f"(f) : "h"(bits_as<unsigned short>(x)));
    return f;
}

// Exact: the bits shifted left by 16 (sign and NaN payload kept), whichever instruction does it.
__device__ __forceinline__ float widen(__nv_bfloat16 x)
{
    float f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm("{ cvt.f32.bf16 %0, %1;}\n" : "=f"(f) : "h"(bits_as<unsigned short>(x)));
#else
    asm("{ mov.b32 %0, {0,%1};}\n" : "=f"(f) : "h"(bits_as<unsigned short>(x)));
#endif
    return f;
}

__device__ __forceinline__ __half f32_to_f16(float f)
{
    unsigned short bits;
    asm("{  cvt.rn.f16.f32 %0, %1;}\n" : "=h"(bits) : "f"(f));
    return bits_as<__half>(bits);
}

// RNE; NaN -> 0x7FFF. Before cc 8.0 (no bf16 instruction) the toolkit's integer form, kept verbatim.
__device__ __forceinline__ __nv_bfloat16 f32_to_bf16(float f)
{
    unsigned short bits;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("{  cvt.rn.bf16.f32 %0, %1;}\n" : "=h"(bits) : "f"(f));
#else
    const uint32_t x = __float_as_uint(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) {
        bits = 0x7FFFu;
    } else {
        const uint32_t remainder = x << 16;
        bits = static_cast<unsigned short>(x >> 16);
        if (remainder > 0x80000000u || (remainder == 0x80000000u && (bits & 1u) != 0))
            ++bits;
    }
#endif
    return bits_as<__nv_bfloat16>(bits);
}

// ---- float8: round to nearest-even by integer arithmetic on the float's bits ----

#if EW_HAS_FP8_CVT
// One f32 to fp8 by the cc 8.9 instruction, saturating to the largest finite value (the low byte of
// the x2 form, as cuda_fp8.hpp's __nv_cvt_float_to_fp8 with __NV_SATFINITE takes it).
__device__ __forceinline__ uint8_t cvt_satfinite_e4m3(float f)
{
    unsigned short storage;
    asm("{cvt.rn.satfinite.e4m3x2.f32 %0, %2, %1;}\n" : "=h"(storage) : "f"(f), "f"(0.0f));
    return static_cast<uint8_t>(storage);
}
__device__ __forceinline__ uint8_t cvt_satfinite_e5m2(float f)
{
    unsigned short storage;
    asm("{cvt.rn.satfinite.e5m2x2.f32 %0, %2, %1;}\n" : "=h"(storage) : "f"(f), "f"(0.0f));
    return static_cast<uint8_t>(storage);
}
#endif

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
    return F8E4M3{cvt_satfinite_e4m3(f)};
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
    return F8E5M2{cvt_satfinite_e5m2(f)};
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
template <typename Fp8> inline constexpr uint32_t kFp8Nan = kSame<Fp8, F8E4M3> ? 0x7Fu : 0x7Du;

__device__ __forceinline__ bool e4m3_is_nan(F8E4M3 x) { return (x.bits & 0x7Fu) >= kFp8Nan<F8E4M3>; }
#if EW_HAS_FP8_CVT
// Every e4m3 value but NaN is exact in f16, which the cc 8.9 instruction gives (the low half of the
// x2 form, as cuda_fp8.hpp's __nv_cvt_fp8_to_halfraw takes it).
__device__ __forceinline__ __half e4m3_as_f16(F8E4M3 x)
{
    unsigned int half2_storage;
    asm("{cvt.rn.f16x2.e4m3x2 %0, %1;}\n" : "=r"(half2_storage) : "h"(static_cast<unsigned short>(x.bits)));
    return bits_as<__half>(static_cast<unsigned short>(half2_storage));
}
#endif

__device__ __forceinline__ float e4m3_to_f32(F8E4M3 x)
{
    const uint32_t sign = static_cast<uint32_t>(x.bits & 0x80u) << 24;
    if (e4m3_is_nan(x))
        return __uint_as_float(sign | 0x7FF00000u); // PyTorch's widening of the NaN code
#if EW_HAS_FP8_CVT
    return widen(e4m3_as_f16(x));
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
    return bits_as<__half>(static_cast<unsigned short>(x.bits << 8));
}

__device__ __forceinline__ float e5m2_to_f32(F8E5M2 x)
{
    if (e5m2_is_nan(x)) // NaNs widen canonical, with their sign
        return __uint_as_float((static_cast<uint32_t>(x.bits & 0x80u) << 24) | 0x7FFFFFFFu);
    return widen(e5m2_as_f16(x));
}

// ---- float8 e8m0: c10's Float8_e8m0fnu, on the float's exponent field alone ----

// Byte 0 is 2^-127 (a float subnormal), 0xFF NaN with the payload c10 gives it, else 2^(byte - 127).
__device__ __forceinline__ float e8m0_to_f32(F8E8M0 x)
{
    if (x.bits == 0)
        return __uint_as_float(0x00400000u);
    if (x.bits == 0xFFu)
        return __uint_as_float(0x7F800001u);
    return __uint_as_float(static_cast<uint32_t>(x.bits) << 23);
}

// c10's fp8e8m0fnu_from_fp32_value: the exponent field, the sign dropped; inf and NaN give NaN. It
// rounds up when the guard bit (22) is set and the round bit (21), a sticky bit (20..0) or the
// implied bit (exponent > 0: ties of subnormals go down) is; 254 rounding up gives 0xFF, NaN.
__device__ __forceinline__ F8E8M0 f32_to_e8m0(float f)
{
    const uint32_t bits = __float_as_uint(f);
    const uint32_t exponent = (bits >> 23) & 0xFFu;
    if (exponent == 0xFFu)
        return F8E8M0{0xFFu};
    const bool guard = (bits >> 22) & 1u, round = (bits >> 21) & 1u, sticky = (bits & 0x1FFFFFu) != 0;
    const bool up = guard && (round || sticky || exponent > 0);
    return F8E8M0{static_cast<uint8_t>(exponent + up)};
}

// ---- narrow floats <-> float ----

__device__ __forceinline__ float widen(F8E4M3 x) { return e4m3_to_f32(x); }
__device__ __forceinline__ float widen(F8E5M2 x) { return e5m2_to_f32(x); }
__device__ __forceinline__ float widen(F8E8M0 x) { return e8m0_to_f32(x); }

template <typename T> __device__ __forceinline__ T narrow(float f);
template <> __device__ __forceinline__ __half narrow<__half>(float f) { return f32_to_f16(f); }
template <> __device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16>(float f) { return f32_to_bf16(f); }
template <> __device__ __forceinline__ F8E4M3 narrow<F8E4M3>(float f) { return f32_to_e4m3(f); }
template <> __device__ __forceinline__ F8E5M2 narrow<F8E5M2>(float f) { return f32_to_e5m2(f); }
template <> __device__ __forceinline__ F8E8M0 narrow<F8E8M0>(float f) { return f32_to_e8m0(f); }
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
__device__ __forceinline__ int32_t to_i32(double d) { return d != d ? kInt32Min : __double2int_rz(d); }
__device__ __forceinline__ int64_t to_i64(float f) { return f != f ? kInt64Min : __float2ll_rz(f); }
__device__ __forceinline__ int64_t to_i64(double d) { return d != d ? kInt64Min : __double2ll_rz(d); }

// ---- the cast rule for every ordered pair ----

template <typename Out, typename In> __device__ __forceinline__ Out convert(In x)
{
    static_assert(kIsDtype<Out> && kIsDtype<In>, "ew::convert: both types must be storage types of the dtypes");
    if constexpr (kIsBool<Out>) {
        if constexpr (kIsBool<In>)
            return Bool8{static_cast<uint8_t>(x.bits != 0)};
        else if constexpr (kIsFp8<In>) // zero is the only code with no magnitude bits; NaN is true
            return Bool8{static_cast<uint8_t>((x.bits & 0x7Fu) != 0)};
        else if constexpr (kIsFloat<In>)
            return Bool8{static_cast<uint8_t>(working_value(x) != 0)}; // NaN is true, -0.0 false
        else
            return Bool8{static_cast<uint8_t>(x != 0)};
    } else if constexpr (kSame<Out, In>) {
        return x; // bits copied, NaN payloads included
    } else if constexpr (kIsBool<In>) {
        return convert<Out>(static_cast<int32_t>(x.bits != 0));
    } else if constexpr (kIsInteger<Out> && kIsFloat<In>) {
        const auto v = working_value(x);
        if constexpr (kSame<Out, int64_t>)
            return to_i64(v);
        else if constexpr (kSame<Out, uint8_t>)
            return static_cast<uint8_t>(static_cast<uint64_t>(to_i64(v)));
        else // i32, and i16/i8 keep the low bits of the i32
            return static_cast<Out>(static_cast<uint32_t>(to_i32(v)));
    } else if constexpr (kIsInteger<Out> && kIsInteger<In>) {
        return static_cast<Out>(static_cast<Unsigned<Out>>(x)); // wrap to the low bits
    } else if constexpr (kSame<Out, double>) {
        // e8m0's NaN widens as the instruction widens c10's f32 0x7F800001: quiet, the payload moved up
        // (compilers fold the constant's widening and keep it signalling)
        if constexpr (kSame<In, F8E8M0>)
            if (x.bits == 0xFFu)
                return bits_as<double>(static_cast<uint64_t>(0x7FF8000020000000ull));
        return static_cast<double>(working_value(x)); // integers and f32 exactly or RNE; narrow via float
    } else if constexpr (kSame<Out, float>) {
        return static_cast<float>(working_value(x));
    } else if constexpr (kSame<Out, __half> && kSame<In, F8E5M2>) {
        return e5m2_is_nan(x) ? narrow<__half>(e5m2_to_f32(x)) : e5m2_as_f16(x); // exact but NaN
#if EW_HAS_FP8_CVT
    } else if constexpr (kSame<Out, __half> && kSame<In, F8E4M3>) {
        return e4m3_is_nan(x) ? narrow<__half>(e4m3_to_f32(x)) : e4m3_as_f16(x); // exact but NaN
#endif
    } else { // f16, bf16, 1-byte float targets: through float, as PyTorch does (f64, wide integers round twice)
        return narrow<Out>(static_cast<float>(working_value(x)));
    }
}

// ---- scaled casts: quantize and dequantize (docs/semantics.md, "Scaled casts") ----

// The largest finite value of each fp8 format, to which quantize() clamps.
template <typename Fp8> inline constexpr float kFp8Max = kSame<Fp8, F8E4M3> ? 448.0f : 57344.0f;

// p clamped to the fp8 format's finite range. NaN compares false, so it passes.
template <typename Fp8> __device__ __forceinline__ float clamp_to_finite(float p)
{
    p = p > kFp8Max<Fp8> ? kFp8Max<Fp8> : p;
    return p < -kFp8Max<Fp8> ? -kFp8Max<Fp8> : p;
}

// x in float times scale (one rounding), clamped to the format's finite range, then converted as
// convert() converts: a NaN product (the hardware's canonical NaN) becomes the format's positive
// NaN code.
template <typename Out, typename In> __device__ __forceinline__ Out quantize(In x, float scale)
{
    static_assert(kIsFp8<Out> && kIsFloat<In> && !kIsByteFloat<In>,
                  "ew::quantize: to f8e4m3 or f8e5m2 from f16, bf16, f32 or f64");
    return convert<Out>(clamp_to_finite<Out>(__fmul_rn(static_cast<float>(working_value(x)), scale)));
}

// q widened to float (exact), times scale_inv (one rounding), converted as convert() converts.
template <typename Out, typename In> __device__ __forceinline__ Out dequantize(In q, float scale_inv)
{
    static_assert(kIsFp8<In> && kIsFloat<Out> && !kIsByteFloat<Out>,
                  "ew::dequantize: from f8e4m3 or f8e5m2 to f16, bf16, f32 or f64");
    return convert<Out>(__fmul_rn(widen(q), scale_inv));
}

// ---- the ops: add, mul, relu, scale_add (docs/semantics.md §2-§4) ----
// Float arithmetic through the _rn intrinsics: the compiler never contracts them into a fused
// multiply-add, so a chain such as add(mul(a, b), c) rounds after each op as the catalogue's separate
// calls do, whatever -fmad says (NVRTC contracts by default). Alone, each is the plain instruction.

// Integer arithmetic without UB: unsigned, and at least 32 bits so small types are not promoted to int.
template <typename T> using Wrapping = Conditional<(sizeof(T) < 4), uint32_t, Unsigned<T>>;

// f64 results that are NaN: the first NaN operand, quieted, in the order given; else the hardware's
// default NaN. Explicit because the hardware's pick between two NaN operands depends on the operand
// order the compiler chose; the orders are PyTorch's (docs/semantics.md).
__device__ __forceinline__ double quiet_nan(double x)
{
    return __longlong_as_double(__double_as_longlong(x) | 0x0008000000000000ll);
}
template <typename... Operands>
__device__ __forceinline__ double propagate_nan(double result, Operands... operands)
{
    if (result == result)
        return result;
    double picked = result;
    bool found = false;
    ((!found && operands != operands ? (picked = quiet_nan(operands), found = true) : false), ...);
    return picked;
}

// A float's bits as an unsigned integer, and the bits of +infinity: magnitudes above it are NaN.
template <typename T> struct FloatBits;
template <> struct FloatBits<__half> {
    using Type = uint16_t;
    static constexpr Type kInfinity = 0x7C00;
};
template <> struct FloatBits<__nv_bfloat16> {
    using Type = uint16_t;
    static constexpr Type kInfinity = 0x7F80;
};
template <> struct FloatBits<float> {
    using Type = uint32_t;
    static constexpr Type kInfinity = 0x7F800000u;
};
template <> struct FloatBits<double> {
    using Type = uint64_t;
    static constexpr Type kInfinity = 0x7FF0000000000000ull;
};

template <typename T> __device__ __forceinline__ T add(T a, T b)
{
    static_assert(kIsDtype<T> && !kIsByteFloat<T>,
                  "ew::add takes every dtype but f8e4m3, f8e5m2 and f8e8m0 (docs/semantics.md, section 2)");
    if constexpr (kIsBool<T>)
        return Bool8{static_cast<uint8_t>((a.bits | b.bits) != 0)};
    else if constexpr (kIsInteger<T>)
        return static_cast<T>(static_cast<Wrapping<T>>(static_cast<Wrapping<T>>(a) + static_cast<Wrapping<T>>(b)));
    else if constexpr (kIsHalfLike<T>)
        return narrow<T>(__fadd_rn(widen(a), widen(b)));
    else if constexpr (kSame<T, double>)
        return propagate_nan(__dadd_rn(a, b), a, b);
    else
        return __fadd_rn(a, b);
}

template <typename T> __device__ __forceinline__ T mul(T a, T b)
{
    static_assert(kIsDtype<T> && !kIsByteFloat<T>,
                  "ew::mul takes every dtype but f8e4m3, f8e5m2 and f8e8m0 (docs/semantics.md, section 2)");
    if constexpr (kIsBool<T>)
        return Bool8{static_cast<uint8_t>(a.bits != 0 && b.bits != 0)};
    else if constexpr (kIsInteger<T>)
        return static_cast<T>(static_cast<Wrapping<T>>(static_cast<Wrapping<T>>(a) * static_cast<Wrapping<T>>(b)));
    else if constexpr (kIsHalfLike<T>)
        return narrow<T>(__fmul_rn(widen(a), widen(b)));
    else if constexpr (kSame<T, double>)
        return propagate_nan(__dmul_rn(a, b), b, a);
    else
        return __fmul_rn(a, b);
}

template <typename T> __device__ __forceinline__ T relu(T x)
{
    static_assert(
        kIsDtype<T> && !kIsByteFloat<T> && !kIsBool<T>,
        "ew::relu takes every dtype but bool, f8e4m3, f8e5m2 and f8e8m0 (docs/semantics.md, section 3)");
    if constexpr (kSame<T, uint8_t>) {
        return x;
    } else if constexpr (kIsInteger<T>) {
        return x > 0 ? x : T(0);
    } else {
        // On the bits, so a NaN passes with every bit unchanged and -0.0 becomes +0.0.
        using Bits = typename FloatBits<T>::Type;
        constexpr Bits sign = Bits(1) << (8 * sizeof(Bits) - 1);
        Bits bits;
        memcpy(&bits, &x, sizeof bits);
        const bool keep = !(bits & sign) || Bits(bits & ~sign) > FloatBits<T>::kInfinity; // positive or NaN
        bits = keep ? bits : Bits(0);
        memcpy(&x, &bits, sizeof bits);
        return x;
    }
}

// scale_add's alpha as the op computes with it: f64 keeps the double, other floats round it to float
// once, integers wrap it modulo 2^N, bool takes it as 0 or 1.
template <typename T, bool = kIsInteger<T>> struct AlphaOf {
    using Type = float;
};
template <> struct AlphaOf<double, false> {
    using Type = double;
};
template <> struct AlphaOf<Bool8, false> {
    using Type = uint32_t;
};
template <typename T> struct AlphaOf<T, true> {
    using Type = Wrapping<T>;
};
template <typename T> using AlphaType = typename AlphaOf<T>::Type;

// alpha·a + b with alpha already in the op's type (AlphaType<T>): the catalogue's ScaleAdd gets it from
// the host, where integer alphas were checked integral and in range (src/abi/api.c).
template <typename T> __device__ __forceinline__ T scale_add_by(AlphaType<T> alpha, T a, T b)
{
    static_assert(
        kIsDtype<T> && !kIsByteFloat<T>,
        "ew::scale_add takes every dtype but f8e4m3, f8e5m2 and f8e8m0 (docs/semantics.md, section 4)");
    if constexpr (kIsBool<T>)
        return Bool8{static_cast<uint8_t>(b.bits != 0 || (alpha != 0 && a.bits != 0))};
    else if constexpr (kIsInteger<T>)
        return static_cast<T>(static_cast<AlphaType<T>>(alpha * static_cast<AlphaType<T>>(a) + static_cast<AlphaType<T>>(b)));
    else if constexpr (kIsHalfLike<T>)
        return narrow<T>(__fmaf_rn(alpha, widen(a), widen(b)));
    else if constexpr (kSame<T, float>)
        return __fmaf_rn(alpha, a, b);
    else
        return propagate_nan(__fma_rn(alpha, a, b), b, a, alpha);
}

// A double alpha as AlphaType<T>, on the device: the host's conversion in the catalogue (RNE to float;
// for integers and bool the exact integer the call was checked to pass). A non-integral alpha, which
// the catalogue refuses, truncates toward zero here (saturating to int64, NaN as INT64_MIN), then
// wraps; bool takes any nonzero truncated alpha as 1.
template <typename T> __device__ __forceinline__ AlphaType<T> alpha_for(double alpha)
{
    if constexpr (kSame<T, double>)
        return alpha;
    else if constexpr (kIsFloat<T>)
        return __double2float_rn(alpha);
    else if constexpr (kIsBool<T>)
        return __double2ll_rz(alpha) != 0 ? 1u : 0u;
    else
        return static_cast<AlphaType<T>>(static_cast<uint64_t>(__double2ll_rz(alpha)));
}

template <typename T> __device__ __forceinline__ T scale_add(double alpha, T a, T b)
{
    return scale_add_by<T>(alpha_for<T>(alpha), a, b);
}

// ---- the user's view (run-time compiled kernels) ----
// A kernel's source sees bool where the storage is Bool8 (loaded as "nonzero"), and every other dtype
// as its storage type. ew::add, mul, relu, scale_add and cast<T> take and return the user's types.

template <typename T> struct UserType {
    using Storage = T;
    __device__ __forceinline__ static Storage to_storage(T x) { return x; }
    __device__ __forceinline__ static T from_storage(Storage x) { return x; }
};
template <> struct UserType<bool> {
    using Storage = Bool8;
    __device__ __forceinline__ static Storage to_storage(bool x) { return Bool8{static_cast<uint8_t>(x)}; }
    __device__ __forceinline__ static bool from_storage(Storage x) { return x.bits != 0; }
};
template <typename T> using StorageOf = typename UserType<T>::Storage;
// The user's type of a storage type (the catalogue's device types, src/catalogue/catalogue.h).
template <typename Storage> struct UserOfStorage {
    using Type = Storage;
};
template <> struct UserOfStorage<Bool8> {
    using Type = bool;
};
template <typename Storage> using UserOf = typename UserOfStorage<Storage>::Type;

__device__ __forceinline__ bool add(bool a, bool b) { return a || b; }
__device__ __forceinline__ bool mul(bool a, bool b) { return a && b; }
__device__ __forceinline__ bool scale_add(double alpha, bool a, bool b)
{
    return scale_add_by<Bool8>(alpha_for<Bool8>(alpha), Bool8{a}, Bool8{b}).bits != 0;
}

// x converted to To as ew_cast converts (docs/semantics.md §5), To and x of any dtype's user type.
template <typename To, typename From> __device__ __forceinline__ To cast(From x)
{
    static_assert(
        kIsDtype<StorageOf<To>> && kIsDtype<StorageOf<From>>,
        "ew::cast: both types must be dtypes: bool, int8_t, uint8_t, int16_t, int32_t, int64_t, __half, "
        "__nv_bfloat16, float, double, __nv_fp8_e4m3, __nv_fp8_e5m2, __nv_fp8_e8m0");
    return UserType<To>::from_storage(convert<StorageOf<To>>(UserType<From>::to_storage(x)));
}

} // namespace ew

#if defined(__CUDACC_RTC__)
__device__ __forceinline__ __half::operator float() const { return ew::widen(*this); }
__device__ __forceinline__ __nv_bfloat16::operator float() const { return ew::widen(*this); }
__device__ __forceinline__ ew::F8E4M3::operator float() const { return ew::widen(*this); }
__device__ __forceinline__ ew::F8E5M2::operator float() const { return ew::widen(*this); }
__device__ __forceinline__ ew::F8E8M0::operator float() const { return ew::widen(*this); }
typedef ew::F8E4M3 __nv_fp8_e4m3;
typedef ew::F8E5M2 __nv_fp8_e5m2;
typedef ew::F8E8M0 __nv_fp8_e8m0;

namespace ew {
// What a run-time compiled kernel's body returns: any dtype's value, converted to Out by ew::cast
// (so `return 0.01f * in0;` rounds the float once to an f16 output, and `return in0 > 0;` gives 0 or 1).
template <typename Out> struct Result {
    Out value;
    __device__ __forceinline__ Result() : value() {}
    template <typename T> __device__ __forceinline__ Result(T x) : value(cast<Out>(x)) {}
};

// A reduction output as a user kernel's body sees it: assigned (converted as ew::cast converts) or
// not; an element whose body leaves it unassigned adds nothing to the reduction.
template <typename T> struct Given {
    T value{};
    bool given = false;
    template <typename V> __device__ __forceinline__ Given &operator=(V v)
    {
        value = cast<T>(v);
        given = true;
        return *this;
    }
};
} // namespace ew
#endif
