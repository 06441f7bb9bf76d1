// SPDX-License-Identifier: Apache-2.0
// The dispatch table: the rows of src/catalogue/sets.h, looked up by op and dtypes.
#include "catalogue/sets.h"

namespace {
using ew::DispatchRow;

// Indexed by op; NULL for the cast, whose rows are indexed by their source dtype instead.
#define EW_OP_ROW_ADDRESS(value, name, call, functor, kinds) EW_ROW_OF_##call(name),
const DispatchRow *const op_rows[EW_OP_END] = {nullptr, EW_CATALOGUE_OPS(EW_OP_ROW_ADDRESS)};
#undef EW_OP_ROW_ADDRESS

#define EW_CAST_ROW_ADDRESS(value, name, type, size, kind) &ew::cast_row_##name,
const DispatchRow *const cast_rows_by_source[EW_DTYPE_END] = {nullptr, EW_CATALOGUE_DTYPES(EW_CAST_ROW_ADDRESS)};
#undef EW_CAST_ROW_ADDRESS

// Which ops convert between dtypes: the cast's rows are indexed by source (no call into the C layer).
#define EW_OP_IS_CAST(value, name, call, functor, kinds) call == EW_CALL_CAST,
constexpr bool is_cast[EW_OP_END] = {false, EW_CATALOGUE_OPS(EW_OP_IS_CAST)};
#undef EW_OP_IS_CAST

bool in_range(int value, int end) { return value > 0 && value < end; }
} // namespace

extern "C" const ew_kernel_set_t *ew_dispatch_find(ew_op_t op, ew_dtype_t out_dtype, ew_dtype_t in_dtype)
{
    if (!in_range(op, EW_OP_END) || !in_range(out_dtype, EW_DTYPE_END) || !in_range(in_dtype, EW_DTYPE_END))
        return nullptr;
    const ew_kernel_set_t *entry;
    if (is_cast[op])
        entry = &(*cast_rows_by_source[in_dtype])[out_dtype];
    else if (out_dtype == in_dtype)
        entry = &(*op_rows[op])[out_dtype];
    else
        return nullptr;
    return ew_kernel_set_has(entry, EW_SLOT_PACK1) ? entry : nullptr;
}
