// SPDX-License-Identifier: Apache-2.0
// The dispatch table's rows: for each entry of the catalogue, its kernel set (src/launch/kernel_set.h), the
// kernel templates instantiated for the entry's functor, a slot per kernel a plan may pick.
#pragma once

#include <cstring>
#include <type_traits>
#include <utility>

#include "device/batched.cuh"
#include "device/bulk.cuh"
#include "device/direct.cuh"
#include "catalogue/functors.cuh"
#include "catalogue/sets.h"
#include "device/strided.cuh"

namespace ew {

// A compiled-in kernel's handles, found at its first launch: its context-independent handle (the
// driver launches it in whatever context is current) and the runtime's symbol.
template <auto Kernel> const ew_precompiled_kernel_t *precompiled()
{
    static const ew_precompiled_kernel_t found = [] {
        ew_precompiled_kernel_t k{nullptr, reinterpret_cast<const void *>(Kernel)};
        cudaKernel_t handle = nullptr;
        if (cudaGetKernel(&handle, reinterpret_cast<const void *>(Kernel)) == cudaSuccess)
            k.handle = handle;
        else
            cudaGetLastError();
        return k;
    }();
    return &found;
}
template <auto Kernel> constexpr ew_gpu_kernel_t compiled_in()
{
    return ew_gpu_kernel_t{nullptr, &precompiled<Kernel>};
}

// The functor of a call, built from its run-time values.
template <typename F> void make_functor(const ew_op_params_t *params, ew_functor_t *functor)
{
    static_assert(sizeof(F) <= sizeof(ew_functor_t) && alignof(F) <= alignof(ew_functor_t) &&
                  std::is_trivially_copyable_v<F>);
    const F f = F::make(*params);
    std::memcpy(functor->bytes, &f, sizeof f);
}

// One direct kernel per legal pack width, in runs of A packs an access at the widest where A > 1, the
// shifted-window (or out-shifted) kernel and the bulk-copy kernel at the widest; the strided and the
// list kernels at the widest. Empty where the catalogue lacks the entry.
template <typename F, bool Supported> constexpr ew_kernel_set_t make_kernel_set()
{
    ew_kernel_set_t set{};
    if constexpr (Supported) {
        constexpr int widest_pack = EW_PLAN_MAX_PACK(kWidestElement<F>);
        constexpr int A = EW_PLAN_ACCESS_PACKS(kWidestElement<F>);
        set.widest_pack = widest_pack;
        set.access_packs = A;
        set.block_table = kHasTable<F>;
        set.make_functor = &make_functor<F>;
        set.kernel[EW_SLOT_PACK1] = compiled_in<&EW_KERNEL_ALIGNED(F, 1)>();
        set.kernel[EW_SLOT_PACK2] = compiled_in<&EW_KERNEL_ALIGNED(F, 2)>();
        if constexpr (widest_pack >= 4)
            set.kernel[EW_SLOT_PACK4] = compiled_in<&EW_KERNEL_ALIGNED(F, 4)>();
        if constexpr (widest_pack >= 8)
            set.kernel[EW_SLOT_PACK8] = compiled_in<&EW_KERNEL_ALIGNED(F, 8)>();
        if constexpr (A > 1)
            set.kernel[EW_SLOT_RUNS] = compiled_in<&EW_KERNEL_RUNS(F, widest_pack, A)>();
        constexpr bool words_in = EW_PLAN_WHOLE_WORDS(widest_pack, kStorageSize<typename F::In1>) &&
                                  (std::is_same_v<typename F::In2, NoInput> ||
                                   EW_PLAN_WHOLE_WORDS(widest_pack, kStorageSize<typename F::In2>));
        constexpr int pointers = std::is_same_v<typename F::In2, NoInput> ? 2 : 3;
        set.kernel[EW_SLOT_BULK] = compiled_in<&EW_KERNEL_BULK(F, widest_pack)>();
        // An op without an output (its reduction alone) runs flat and in lists, on its input as out:
        // one phase.
        if constexpr (kWritesOut<F>) {
            if constexpr (EW_PLAN_SHIFTS_OUT(pointers, kStorageSize<typename F::Out>,
                                             kStorageSize<typename F::In1>))
                set.kernel[EW_SLOT_OUT_SHIFTED] = compiled_in<&EW_KERNEL_OUT_SHIFTED(F, widest_pack)>();
            else if constexpr (words_in)
                set.kernel[EW_SLOT_SHIFTED] = compiled_in<&EW_KERNEL_SHIFTED(F, widest_pack)>();
            set.kernel[EW_SLOT_GATHER] = compiled_in<&EW_KERNEL_GATHER(F, widest_pack)>();
            set.kernel[EW_SLOT_ROWS] = compiled_in<&EW_KERNEL_ROWS(F, widest_pack)>();
            set.kernel[EW_SLOT_TILED] = compiled_in<&EW_KERNEL_TILED(F, widest_pack)>();
        }
        set.kernel[EW_SLOT_BATCHED] = compiled_in<&EW_KERNEL_BATCHED(F, widest_pack)>();
#if CUDART_VERSION >= 12010 /* 32 KiB of kernel parameters */
        set.kernel[EW_SLOT_BATCHED_LARGE] = compiled_in<&EW_KERNEL_BATCHED_LARGE(F, widest_pack)>();
#endif
    }
    return set;
}

// Which dtypes each op takes as out and as input, and the kind of each dtype (src/catalogue/catalogue.h).
#define EW_OP_KINDS(value, name, call, functor, out_kinds, in_kinds) out_kinds,
inline constexpr unsigned kOpOutKinds[EW_OP_END] = {0, EW_CATALOGUE_OPS(EW_OP_KINDS)};
#undef EW_OP_KINDS
#define EW_OP_KINDS(value, name, call, functor, out_kinds, in_kinds) in_kinds,
inline constexpr unsigned kOpInKinds[EW_OP_END] = {0, EW_CATALOGUE_OPS(EW_OP_KINDS)};
#undef EW_OP_KINDS
#define EW_DTYPE_KIND(value, name, type, size, kind) kind,
inline constexpr unsigned kDtypeKind[EW_DTYPE_END] = {0, EW_CATALOGUE_DTYPES(EW_DTYPE_KIND)};
#undef EW_DTYPE_KIND

template <ew_op_t O> constexpr bool takes(size_t dtype) { return (kOpOutKinds[O] & kDtypeKind[dtype]) != 0; }
template <ew_op_t O> constexpr bool takes_in(size_t dtype) { return (kOpInKinds[O] & kDtypeKind[dtype]) != 0; }

// Row of an op over dtypes, indexed by the dtype's enum value (0 stays empty).
template <template <typename> class Op, ew_op_t O, size_t... D>
constexpr DispatchRow op_row(std::index_sequence<D...>)
{
    return DispatchRow{
        {ew_kernel_set_t{}, make_kernel_set<Op<TypeOf<static_cast<ew_dtype_t>(D + 1)>>, takes<O>(D + 1)>()...}};
}
template <template <typename> class Op, ew_op_t O> constexpr DispatchRow op_row()
{
    return op_row<Op, O>(std::make_index_sequence<EW_DTYPE_END - 1>{});
}

// Row of an op between two dtypes (the cast, the scaled casts) from one dtype, indexed by the target.
template <template <typename, typename> class Op, ew_op_t O, ew_dtype_t From, size_t... D>
constexpr DispatchRow pair_row(std::index_sequence<D...>)
{
    return DispatchRow{{ew_kernel_set_t{},
                        make_kernel_set<Op<TypeOf<static_cast<ew_dtype_t>(D + 1)>, TypeOf<From>>,
                                        takes<O>(D + 1) && takes_in<O>(From)>()...}};
}
template <template <typename, typename> class Op, ew_op_t O, ew_dtype_t From> constexpr DispatchRow pair_row()
{
    return pair_row<Op, O, From>(std::make_index_sequence<EW_DTYPE_END - 1>{});
}

} // namespace ew
