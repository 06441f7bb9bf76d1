/* SPDX-License-Identifier: Apache-2.0 */
// The dispatch table's rows, one per op called on one dtype (indexed by it) and, for casts, one per
// source dtype (indexed by the target). Each is defined in a translation unit of its own, which CMake
// generates from src/catalogue/catalogue.h, so the kernels compile in parallel.
#pragma once

#include <array>

#include "catalogue/catalogue.h"
#include "catalogue/dispatch.h"

namespace ew {
using DispatchRow = std::array<ew_kernel_set_t, EW_DTYPE_END>;

// The row of an op by how it is called: EW_ROW_OF_<call>(name), NULL for the cast's several rows.
#define EW_ROW_OF_EW_CALL_UNARY(name) &ew::name##_row
#define EW_ROW_OF_EW_CALL_BINARY(name) &ew::name##_row
#define EW_ROW_OF_EW_CALL_SCALE_ADD(name) &ew::name##_row
#define EW_ROW_OF_EW_CALL_CAST(name) nullptr

#define EW_DECLARE_ROW_EW_CALL_UNARY(name) extern const DispatchRow name##_row;
#define EW_DECLARE_ROW_EW_CALL_BINARY(name) extern const DispatchRow name##_row;
#define EW_DECLARE_ROW_EW_CALL_SCALE_ADD(name) extern const DispatchRow name##_row;
#define EW_DECLARE_ROW_EW_CALL_CAST(name)
#define EW_DECLARE_OP_ROW(value, name, call, functor, kinds) EW_DECLARE_ROW_##call(name)
EW_CATALOGUE_OPS(EW_DECLARE_OP_ROW)
#undef EW_DECLARE_OP_ROW

#define EW_DECLARE_CAST_ROW(value, name, type, size, kind) extern const DispatchRow cast_row_##name;
EW_CATALOGUE_DTYPES(EW_DECLARE_CAST_ROW)
#undef EW_DECLARE_CAST_ROW
} // namespace ew
