/* SPDX-License-Identifier: Apache-2.0 */
/* The one launch (src/launch/launch.h): the plan's kernel, its arguments and grid, then the driver. */
#include "launch/launch.h"

#include <stdint.h>

#include <cuda.h> /* the driver's launch types only: its functions are src/launch/driver.c's */

#include "launch/driver.h"
#include "abi/error.h"

/* Launches kernel on `blocks` blocks of EW_PLAN_BLOCK_THREADS, straight through the
 * driver with the kernel's context-independent handle: the runtime's own launch path measured about
 * 0.3 us more per call from inside this library. A dependent launch may start while the stream's
 * previous kernel finishes (the kernels' follow_previous_grid keeps the order). A compiled-in kernel's
 * launch that the driver refuses is retried through the runtime, which binds a context where the
 * thread has none and reports errors as the runtime's. */
static ew_status_t launch_kernel(const ew_gpu_kernel_t *kernel, unsigned blocks, unsigned shared_bytes,
                                 const ew_launch_t *how, void **arguments)
{
    const ew_precompiled_kernel_t *precompiled = kernel->precompiled != NULL ? kernel->precompiled() : NULL;
    void *function = precompiled != NULL ? precompiled->handle : kernel->function;
    ew_status_t status = ew_launch_reset(how);
    if (status != EW_SUCCESS)
        return status;

    CUlaunchAttribute attribute = {.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
    attribute.value.programmaticStreamSerializationAllowed = 1;
    const CUlaunchConfig config = {.gridDimX = blocks,
                                   .gridDimY = 1,
                                   .gridDimZ = 1,
                                   .blockDimX = EW_PLAN_BLOCK_THREADS,
                                   .blockDimY = 1,
                                   .blockDimZ = 1,
                                   .sharedMemBytes = shared_bytes,
                                   .hStream = (CUstream)how->stream,
                                   .attrs = &attribute,
                                   .numAttrs = how->dependent ? 1u : 0u};
    const ewi_driver_t *driver = ewi_driver();
    CUresult result = CUDA_ERROR_NOT_FOUND;
    if (function != NULL && driver->launch != NULL &&
        (result = driver->launch(&config, (CUfunction)function, arguments, NULL)) == CUDA_SUCCESS)
        return EW_SUCCESS;
    if (precompiled == NULL)
        return ewi_fail_driver(result, "cuLaunchKernelEx");

    cudaLaunchAttribute runtime_attribute = {.id = cudaLaunchAttributeProgrammaticStreamSerialization};
    runtime_attribute.val.programmaticStreamSerializationAllowed = 1;
    const cudaLaunchConfig_t runtime_config = {.gridDim = {blocks, 1, 1},
                                               .blockDim = {EW_PLAN_BLOCK_THREADS, 1, 1},
                                               .dynamicSmemBytes = shared_bytes,
                                               .stream = how->stream,
                                               .attrs = &runtime_attribute,
                                               .numAttrs = how->dependent ? 1u : 0u};
    const cudaError_t error = cudaLaunchKernelExC(&runtime_config, precompiled->symbol, arguments);
    if (error == cudaSuccess)
        return EW_SUCCESS;
    cudaGetLastError(); /* the launch's own error is reported here, not left for the caller */
    return ewi_fail_cuda(error, "cudaLaunchKernel");
}

/* slot's kernel of set: launch_kernel, where set has one. */
static ew_status_t launch(const ew_kernel_set_t *set, ew_slot_t slot, unsigned blocks, unsigned shared_bytes,
                          const ew_launch_t *how, void **arguments)
{
    if (!ew_kernel_set_has(set, slot))
        return ewi_fail(EW_ERROR_NOT_SUPPORTED, "the op has no kernel for its plan (slot %d)", (int)slot);
    return launch_kernel(&set->kernel[slot], blocks, shared_bytes, how, arguments);
}

ew_status_t ew_launch_reset(const ew_launch_t *how)
{
    if (how->reset == NULL)
        return EW_SUCCESS;
    /* whole words where the span allows (a reduction's scalar), else bytes (padded block scales) */
    const ewi_driver_t *driver = ewi_driver();
    const CUdeviceptr address = (CUdeviceptr)(uintptr_t)how->reset;
    const int words = how->reset_bytes % 4 == 0 && address % 4 == 0;
    const char *name = words ? "cuMemsetD32Async" : "cuMemsetD8Async";
    if (words ? driver->memset32 == NULL : driver->memset8 == NULL)
        return ewi_fail(EW_ERROR_CUDA, "the driver has no %s", name);
    CUresult result;
    if (how->reset_value != 0 && how->reset_bytes == 8 && words) { /* a double's bits: a word at a time */
        result = driver->memset32(address, (unsigned)how->reset_value, 1, (CUstream)how->stream);
        if (result == CUDA_SUCCESS)
            result =
                driver->memset32(address + 4, (unsigned)(how->reset_value >> 32), 1, (CUstream)how->stream);
    } else {
        result = words ? driver->memset32(address, (unsigned)how->reset_value, how->reset_bytes / 4,
                                          (CUstream)how->stream)
                       : driver->memset8(address, 0u, how->reset_bytes, (CUstream)how->stream);
    }
    return result == CUDA_SUCCESS ? EW_SUCCESS : ewi_fail_driver(result, name);
}

/* The grid's blocks and `edge` after them (the kernels' edge block). Only a direct grid reaches the
 * limit (bulk plans leave room), and its grid-stride loop covers the cut. */
static unsigned with_edge(unsigned blocks, unsigned edge)
{
    return (blocks < INT32_MAX - edge ? blocks : INT32_MAX - edge) + edge;
}

ew_flat_launch_t ew_flat_launch_make(const ew_kernel_set_t *set, const ew_call_t *call, const ew_plan_t *plan)
{
    ew_flat_launch_t launch = {.slot = ew_flat_slot(set, plan)};
    const int outputs = ew_call_outputs(call);
    if (launch.slot == EW_SLOT_BULK) {
        launch.bulk = (ew_bulk_plan_t){.n = call->n, .head = plan->head, .tile_packs = plan->tile_packs};
        const int tile = EW_PLAN_BLOCK_THREADS * plan->tile_packs * plan->pack;
        for (int i = outputs; i < call->count; ++i)
            launch.shared_bytes += (unsigned)EW_PLAN_BULK_SLOT_BYTES(tile, (int)call->elem_size[i]);
        launch.blocks = with_edge(plan->blocks, ew_bulk_edge_blocks(&launch.bulk));
        return launch;
    }
    launch.body = (ew_body_plan_t){.n = call->n, .head = plan->head, .packs = plan->packs};
    for (int i = outputs; i < call->count; ++i)
        launch.body.shift_bytes[i - outputs] = plan->shift[i - outputs] * (int)call->elem_size[i];
    const int runs = launch.slot == EW_SLOT_RUNS ? set->access_packs : 1;
    launch.blocks = with_edge(plan->blocks, ew_body_edge_blocks(&launch.body, plan->pack, runs));
    return launch;
}

ew_status_t ew_launch_flat(const ew_kernel_set_t *set, const ew_call_t *call, const ew_plan_t *plan,
                           const ew_functor_t *functor, const ew_launch_t *how)
{
    ew_flat_launch_t flat = ew_flat_launch_make(set, call, plan);
    /* The kernels' out argument: one pointer, or the outputs' pointers one after another (the device's
     * OutputPointers) */
    const int outputs = ew_call_outputs(call);
    void *out[EW_PLAN_MAX_OUTPUTS] = {NULL};
    const void *in[EW_PLAN_MAX_INPUTS] = {NULL};
    for (int i = 0; i < call->count; ++i)
        if (i < outputs)
            out[i] = (void *)call->address[i];
        else
            in[i - outputs] = (const void *)call->address[i];
    void *plan_argument = flat.slot == EW_SLOT_BULK ? (void *)&flat.bulk : (void *)&flat.body;
    void *arguments[] = {(void *)functor, plan_argument, (void *)out, &in[0], &in[1], &in[2], &in[3]};
    return launch(set, flat.slot, flat.blocks, flat.shared_bytes, how, arguments);
}

ew_status_t ew_launch_strided(const ew_kernel_set_t *set, const ew_strided_plan_t *plan,
                              void *const out[EW_PLAN_MAX_OUTPUTS], const void *const in[EW_PLAN_MAX_INPUTS],
                              const ew_functor_t *functor, const ew_launch_t *how)
{
    const ew_slot_t slot = plan->kernel == EW_STRIDED_TILED ? EW_SLOT_TILED
                           : plan->kernel == EW_STRIDED_ROWS ? EW_SLOT_ROWS
                                                             : EW_SLOT_GATHER;
    /* out as ew_launch_flat passes it: one pointer, or the outputs' one after another */
    void *arguments[] = {(void *)functor, (void *)plan,   (void *)out,   (void *)&in[0],
                         (void *)&in[1],  (void *)&in[2], (void *)&in[3]};
    return launch(set, slot, plan->blocks, plan->shared_bytes, how, arguments);
}

ew_status_t ew_launch_batched(const ew_kernel_set_t *set, const ew_batched_desc_t *desc, int large,
                              const ew_functor_t *functor, const ew_launch_t *how)
{
    void *arguments[] = {(void *)functor, (void *)desc};
    return launch(set, large ? EW_SLOT_BATCHED_LARGE : EW_SLOT_BATCHED, desc->blocks, 0, how, arguments);
}

ew_status_t ew_launch_batched_reset(const ew_gpu_kernel_t *kernel, const ew_batched_reset_t *reset,
                                    const ew_launch_t *how)
{
    void *arguments[] = {(void *)reset};
    const unsigned blocks = (reset->count + EW_PLAN_BLOCK_THREADS - 1) / EW_PLAN_BLOCK_THREADS;
    return launch_kernel(kernel, blocks, 0, how, arguments);
}

ew_status_t ew_launch_blocks(const ew_kernel_set_t *set, const ew_blocks_plan_t *plan, void *out, const void *scales,
                             const void *in, const ew_functor_t *functor, const ew_launch_t *how)
{
    void *arguments[] = {(void *)functor, (void *)plan, &out, (void *)&scales, (void *)&in};
    return launch(set, plan->vectorized ? EW_SLOT_BLOCKS : EW_SLOT_BLOCKS_ELEMENTS, plan->blocks, 0, how, arguments);
}
