// The dispatch table's rows, each defined in its own translation unit so the build runs in parallel.
#pragma once

#include <array>

#include <cuda.h> // the driver's launch types only: the library does not link libcuda

#include "dispatch.h"

namespace ew {
using DispatchRow = std::array<ew_launcher_t, EW_DTYPE_END>;

// The driver's cuLaunchKernelEx (found once; NULL if the driver lacks it), for launch_kernel.
using DriverLaunch = int (*)(const CUlaunchConfig *config, void *kernel, void **params, void **extra);
DriverLaunch driver_launch();

extern const DispatchRow add_row, mul_row, relu_row, scale_add_row;

// Casts by source dtype: cast_rows_<source>[target].
#define EW_CAST_SOURCES(X)                                                                      \
    X(bool, EW_BOOL)                                                                            \
    X(i8, EW_I8)                                                                                \
    X(u8, EW_U8)                                                                                \
    X(i16, EW_I16) X(i32, EW_I32) X(i64, EW_I64) X(f16, EW_F16) X(bf16, EW_BF16) X(f32, EW_F32) \
        X(f64, EW_F64) X(f8e4m3, EW_F8E4M3) X(f8e5m2, EW_F8E5M2)
#define EW_DECLARE_CAST_ROW(name, dtype) extern const DispatchRow cast_row_##name;
EW_CAST_SOURCES(EW_DECLARE_CAST_ROW)
#undef EW_DECLARE_CAST_ROW
} // namespace ew
