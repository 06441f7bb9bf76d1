// SPDX-License-Identifier: Apache-2.0
// The reset kernel of a list's overwriting reduction (src/catalogue/dispatch.h's ew_dispatch_reset_kernel):
// each scalar of a reset block (src/plan/batched.h: ew_batched_reset_t) set to the identity's bits, one
// thread a scalar. Compiled into the library once, for every user kernel: a list program has no copy.
#include "catalogue/dispatch.h"
#include "catalogue/sets.cuh"

namespace ew {

__global__ void __launch_bounds__(EW_PLAN_BLOCK_THREADS)
    reset_scalars(const __grid_constant__ ew_batched_reset_t reset)
{
    follow_previous_grid(); // the stream's previous kernel may still read or fold into a scalar
    const uint32_t i = blockIdx.x * EW_PLAN_BLOCK_THREADS + threadIdx.x;
    if (i >= reset.count)
        return;
    if (reset.bytes == 8)
        *reinterpret_cast<unsigned long long *>(reset.scalar[i]) = reset.value;
    else
        *reinterpret_cast<uint32_t *>(reset.scalar[i]) = static_cast<uint32_t>(reset.value);
}

} // namespace ew

extern "C" const ew_gpu_kernel_t *ew_dispatch_reset_kernel(void)
{
    static constexpr ew_gpu_kernel_t kernel = ew::compiled_in<&ew::reset_scalars>();
    return &kernel;
}
