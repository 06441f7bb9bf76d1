// SPDX-License-Identifier: Apache-2.0
// cub-peer: the cases of ew-bench-catalogue run by CUB's cub::DeviceTransform::Transform (CCCL, shipped
// with the CUDA toolkit), with functors whose results are bit-identical to libelementwise's
// (docs/semantics.md), on the same rotating-slice pools with the same timing method: the sweep
// (bench/sweep.c) is shared with ew-bench-catalogue, so only the code that runs the op differs, in both
// of its columns: back-to-back and isolated calls (CUB launches in plain stream order, so one call
// serves both; the sweep records an event between isolated calls and holds the stream until each batch
// is queued). Every case is spot-checked bit for bit against the same CPU reference; the selected cases
// CUB does not cover get CSV rows marked unsupported. --host-overhead times CUB's call against a raw
// <<<>>> launch. --help lists options.
//
// Covered: add, mul, scale_add on bool and every integer and float dtype but fp8; relu on the same but
// bool; casts f32<->f16, f32<->bf16, f64->f32, u8->f32, i32->f64. Other entries are skipped.
#include <cub/device/device_transform.cuh>
#include <cuda/std/tuple>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>
#include <type_traits>

#include "sweep.h"

namespace
{

// A bool byte: any nonzero value reads as true; outputs are 0 or 1 (C++ bool could not hold 0xA5).
struct Bool8 {
    uint8_t bits;
};

template <ew_dtype_t D> struct DtypeType;
template <> struct DtypeType<EW_BOOL> {
    using Type = Bool8;
};
template <> struct DtypeType<EW_I8> {
    using Type = int8_t;
};
template <> struct DtypeType<EW_U8> {
    using Type = uint8_t;
};
template <> struct DtypeType<EW_I16> {
    using Type = int16_t;
};
template <> struct DtypeType<EW_I32> {
    using Type = int32_t;
};
template <> struct DtypeType<EW_I64> {
    using Type = int64_t;
};
template <> struct DtypeType<EW_F16> {
    using Type = __half;
};
template <> struct DtypeType<EW_BF16> {
    using Type = __nv_bfloat16;
};
template <> struct DtypeType<EW_F32> {
    using Type = float;
};
template <> struct DtypeType<EW_F64> {
    using Type = double;
};
template <ew_dtype_t D> using TypeOf = typename DtypeType<D>::Type;

template <typename T>
inline constexpr bool kIsHalfLike = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
template <typename T> inline constexpr bool kIsBool = std::is_same_v<T, Bool8>;
// Integer arithmetic that wraps without UB: unsigned, at least 32 bits so small types are not promoted.
template <typename T> using Wrapping = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

template <typename T> __device__ __forceinline__ float widen(T x)
{
    if constexpr (std::is_same_v<T, __half>)
        return __half2float(x);
    else
        return __bfloat162float(x);
}
template <typename T> __device__ __forceinline__ T narrow(float x)
{
    if constexpr (std::is_same_v<T, __half>)
        return __float2half_rn(x);
    else
        return __float2bfloat16_rn(x);
}

template <typename T> struct AddOp {
    __device__ __forceinline__ T operator()(T a, T b) const
    {
        if constexpr (kIsBool<T>)
            return Bool8{static_cast<uint8_t>((a.bits | b.bits) != 0)};
        else if constexpr (std::is_integral_v<T>)
            return static_cast<T>(
                static_cast<Wrapping<T>>(static_cast<Wrapping<T>>(a) + static_cast<Wrapping<T>>(b)));
        else if constexpr (kIsHalfLike<T>)
            return __hadd(a, b); // one rounding of the exact sum, NaN 0x7FFF: as the library
        else
            return a + b;
    }
};

template <typename T> struct MulOp {
    __device__ __forceinline__ T operator()(T a, T b) const
    {
        if constexpr (kIsBool<T>)
            return Bool8{static_cast<uint8_t>(a.bits != 0 && b.bits != 0)};
        else if constexpr (std::is_integral_v<T>)
            return static_cast<T>(
                static_cast<Wrapping<T>>(static_cast<Wrapping<T>>(a) * static_cast<Wrapping<T>>(b)));
        else if constexpr (kIsHalfLike<T>)
            return __hmul(a, b);
        else
            return a * b;
    }
};

template <typename T> struct ReluOp {
    __device__ __forceinline__ T operator()(T x) const
    {
        if constexpr (std::is_same_v<T, uint8_t>) {
            return x;
        } else if constexpr (std::is_integral_v<T>) {
            return x > 0 ? x : T(0);
        } else if constexpr (kIsHalfLike<T>) {
            // Keep the bits when the sign is clear or the value is NaN; else +0.
            constexpr unsigned infinity = std::is_same_v<T, __half> ? 0x7C00u : 0x7F80u;
            const unsigned short bits = *reinterpret_cast<const unsigned short *>(&x);
            const bool keep = !(bits & 0x8000u) || (bits & 0x7FFFu) > infinity;
            const unsigned short result = keep ? bits : 0;
            return *reinterpret_cast<const T *>(&result);
        } else {
            return x != x ? x : (x > 0 ? x : T(0));
        }
    }
};

template <typename T, typename = void> struct AlphaOf {
    using Type = float;
};
template <> struct AlphaOf<double> {
    using Type = double;
};
template <> struct AlphaOf<Bool8> {
    using Type = uint32_t;
};
template <typename T> struct AlphaOf<T, std::enable_if_t<std::is_integral_v<T>>> {
    using Type = Wrapping<T>;
};

template <typename T> struct ScaleAddOp {
    using Alpha = typename AlphaOf<T>::Type;
    Alpha alpha;
    __device__ __forceinline__ T operator()(T a, T b) const
    {
        if constexpr (kIsBool<T>)
            return Bool8{static_cast<uint8_t>(b.bits != 0 || (alpha != 0 && a.bits != 0))};
        else if constexpr (std::is_integral_v<T>)
            return static_cast<T>(static_cast<Alpha>(alpha * static_cast<Alpha>(a) + static_cast<Alpha>(b)));
        else if constexpr (kIsHalfLike<T>)
            return narrow<T>(__fmaf_rn(alpha, widen(a), widen(b)));
        else if constexpr (std::is_same_v<T, float>)
            return __fmaf_rn(alpha, a, b);
        else
            return __fma_rn(alpha, a, b);
    }
};
template <typename T> ScaleAddOp<T> make_scale_add(double alpha)
{
    using Alpha = typename ScaleAddOp<T>::Alpha;
    if constexpr (std::is_integral_v<Alpha>) // integers and bool: alpha is an exact integer of the dtype
        return {static_cast<Alpha>(static_cast<int64_t>(alpha))};
    else
        return {static_cast<Alpha>(alpha)};
}

template <typename Out, typename In> struct CastOp {
    __device__ __forceinline__ Out operator()(In x) const
    {
        if constexpr (std::is_same_v<In, float> && kIsHalfLike<Out>) {
            return narrow<Out>(x); // RNE, overflow to inf, NaN 0x7FFF
        } else if constexpr (std::is_same_v<In, __half> && std::is_same_v<Out, float>) {
            const float f = __half2float(x);
            return f != f ? __int_as_float(0x7FFFFFFF) : f;
        } else if constexpr (std::is_same_v<In, __nv_bfloat16> && std::is_same_v<Out, float>) {
            return __bfloat162float(x); // exact, NaN bits kept
        } else if constexpr (std::is_same_v<In, double> && std::is_same_v<Out, float>) {
            if (x != x) { // sign kept, quiet bit set, top 23 mantissa bits kept
                const unsigned long long bits = static_cast<unsigned long long>(__double_as_longlong(x));
                return __uint_as_float(static_cast<unsigned>(bits >> 32 & 0x80000000u) | 0x7FC00000u |
                                       static_cast<unsigned>(bits >> 29 & 0x7FFFFFu));
            }
            return __double2float_rn(x);
        } else {
            static_assert(std::is_integral_v<In> && std::is_floating_point_v<Out>, "pair not covered");
            return static_cast<Out>(x); // u8 -> f32 and i32 -> f64 are exact
        }
    }
};

using Launch = cudaError_t (*)(int64_t n, void *out, const void *a, const void *b, double alpha,
                               cudaStream_t stream);

template <typename T, template <typename> class Op>
cudaError_t launch_binary(int64_t n, void *out, const void *a, const void *b, double, cudaStream_t stream)
{
    return cub::DeviceTransform::Transform(
        cuda::std::make_tuple(static_cast<const T *>(a), static_cast<const T *>(b)), static_cast<T *>(out), n,
        Op<T>{}, stream);
}

template <typename T>
cudaError_t launch_scale_add(int64_t n, void *out, const void *a, const void *b, double alpha,
                             cudaStream_t stream)
{
    return cub::DeviceTransform::Transform(
        cuda::std::make_tuple(static_cast<const T *>(a), static_cast<const T *>(b)), static_cast<T *>(out), n,
        make_scale_add<T>(alpha), stream);
}

template <typename Out, typename In, typename Op>
cudaError_t launch_unary(int64_t n, void *out, const void *a, const void *, double, cudaStream_t stream)
{
    return cub::DeviceTransform::Transform(static_cast<const In *>(a), static_cast<Out *>(out), n, Op{},
                                           stream);
}

enum { kOpEnd = EW_OP_SCALE_ADD + 1, kDtypeEnd = EW_F8E5M2 + 1 };
Launch table[kOpEnd][kDtypeEnd][kDtypeEnd];

template <ew_dtype_t D> void register_dtype()
{
    using T = TypeOf<D>;
    table[EW_OP_ADD][D][D] = &launch_binary<T, AddOp>;
    table[EW_OP_MUL][D][D] = &launch_binary<T, MulOp>;
    table[EW_OP_SCALE_ADD][D][D] = &launch_scale_add<T>;
    if constexpr (!kIsBool<T>)
        table[EW_OP_RELU][D][D] = &launch_unary<T, T, ReluOp<T>>;
}

template <ew_dtype_t Out, ew_dtype_t In> void register_cast()
{
    table[EW_OP_CAST][Out][In] = &launch_unary<TypeOf<Out>, TypeOf<In>, CastOp<TypeOf<Out>, TypeOf<In>>>;
}

void register_all()
{
    register_dtype<EW_BOOL>();
    register_dtype<EW_I8>();
    register_dtype<EW_U8>();
    register_dtype<EW_I16>();
    register_dtype<EW_I32>();
    register_dtype<EW_I64>();
    register_dtype<EW_F16>();
    register_dtype<EW_BF16>();
    register_dtype<EW_F32>();
    register_dtype<EW_F64>();
    register_cast<EW_F16, EW_F32>();
    register_cast<EW_F32, EW_F16>();
    register_cast<EW_BF16, EW_F32>();
    register_cast<EW_F32, EW_BF16>();
    register_cast<EW_F32, EW_F64>();
    register_cast<EW_F32, EW_U8>();
    register_cast<EW_F64, EW_I32>();
}

Launch find(const ewb_entry_t *e)
{
    const int op = e->op, out = e->out, in = e->in;
    if (op <= 0 || op >= kOpEnd || out <= 0 || out >= kDtypeEnd || in <= 0 || in >= kDtypeEnd)
        return nullptr;
    return table[op][out][in];
}

int supports(void *, const ewb_entry_t *e) { return find(e) != nullptr; }

int call(void *, const ewb_entry_t *e, int64_t n, void *out, const void *a, const void *b,
         cudaStream_t stream)
{
    const cudaError_t error = find(e)(n, out, a, b, ewb_alpha(e->out), stream);
    if (error == cudaSuccess)
        return 0;
    std::fprintf(stderr, "cub::DeviceTransform::Transform: %s\n", cudaGetErrorName(error));
    return -1;
}

int host_cub(void *, int64_t n, float *out, const float *a, const float *b, cudaStream_t stream)
{
    return launch_binary<float, AddOp>(n, out, a, b, 0, stream) == cudaSuccess ? 0 : -1;
}

__global__ void raw_add_f32(float *out, const float *a, const float *b, int64_t n)
{
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a[i] + b[i];
}

int host_chevron(void *, int64_t n, float *out, const float *a, const float *b, cudaStream_t stream)
{
    raw_add_f32<<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(out, a, b, n);
    return cudaPeekAtLastError() == cudaSuccess ? 0 : -1;
}

} // namespace

int main(int argc, char **argv)
{
    register_all();
    ewb_impl_t impl{};
    impl.name = "cub";
    impl.memcpy_name = "memcpy_cub";
    impl.supports = supports;
    impl.call = call;
    impl.call_isolated = nullptr; // plain stream order already: the same call in both columns
    impl.host[0] = {"cub", host_cub, nullptr};
    impl.host[1] = {"raw_chevron", host_chevron, nullptr};
    impl.host[2] = {"raw_cub", ewb_raw_launch_add_f32, nullptr};
    return ewb_main(argc, argv, &impl);
}
