// SPDX-License-Identifier: Apache-2.0
// The dtype -> type map (from src/catalogue/catalogue.h) the dispatch table is built from; the storage types
// themselves are in src/device/ew_ops.cuh, shared with run-time compiled kernels.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "catalogue/catalogue.h"
#include "device/ew_ops.cuh" // the storage types, the conversions and the scalar ops, shared with NVRTC

namespace ew {

template <ew_dtype_t D> struct DtypeType;
#define EW_DTYPE_TYPE(value, name, type, size, kind) \
    template <> struct DtypeType<value> {           \
        using Type = type;                          \
        static_assert(sizeof(Type) == size);        \
    };
EW_CATALOGUE_DTYPES(EW_DTYPE_TYPE)
#undef EW_DTYPE_TYPE

template <ew_dtype_t D> using TypeOf = typename DtypeType<D>::Type;

} // namespace ew
