// SPDX-License-Identifier: Apache-2.0
// The block-scaled casts' functors and kernel sets (src/catalogue/dispatch.h's ew_dispatch_find_blocks):
// for each format, element dtype and the other side's dtype, the block kernel (src/device/blocks.cuh)
// with one access a thread and element by element.
#include "catalogue/dispatch.h"
#include "catalogue/sets.cuh"
#include "device/blocks.cuh"

namespace ew {

// The functors (src/device/blocks.cuh's kernels): the format (MX of Elem elements; NVFP4, Nv), the other
// side's type, and the call's values.
template <typename ElemT, typename InT, bool Nv> struct QuantizeBlocks {
    using Elem = ElemT;
    using In = InT;
    static constexpr int kBlock = EW_BLOCKS_BLOCK(Nv ? EW_BLOCKS_NVFP4 : EW_BLOCKS_MX);
    static constexpr bool kQuantize = true;
    const float *global_scale; // NVFP4; NULL: 1
    int round_up;              // MX: EW_BLOCKS_ROUND_UP
    static QuantizeBlocks make(const ew_op_params_t &params)
    {
        return {params.scale, (params.options & EW_BLOCKS_ROUND_UP) != 0};
    }

    __device__ __forceinline__ void scale(uint32_t key, uint32_t &byte, float &r) const
    {
        if constexpr (Nv)
            nvfp4_scale(key, global_scale != nullptr ? __ldg(global_scale) : 1.0f, byte, r);
        else
            mx_scale<Elem>(key, round_up != 0, byte, r);
    }
};

template <typename OutT, typename ElemT, bool Nv> struct DequantizeBlocks {
    using Out = OutT;
    using Elem = ElemT;
    static constexpr int kBlock = EW_BLOCKS_BLOCK(Nv ? EW_BLOCKS_NVFP4 : EW_BLOCKS_MX);
    static constexpr bool kQuantize = false;
    const float *global_scale;
    static DequantizeBlocks make(const ew_op_params_t &params) { return {params.scale}; }

    // The multiplier of a block's elements from its scale byte.
    __device__ __forceinline__ float scale(uint32_t byte) const
    {
        if constexpr (Nv) {
            const float s = widen(F8E4M3{static_cast<uint8_t>(byte)});
            return global_scale != nullptr ? __fmul_rn(__ldg(global_scale), s) : s;
        } else {
            return byte == 255u ? __uint_as_float(0x7FFFFFFFu) : pow2(static_cast<int>(byte) - 127);
        }
    }
};

namespace {

template <typename F> constexpr ew_kernel_set_t blocks_set()
{
    ew_kernel_set_t set{};
    set.make_functor = &make_functor<F>;
    set.kernel[EW_SLOT_BLOCKS] = compiled_in<&EW_KERNEL_BLOCKS(F, true)>();
    set.kernel[EW_SLOT_BLOCKS_ELEMENTS] = compiled_in<&EW_KERNEL_BLOCKS(F, false)>();
    return set;
}

// The other side's dtypes: f16, bf16, f32 (index 0-2).
inline constexpr ew_dtype_t kOther[] = {EW_F16, EW_BF16, EW_F32};

template <typename Elem, bool Nv> struct Sets {
    static constexpr ew_kernel_set_t quantize[3] = {blocks_set<QuantizeBlocks<Elem, __half, Nv>>(),
                                                    blocks_set<QuantizeBlocks<Elem, __nv_bfloat16, Nv>>(),
                                                    blocks_set<QuantizeBlocks<Elem, float, Nv>>()};
    static constexpr ew_kernel_set_t dequantize[3] = {blocks_set<DequantizeBlocks<__half, Elem, Nv>>(),
                                                      blocks_set<DequantizeBlocks<__nv_bfloat16, Elem, Nv>>(),
                                                      blocks_set<DequantizeBlocks<float, Elem, Nv>>()};
};

template <typename Elem, bool Nv> const ew_kernel_set_t *find(int quantize, ew_dtype_t other)
{
    for (int i = 0; i < 3; ++i)
        if (kOther[i] == other)
            return quantize ? &Sets<Elem, Nv>::quantize[i] : &Sets<Elem, Nv>::dequantize[i];
    return nullptr;
}

} // namespace
} // namespace ew

const ew_kernel_set_t *ew_dispatch_find_blocks(int quantize, ew_block_format_t format, ew_dtype_t elem,
                                               ew_dtype_t other)
{
    if (format == EW_BLOCKS_MX) {
        if (elem == EW_F8E4M3)
            return ew::find<ew::F8E4M3, false>(quantize, other);
        if (elem == EW_F8E5M2)
            return ew::find<ew::F8E5M2, false>(quantize, other);
        if (elem == EW_F4E2M1)
            return ew::find<ew::F4E2M1, false>(quantize, other);
    } else if (format == EW_BLOCKS_NVFP4 && elem == EW_F4E2M1) {
        return ew::find<ew::F4E2M1, true>(quantize, other);
    }
    return nullptr;
}
