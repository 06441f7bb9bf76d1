/* SPDX-License-Identifier: Apache-2.0 */
// The dispatch table's rows, one per op called on one dtype (indexed by it) and, for the ops between
// two dtypes, one per source dtype (indexed by the target). Each is defined in a translation unit of its own, which CMake
// generates from src/catalogue/catalogue.h, so the kernels compile in parallel.
#pragma once

#include <array>

#include "catalogue/catalogue.h"
#include "catalogue/dispatch.h"
#include "catalogue/pair_rows.h"

namespace ew {
using DispatchRow = std::array<ew_kernel_set_t, EW_DTYPE_END>;

// The row of an op called on one dtype: EW_ROW_OF_<call>(name); NULL for the ops between two dtypes,
// whose rows are by source dtype (catalogue/pair_rows.h, generated).
#define EW_ROW_OF_EW_CALL_UNARY(name) &ew::name##_row
#define EW_ROW_OF_EW_CALL_BINARY(name) &ew::name##_row
#define EW_ROW_OF_EW_CALL_SCALE_ADD(name) &ew::name##_row
#define EW_ROW_OF_EW_CALL_AMAX(name) &ew::name##_row
#define EW_ROW_OF_EW_CALL_CAST(name) nullptr
#define EW_ROW_OF_EW_CALL_QUANTIZE(name) nullptr
#define EW_ROW_OF_EW_CALL_DEQUANTIZE(name) nullptr

#define EW_DECLARE_ROW_EW_CALL_UNARY(name) extern const DispatchRow name##_row;
#define EW_DECLARE_ROW_EW_CALL_BINARY(name) extern const DispatchRow name##_row;
#define EW_DECLARE_ROW_EW_CALL_SCALE_ADD(name) extern const DispatchRow name##_row;
#define EW_DECLARE_ROW_EW_CALL_AMAX(name) extern const DispatchRow name##_row;
#define EW_DECLARE_ROW_EW_CALL_CAST(name)
#define EW_DECLARE_ROW_EW_CALL_QUANTIZE(name)
#define EW_DECLARE_ROW_EW_CALL_DEQUANTIZE(name)
#define EW_DECLARE_OP_ROW(value, name, call, functor, out_kinds, in_kinds) EW_DECLARE_ROW_##call(name)
EW_CATALOGUE_OPS(EW_DECLARE_OP_ROW)
#undef EW_DECLARE_OP_ROW

#define EW_DECLARE_PAIR_ROW(op, source, row) extern const DispatchRow row;
EW_PAIR_ROWS(EW_DECLARE_PAIR_ROW)
#undef EW_DECLARE_PAIR_ROW
} // namespace ew
