// SPDX-License-Identifier: Apache-2.0
// What both kernels share about the grid: the dependent launch's wait, and the elements done one by
// one (the head and the tail) in a block of their own, the grid's last.
#pragma once

#include "pack.cuh"

namespace ew {

// The head and the tail, element by element, in a block of their own after the body's: done by
// body threads before or after their packs, their round trips to memory would add to those
// threads' time, which in a one-wave grid is the kernel's. index(j) is edge j's element.
template <typename F, typename Index>
__device__ __forceinline__ void edge_elements(const F &f, typename F::Out *out, const typename F::In1 *a,
                                              const typename F::In2 *b, int64_t edges, Index index,
                                              const In3<F> *c = nullptr, const In4<F> *d = nullptr)
{
    for (int64_t j = threadIdx.x; j < edges; j += blockDim.x) {
        const int64_t i = index(j);
        out[i] = apply(f, a[i], load(b, i), load(c, i), load(d, i));
    }
}

// First thing in every kernel. A dependent launch (cc >= 9.0) lets this grid start while the
// stream's previous kernel finishes: the wait holds every thread until that kernel has completed
// and its writes are visible, so nothing is read or written early; once every block of this grid
// has started, the stream's next dependent kernel may take the SM slots this one frees. Both are
// no-ops in an ordinary launch.
__device__ __forceinline__ void follow_previous_grid()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#if defined(__CUDACC_RTC__) // the runtime's device functions are toolkit headers, which NVRTC lacks
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" :::);
#else
    cudaGridDependencySynchronize();
    cudaTriggerProgrammaticLaunchCompletion();
#endif
#endif
}

} // namespace ew
