// SPDX-License-Identifier: Apache-2.0
// The dispatch table: the rows of src/catalogue/sets.h, looked up by op and dtypes.
#include <array>

#include "catalogue/sets.h"

namespace {
using ew::DispatchRow;

// Indexed by op; NULL for the ops between two dtypes, whose rows are indexed by their source dtype instead.
#define EW_OP_ROW_ADDRESS(value, name, call, functor, out_kinds, in_kinds) EW_ROW_OF_##call(name),
const DispatchRow *const op_rows[EW_OP_END] = {nullptr, EW_CATALOGUE_OPS(EW_OP_ROW_ADDRESS)};
#undef EW_OP_ROW_ADDRESS

// Indexed by op and source dtype; NULL where the op takes no such source.
using PairRows = std::array<std::array<const DispatchRow *, EW_DTYPE_END>, EW_OP_END>;
constexpr PairRows pair_rows = [] {
    PairRows rows{};
#define EW_PAIR_ROW_ADDRESS(op, source, row) rows[op][source] = &ew::row;
    EW_PAIR_ROWS(EW_PAIR_ROW_ADDRESS)
#undef EW_PAIR_ROW_ADDRESS
    return rows;
}();

// Which ops convert between dtypes (no call into the C layer).
#define EW_OP_IS_PAIR(value, name, call, functor, out_kinds, in_kinds) EW_CALL_IS_PAIR(call),
constexpr bool is_pair[EW_OP_END] = {false, EW_CATALOGUE_OPS(EW_OP_IS_PAIR)};
#undef EW_OP_IS_PAIR

bool in_range(int value, int end) { return value > 0 && value < end; }
} // namespace

extern "C" const ew_kernel_set_t *ew_dispatch_find(ew_op_t op, ew_dtype_t out_dtype, ew_dtype_t in_dtype)
{
    if (!in_range(op, EW_OP_END) || !in_range(out_dtype, EW_DTYPE_END) || !in_range(in_dtype, EW_DTYPE_END))
        return nullptr;
    const ew_kernel_set_t *entry;
    if (is_pair[op])
        entry = pair_rows[op][in_dtype] != nullptr ? &(*pair_rows[op][in_dtype])[out_dtype] : nullptr;
    else if (out_dtype == in_dtype)
        entry = &(*op_rows[op])[out_dtype];
    else
        return nullptr;
    return entry != nullptr && ew_kernel_set_has(entry, EW_SLOT_PACK1) ? entry : nullptr;
}
