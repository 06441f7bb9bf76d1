// SPDX-License-Identifier: Apache-2.0
// The block-scaled casts (docs/semantics.md, "Block-scaled casts"): each block of 16 or 32 elements
// along a row gets one scale from its max |x|, every element is scaled, saturated and rounded. A
// thread takes a vector of one access (src/plan/blocks.h); a block's vectors sit on consecutive lanes
// of one warp, which combine their maxima by shuffles, so one pass reads x once and writes the
// elements and the scales. Dequantize reads each element's block scale beside it. The functors that
// carry a call's format and values are src/catalogue/blocks.cu's; a kernel asks of F its types, its
// block, kQuantize and scale().
#pragma once

#include "device/dependent.cuh"
#include "device/ew_ops.cuh"
#include "plan/blocks.h"

namespace ew {

// float4 e2m1 (EW_F4E2M1), two to a byte: a tag for the element type; its codes travel as integers.
struct F4E2M1 {};

// 2^e as a float for e in [-149, 127], exactly (subnormal below -126).
__device__ __forceinline__ float pow2(int e)
{
    return e >= -126 ? __uint_as_float(static_cast<uint32_t>(e + 127) << 23) : __uint_as_float(1u << (e + 149));
}

// f32 to e2m1, round to nearest even over 0, 0.5, 1, 1.5, 2, 3, 4, 6 (each comparison one boundary,
// ties to the even code), |t| >= 6 to 6; the sign from t's bit. A NaN becomes code 4, as the
// reference's bit arithmetic makes it.
__device__ __forceinline__ uint32_t f32_to_e2m1(float t)
{
    const uint32_t bits = __float_as_uint(t);
    const uint32_t sign = (bits >> 28) & 0x8u;
    const float a = __uint_as_float(bits & 0x7FFFFFFFu);
    if (a != a)
        return 0x4u | sign;
    const uint32_t code = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
    return code | sign;
}

__device__ __forceinline__ float e2m1_to_f32(uint32_t code)
{
    const uint32_t magnitude = code & 0x7u;
    // 0, 0.5, 1, 1.5 are magnitude / 2; from 2 on, 2^(e-1) * (1 + m/2)
    const float value = magnitude < 4u ? 0.5f * static_cast<float>(magnitude)
                                       : pow2(static_cast<int>(magnitude >> 1) - 1) * (1.0f + 0.5f * (magnitude & 1u));
    return (code & 0x8u) ? -value : value;
}

// The element formats: largest finite value, the exponent of its leading power of two (emax, for the
// OCP scale), bits, and the code of a value already clamped to [-max, max].
template <typename Elem> struct BlockElement;
template <> struct BlockElement<F8E4M3> {
    static constexpr float kMax = 448.0f;
    static constexpr int kEmax = 8, kBits = 8;
    __device__ static uint32_t encode(float t) { return convert<F8E4M3>(t).bits; }
    __device__ static float decode(uint32_t code) { return widen(F8E4M3{static_cast<uint8_t>(code)}); }
};
template <> struct BlockElement<F8E5M2> {
    static constexpr float kMax = 57344.0f;
    static constexpr int kEmax = 15, kBits = 8;
    __device__ static uint32_t encode(float t) { return convert<F8E5M2>(t).bits; }
    __device__ static float decode(uint32_t code) { return widen(F8E5M2{static_cast<uint8_t>(code)}); }
};
template <> struct BlockElement<F4E2M1> {
    static constexpr float kMax = 6.0f;
    static constexpr int kEmax = 2, kBits = 4;
    __device__ static uint32_t encode(float t) { return f32_to_e2m1(t); }
    __device__ static float decode(uint32_t code) { return e2m1_to_f32(code); }
};

// t clamped to [-max, max]; NaN passes (it compares false).
template <typename Elem> __device__ __forceinline__ float clamp_element(float t)
{
    constexpr float kMax = BlockElement<Elem>::kMax;
    t = t > kMax ? kMax : t;
    return t < -kMax ? -kMax : t;
}

// A block's scale byte and its elements' multiplier r from the block's max |v| as a key (|v|'s bits;
// above 0x7F800000 a NaN), by the format's rules.
template <typename Elem> __device__ __forceinline__ void mx_scale(uint32_t key, bool round_up, uint32_t &byte, float &r)
{
    constexpr int kEmax = BlockElement<Elem>::kEmax;
    if (!round_up) { // OCP: the floor of amax's exponent less emax; elements divided by 2^(s-127)
        if (key > 0x7F800000u) {
            byte = 255u;
            r = 0.0f; // division by the reference's scale 255 << 23 = +inf
            return;
        }
        const int s = max(static_cast<int>(key >> 23) - kEmax, 0);
        byte = static_cast<uint32_t>(s);
        r = pow2(s == 0 ? 126 : 127 - s); // s = 0: the reference's scale clamped to 2^-126
        return;
    }
    // RCEIL: the smallest power of two >= amax * f32(1 / max), elements multiplied by its inverse
    constexpr float kInverseMax = 1.0f / BlockElement<Elem>::kMax;
    const float d = __fmul_rn(__uint_as_float(key), kInverseMax);
    const uint32_t bits = __float_as_uint(d);
    if (bits > 0x7F800000u) {
        byte = 255u;
        r = d;
        return;
    }
    if (bits == 0x7F800000u) {
        byte = 254u;
        r = pow2(-127);
        return;
    }
    const int exponent = static_cast<int>(bits >> 23), mantissa = static_cast<int>(bits & 0x7FFFFFu);
    const int s = exponent == 0 ? (mantissa > 0x400000 ? 1 : 0) : min(exponent + (mantissa != 0), 254);
    byte = static_cast<uint32_t>(s);
    r = s == 0 ? 1.0f : pow2(127 - s);
}

// NVFP4: the e4m3 block scale (amax / 6) / g, clamped to [2^-6, 448]; r = (1 / g) / scale.
__device__ __forceinline__ void nvfp4_scale(uint32_t key, float g, uint32_t &byte, float &r)
{
    constexpr float kInverseMax = 1.0f / 6.0f;
    float c = __fdiv_rn(__fmul_rn(__uint_as_float(key), kInverseMax), g);
    c = c < 0.015625f ? 0.015625f : c;
    c = c > 448.0f ? 448.0f : c;
    byte = convert<F8E4M3>(c).bits;
    r = __fdiv_rn(__fdiv_rn(1.0f, g), widen(F8E4M3{static_cast<uint8_t>(byte)}));
}

// Where block b (row-major: row * row_blocks + k) keeps its scale: at b, or in cuBLASLt's 128 x 4 tiles.
__device__ __forceinline__ int64_t scale_offset(const ew_blocks_plan_t &plan, int64_t b)
{
    if (plan.tile_cols == 0)
        return b;
    const int64_t row = b / plan.row_blocks, k = b - row * plan.row_blocks;
    return ((row / 128) * plan.tile_cols + k / 4) * 512 + (row % 32) * 16 + (row % 128) / 32 * 4 + k % 4;
}

// An unsigned integer of N bytes, for a vector's one access.
template <int N> struct Word;
template <> struct Word<1> { using Type = uint8_t; };
template <> struct Word<2> { using Type = uint16_t; };
template <> struct Word<4> { using Type = uint32_t; };
template <> struct Word<8> { using Type = uint64_t; };
template <> struct Word<16> { using Type = uint4; };

// N values of T at p: one access of all N where Vectorized (p aligned to it), else one by one.
template <typename T, int N, bool Vectorized> __device__ __forceinline__ void load_vector(const T *p, T (&v)[N])
{
    if constexpr (Vectorized) {
        const auto word = __ldg(reinterpret_cast<const typename Word<sizeof v>::Type *>(p));
        memcpy(v, &word, sizeof v);
    } else {
#pragma unroll
        for (int k = 0; k < N; ++k)
            v[k] = p[k];
    }
}
template <typename T, int N, bool Vectorized> __device__ __forceinline__ void store_vector(T *p, const T (&v)[N])
{
    if constexpr (Vectorized) {
        typename Word<sizeof v>::Type word;
        memcpy(&word, v, sizeof v);
        *reinterpret_cast<typename Word<sizeof v>::Type *>(p) = word;
    } else {
#pragma unroll
        for (int k = 0; k < N; ++k)
            p[k] = v[k];
    }
}

// V elements of T at vector i, widened to float.
template <typename T, int V, bool Vectorized> __device__ __forceinline__ void load_floats(const void *base, int64_t i, float (&v)[V])
{
    T e[V];
    load_vector<T, V, Vectorized>(static_cast<const T *>(base) + i * V, e);
#pragma unroll
    for (int k = 0; k < V; ++k)
        v[k] = static_cast<float>(working_value(e[k]));
}

// V codes of Elem at vector i into or out of memory: bytes, or nibbles two to a byte (element 2j low).
template <typename Elem, int V> inline constexpr int kCodeBytes = V * BlockElement<Elem>::kBits / 8;
template <typename Elem, int V, bool Vectorized> __device__ __forceinline__ void store_codes(void *base, int64_t i, const uint32_t (&c)[V])
{
    constexpr int kBytes = kCodeBytes<Elem, V>;
    uint8_t bytes[kBytes];
#pragma unroll
    for (int j = 0; j < kBytes; ++j)
        bytes[j] = BlockElement<Elem>::kBits == 8 ? c[j] : c[2 * j] | c[2 * j + 1] << 4;
    store_vector<uint8_t, kBytes, Vectorized>(static_cast<uint8_t *>(base) + i * kBytes, bytes);
}
template <typename Elem, int V, bool Vectorized> __device__ __forceinline__ void load_codes(const void *base, int64_t i, uint32_t (&c)[V])
{
    constexpr int kBytes = kCodeBytes<Elem, V>;
    uint8_t bytes[kBytes];
    load_vector<uint8_t, kBytes, Vectorized>(static_cast<const uint8_t *>(base) + i * kBytes, bytes);
#pragma unroll
    for (int k = 0; k < V; ++k)
        c[k] = BlockElement<Elem>::kBits == 8 ? bytes[k] : (bytes[k / 2] >> (4 * (k % 2))) & 0xFu;
}

// Quantize: a thread a vector; the lanes of a block combine their keys, the first writes the scale.
// Every thread of a block of the grid runs the same iterations (the loop's test is the block's), so
// that the shuffles find every lane; lanes past the end carry zeros and store nothing.
template <typename F, bool Vectorized>
__device__ __forceinline__ void quantize_blocks(const F &f, const ew_blocks_plan_t &plan, void *out, uint8_t *scales,
                                                const void *x)
{
    constexpr int V = EW_BLOCKS_VECTOR(sizeof(typename F::In), F::kBlock), G = F::kBlock / V;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * EW_PLAN_BLOCK_THREADS;
    for (int64_t first = static_cast<int64_t>(blockIdx.x) * EW_PLAN_BLOCK_THREADS; first < plan.vectors; first += stride) {
        const int64_t i = first + threadIdx.x;
        const bool active = i < plan.vectors;
        float v[V] = {};
        if (active)
            load_floats<typename F::In, V, Vectorized>(x, i, v);
        uint32_t key = 0;
#pragma unroll
        for (int k = 0; k < V; ++k)
            key = max(key, __float_as_uint(v[k]) & 0x7FFFFFFFu);
#pragma unroll
        for (int lane = G / 2; lane > 0; lane /= 2)
            key = max(key, __shfl_xor_sync(0xFFFFFFFFu, key, lane));
        uint32_t byte;
        float r;
        f.scale(key, byte, r);
        if (!active)
            continue;
        uint32_t c[V];
#pragma unroll
        for (int k = 0; k < V; ++k)
            c[k] = BlockElement<typename F::Elem>::encode(clamp_element<typename F::Elem>(__fmul_rn(v[k], r)));
        store_codes<typename F::Elem, V, Vectorized>(out, i, c);
        if (i % G == 0)
            scales[scale_offset(plan, i / G)] = static_cast<uint8_t>(byte);
    }
}

// Dequantize: a thread a vector of out, its block's scale read beside it.
template <typename F, bool Vectorized>
__device__ __forceinline__ void dequantize_blocks(const F &f, const ew_blocks_plan_t &plan, void *out,
                                                  const uint8_t *scales, const void *q)
{
    using Out = typename F::Out;
    constexpr int V = EW_BLOCKS_VECTOR(sizeof(Out), F::kBlock), G = F::kBlock / V;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * EW_PLAN_BLOCK_THREADS;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * EW_PLAN_BLOCK_THREADS + threadIdx.x; i < plan.vectors; i += stride) {
        const float s = f.scale(__ldg(scales + scale_offset(plan, i / G)));
        uint32_t c[V];
        load_codes<typename F::Elem, V, Vectorized>(q, i, c);
        Out o[V];
#pragma unroll
        for (int k = 0; k < V; ++k)
            o[k] = convert<Out>(__fmul_rn(BlockElement<typename F::Elem>::decode(c[k]), s));
        store_vector<Out, V, Vectorized>(static_cast<Out *>(out) + i * V, o);
    }
}

// The kernel of both: quantize writes the scales, dequantize reads them.
template <typename F, bool Vectorized>
__global__ void __launch_bounds__(EW_PLAN_BLOCK_THREADS)
    blocks_kernel(F f, ew_blocks_plan_t plan, void *out, const void *scales, const void *in)
{
    follow_previous_grid();
    if constexpr (F::kQuantize)
        quantize_blocks<F, Vectorized>(f, plan, out, static_cast<uint8_t *>(const_cast<void *>(scales)), in);
    else
        dequantize_blocks<F, Vectorized>(f, plan, out, static_cast<const uint8_t *>(scales), in);
}

} // namespace ew
