// SPDX-License-Identifier: Apache-2.0
// The elements done one by one (the head and the tail) in a block of their own, the grid's last.
#pragma once

#include "device/pack.cuh"

namespace ew {

// The head and the tail, element by element, in a block of their own after the body's: done by
// body threads before or after their packs, their round trips to memory would add to those
// threads' time, which in a one-wave grid is the kernel's. index(j) is edge j's element.
template <typename F, typename Index>
__device__ __forceinline__ void edge_elements(const F &f, OutPointer<F> out, const typename F::In1 *a,
                                              const typename F::In2 *b, int64_t edges, Index index,
                                              const In3<F> *c = nullptr, const In4<F> *d = nullptr)
{
    for (int64_t j = threadIdx.x; j < edges; j += blockDim.x) {
        const int64_t i = index(j);
        store(out, i, apply(f, a[i], load(b, i), load(c, i), load(d, i)));
    }
}

} // namespace ew
