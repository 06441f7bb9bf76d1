// Storage types of the 12 dtypes and the dtype -> type map the dispatch table is built from.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "elementwise.h"

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
#define EW_DTYPE_TYPE(dtype, type)        \
    template <> struct DtypeType<dtype> { \
        using Type = type;                \
    };
EW_DTYPE_TYPE(EW_BOOL, Bool8)
EW_DTYPE_TYPE(EW_I8, int8_t)
EW_DTYPE_TYPE(EW_U8, uint8_t)
EW_DTYPE_TYPE(EW_I16, int16_t)
EW_DTYPE_TYPE(EW_I32, int32_t)
EW_DTYPE_TYPE(EW_I64, int64_t)
EW_DTYPE_TYPE(EW_F16, __half)
EW_DTYPE_TYPE(EW_BF16, __nv_bfloat16)
EW_DTYPE_TYPE(EW_F32, float)
EW_DTYPE_TYPE(EW_F64, double)
EW_DTYPE_TYPE(EW_F8E4M3, F8E4M3)
EW_DTYPE_TYPE(EW_F8E5M2, F8E5M2)
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
