#include "driver.h"
#include "rows.h"

namespace {
using ew::DispatchRow;

// Indexed by op; the cast entry is unused (casts are indexed by their source dtype instead).
const DispatchRow *const op_rows[EW_OP_END] = {
    nullptr, &ew::add_row, &ew::mul_row, &ew::relu_row, nullptr, &ew::scale_add_row,
};

#define EW_CAST_ROW_ADDRESS(name, dtype) &ew::cast_row_##name,
const DispatchRow *const cast_rows_by_source[EW_DTYPE_END] = {nullptr, EW_CAST_SOURCES(EW_CAST_ROW_ADDRESS)};
#undef EW_CAST_ROW_ADDRESS

bool in_range(int value, int end) { return value > 0 && value < end; }
} // namespace

namespace ew {
DriverLaunch driver_launch()
{
    static const DriverLaunch function =
        reinterpret_cast<DriverLaunch>(ewi_driver_function("cuLaunchKernelEx"));
    return function;
}
} // namespace ew

extern "C" const ew_launcher_t *ew_dispatch_find(ew_op_t op, ew_dtype_t out_dtype, ew_dtype_t in_dtype)
{
    if (!in_range(op, EW_OP_END) || !in_range(out_dtype, EW_DTYPE_END) || !in_range(in_dtype, EW_DTYPE_END))
        return nullptr;
    const ew_launcher_t *entry;
    if (op == EW_OP_CAST)
        entry = &(*cast_rows_by_source[in_dtype])[out_dtype];
    else if (out_dtype == in_dtype)
        entry = &(*op_rows[op])[out_dtype];
    else
        return nullptr;
    return entry->by_pack[0] ? entry : nullptr;
}
