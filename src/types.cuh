// SPDX-License-Identifier: Apache-2.0
// Storage types of the dtypes and the dtype -> type map (from src/catalogue.h) the dispatch table is
// built from.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "catalogue.h"

// The cc 8.9 conversion instructions (fp8x2 <-> f16x2, f32x2 -> fp8x2). A build with
// EW_GENERIC_CONVERSIONS (CMake option EW_GENERIC_CONVERSIONS) compiles the paths of older GPUs for
// every GPU, so that a newer one runs the same tests over them.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890 && !defined(EW_GENERIC_CONVERSIONS)
#define EW_HAS_FP8_CVT 1
#else
#define EW_HAS_FP8_CVT 0
#endif

namespace ew {

// Byte-sized types get their own wrappers so overloads never confuse bool, u8 and the fp8 formats;
// a bool byte may hold any value (nonzero reads as true), which C++ bool would not allow.
struct Bool8 {
    uint8_t bits;
};
struct F8E4M3 {
    uint8_t bits;
};
struct F8E5M2 {
    uint8_t bits;
};

// Second input of unary ops: no storage, never loaded.
struct NoInput {};

template <ew_dtype_t D> struct DtypeType;
#define EW_DTYPE_TYPE(value, name, type, size, kind) \
    template <> struct DtypeType<value> {           \
        using Type = type;                          \
        static_assert(sizeof(Type) == size);        \
    };
EW_CATALOGUE_DTYPES(EW_DTYPE_TYPE)
#undef EW_DTYPE_TYPE

template <ew_dtype_t D> using TypeOf = typename DtypeType<D>::Type;

template <typename T> inline constexpr bool kIsFp8 = std::is_same_v<T, F8E4M3> || std::is_same_v<T, F8E5M2>;
template <typename T>
inline constexpr bool kIsHalfLike = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
// Floating types that widen exactly to float.
template <typename T> inline constexpr bool kIsNarrowFloat = kIsHalfLike<T> || kIsFp8<T>;
template <typename T>
inline constexpr bool kIsFloat = kIsNarrowFloat<T> || std::is_same_v<T, float> || std::is_same_v<T, double>;
template <typename T> inline constexpr bool kIsBool = std::is_same_v<T, Bool8>;
template <typename T> inline constexpr bool kIsInteger = std::is_integral_v<T>;

template <typename T> inline constexpr size_t kStorageSize = std::is_same_v<T, NoInput> ? 1 : sizeof(T);

// The bytes of `from` as a To of the same size. Through memcpy, which compiles to register moves:
// cuda::std::bit_cast asks for trivially copyable types, which __half2 and friends are not.
template <typename To, typename From> __host__ __device__ __forceinline__ To bits_as(const From &from)
{
    static_assert(sizeof(To) == sizeof(From));
    To to;
    memcpy(&to, &from, sizeof to);
    return to;
}

} // namespace ew
