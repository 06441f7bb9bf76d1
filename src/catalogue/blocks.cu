// SPDX-License-Identifier: Apache-2.0
// The block-scaled casts' kernel sets (src/catalogue/dispatch.h's ew_dispatch_find_blocks): for each
// format, element dtype and the other side's dtype, the block kernel with one access a thread and
// element by element (src/device/blocks.cuh).
#include "catalogue/dispatch.h"
#include "catalogue/sets.cuh"
#include "device/blocks.cuh"

namespace ew {
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
