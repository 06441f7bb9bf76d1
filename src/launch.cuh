// SPDX-License-Identifier: Apache-2.0
// Launching: a kernel of src/direct.cuh or src/bulk.cuh on a plan's grid, straight through the
// driver, with the op's functor built from the call's parameters.
#pragma once

#include <algorithm>
#include <cstdint>

#include <cuda.h> // the driver's launch types only: the library does not link libcuda

#include "bulk.cuh"
#include "direct.cuh"
#include "dispatch.h"
#include "driver.h"

namespace ew {

// The driver's cuLaunchKernelEx, found once (NULL if the driver lacks it).
using DriverLaunch = int (*)(const CUlaunchConfig *config, void *kernel, void **params, void **extra);
inline DriverLaunch driver_launch()
{
    static const DriverLaunch function = reinterpret_cast<DriverLaunch>(ewi_driver_function("cuLaunchKernelEx"));
    return function;
}

// Launches Kernel straight through the driver with its context-independent handle: the runtime's
// own launch path measured about 0.3 us more per call from inside this library.
// A dependent launch may start while the stream's previous kernel finishes (follow_previous_grid
// keeps the order). Any failure is retried through the runtime, so errors read as the runtime's.
template <auto Kernel>
cudaError_t launch_kernel(unsigned blocks, size_t shared_bytes, cudaStream_t stream, void **params,
                          bool dependent)
{
    static const cudaKernel_t handle = [] {
        cudaKernel_t found = nullptr;
        if (cudaGetKernel(&found, reinterpret_cast<const void *>(Kernel)) != cudaSuccess) {
            cudaGetLastError();
            found = nullptr;
        }
        return found;
    }();
    // The dependent launch's one attribute; a plain launch passes none, where cuLaunchKernelEx does
    // what cuLaunchKernel does.
    const unsigned attributes = dependent ? 1u : 0u;
    CUlaunchAttribute driver_attribute{};
    driver_attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    driver_attribute.value.programmaticStreamSerializationAllowed = 1;
    const CUlaunchConfig driver_config{blocks,
                                       1,
                                       1,
                                       EW_PLAN_BLOCK_THREADS,
                                       1,
                                       1,
                                       static_cast<unsigned>(shared_bytes),
                                       reinterpret_cast<CUstream>(stream),
                                       &driver_attribute,
                                       attributes};
    const DriverLaunch driver = driver_launch();
    if (handle != nullptr && driver != nullptr && driver(&driver_config, handle, params, nullptr) == 0)
        return cudaSuccess;
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    const cudaLaunchConfig_t config{
        dim3(blocks), dim3(EW_PLAN_BLOCK_THREADS), shared_bytes, stream, &attribute, attributes};
    return cudaLaunchKernelExC(&config, reinterpret_cast<const void *>(Kernel), params);
}

// Launches Kernel(f, body, out, a, b[, c, d]) on the plan's grid and `extra_blocks` after it (the
// kernel's edge block: edge_blocks), with f built from the call's run-time values. The kernels take
// the two inputs the catalogue's functors lack as null pointers. Only a direct grid reaches the limit (bulk plans leave room), and its
// grid-stride loop covers the cut.
template <auto Kernel, typename F, typename Body>
cudaError_t launch_with(const ew_launch_args_t *args, Body body, unsigned extra_blocks, size_t shared_bytes)
{
    F f = F::make(args->params);
    auto *out = static_cast<typename F::Out *>(args->out);
    auto *a = static_cast<const typename F::In1 *>(args->in[0]);
    auto *b = static_cast<const typename F::In2 *>(args->in[1]);
    const In3<F> *c = nullptr;
    const In4<F> *d = nullptr;
    void *params[] = {&f, &body, &out, &a, &b, &c, &d};
    const unsigned blocks = std::min<unsigned>(args->plan.blocks, INT32_MAX - extra_blocks) + extra_blocks;
    return launch_kernel<Kernel>(blocks, shared_bytes, args->stream, params, args->dependent_launch);
}

// The direct kernel for a plan at pack P and window W.
template <typename F, int P, Window W> cudaError_t launch(const ew_launch_args_t *args)
{
    const ew_plan_t &plan = args->plan;
    const BodyPlan body{args->n,
                        plan.head,
                        plan.packs,
                        {plan.shift[0] * static_cast<int>(kStorageSize<typename F::In1>),
                         plan.shift[1] * static_cast<int>(kStorageSize<typename F::In2>), 0, 0}};
    // The same bytes in flight per thread, moved A packs to an access where the plan allows it.
    constexpr int A = EW_PLAN_ACCESS_PACKS(kWidestElement<F>);
    if constexpr (A > 1 && W == Window::Aligned && P == EW_PLAN_MAX_PACK(kWidestElement<F>))
        if (plan.access_packs == A)
            return launch_with<&elementwise_kernel<F, P, kRunsUnroll<F, P, A>, Window::Aligned, A>, F>(
                args, body, edge_blocks<P, A>(body), 0);
    return launch_with<&elementwise_kernel<F, P, kDirectUnroll<F, P, W>, W>, F>(args, body, edge_blocks<P, 1>(body),
                                                                                0);
}

// The bulk-copy kernel for a plan: the tiles cover [head, n), one block each; one more block for the
// head, if any.
template <typename F, int P> cudaError_t launch_bulk(const ew_launch_args_t *args)
{
    const ew_plan_t &plan = args->plan;
    const int tile = EW_PLAN_BLOCK_THREADS * plan.tile_packs * P;
    const BulkPlan bulk{args->n, plan.head, plan.tile_packs};
    return launch_with<&bulk_kernel<F, P>, F>(args, bulk, edge_blocks(bulk), bulk_shared_bytes<F>(tile));
}

} // namespace ew
