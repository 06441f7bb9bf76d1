// SPDX-License-Identifier: Apache-2.0
// The dispatch table's rows: for each entry of the catalogue, a launcher slot per kernel the plan
// may pick, each a launch function of src/launch.cuh instantiated for the entry's functor.
#pragma once

#include <type_traits>
#include <utility>

#include "batched.cuh"
#include "functors.cuh"
#include "launch.cuh"
#include "rows.h"
#include "strided.cuh"

namespace ew {

// One kernel per legal pack width, the shifted-window (or out-shifted) kernel and the bulk-copy kernel for
// the widest: a launcher slot per plan.kernel (ew_launcher_pick).
// Empty where the catalogue lacks the entry.
template <typename F, bool Supported> constexpr ew_launcher_t make_launcher()
{
    ew_launcher_t launcher{};
    if constexpr (Supported) {
        constexpr int widest_pack = EW_PLAN_MAX_PACK(kWidestElement<F>);
        launcher.by_pack[0] = &launch<F, 1, Window::Aligned>;
        launcher.by_pack[1] = &launch<F, 2, Window::Aligned>;
        if constexpr (widest_pack >= 4)
            launcher.by_pack[2] = &launch<F, 4, Window::Aligned>;
        if constexpr (widest_pack >= 8)
            launcher.by_pack[3] = &launch<F, 8, Window::Aligned>;
        constexpr bool words_in = EW_PLAN_WHOLE_WORDS(widest_pack, kStorageSize<typename F::In1>) &&
                                  (std::is_same_v<typename F::In2, NoInput> ||
                                   EW_PLAN_WHOLE_WORDS(widest_pack, kStorageSize<typename F::In2>));
        constexpr int pointers = std::is_same_v<typename F::In2, NoInput> ? 2 : 3;
        if constexpr (EW_PLAN_SHIFTS_OUT(pointers, kStorageSize<typename F::Out>,
                                         kStorageSize<typename F::In1>))
            launcher.out_shifted = &launch<F, widest_pack, Window::OutShifted>;
        else if constexpr (words_in)
            launcher.shifted = &launch<F, widest_pack, Window::Shifted>;
        launcher.bulk = &launch_bulk<F, widest_pack>;
        launcher.gather = &launch_gather<F, widest_pack>;
        launcher.rows = &launch_rows<F, widest_pack>;
        launcher.tiled = &launch_tiled<F>;
        launcher.batched = &launch_batched<F, widest_pack>;
        launcher.block_table = kHasTable<F>;
    }
    return launcher;
}

// Which dtypes each op takes, and the kind of each dtype (src/catalogue.h).
#define EW_OP_KINDS(value, name, call, functor, kinds) kinds,
inline constexpr unsigned kOpKinds[EW_OP_END] = {0, EW_CATALOGUE_OPS(EW_OP_KINDS)};
#undef EW_OP_KINDS
#define EW_DTYPE_KIND(value, name, type, size, kind) kind,
inline constexpr unsigned kDtypeKind[EW_DTYPE_END] = {0, EW_CATALOGUE_DTYPES(EW_DTYPE_KIND)};
#undef EW_DTYPE_KIND

template <ew_op_t O> constexpr bool takes(size_t dtype) { return (kOpKinds[O] & kDtypeKind[dtype]) != 0; }

// Row of an op over dtypes, indexed by the dtype's enum value (0 stays empty).
template <template <typename> class Op, ew_op_t O, size_t... D>
constexpr DispatchRow op_row(std::index_sequence<D...>)
{
    return DispatchRow{{ew_launcher_t{}, make_launcher<Op<TypeOf<static_cast<ew_dtype_t>(D + 1)>>, takes<O>(D + 1)>()...}};
}
template <template <typename> class Op, ew_op_t O> constexpr DispatchRow op_row()
{
    return op_row<Op, O>(std::make_index_sequence<EW_DTYPE_END - 1>{});
}

// Row of casts from one dtype, indexed by the target dtype.
template <template <typename, typename> class Cast, ew_op_t O, ew_dtype_t From, size_t... D>
constexpr DispatchRow cast_row(std::index_sequence<D...>)
{
    return DispatchRow{{ew_launcher_t{},
                        make_launcher<Cast<TypeOf<static_cast<ew_dtype_t>(D + 1)>, TypeOf<From>>,
                                      takes<O>(D + 1) && takes<O>(From)>()...}};
}
template <template <typename, typename> class Cast, ew_op_t O, ew_dtype_t From> constexpr DispatchRow cast_row()
{
    return cast_row<Cast, O, From>(std::make_index_sequence<EW_DTYPE_END - 1>{});
}

} // namespace ew
