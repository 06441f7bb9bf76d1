/* SPDX-License-Identifier: Apache-2.0 */
/* User-defined kernels (the C ABI's ew_kernel_*): the objects, their validation, and their launches,
 * planned and launched as the catalogue's, flat and strided. The programs and their compilation are
 * src/rtc/rtc.c's, the loaded code src/rtc/modules.c's. */
#include "abi/user_kernel.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h> /* the driver's types only: its functions are found at run time (src/launch/driver.h) */
#include <cuda_runtime_api.h>

#include "abi/api.h"
#include "launch/driver.h"
#include "abi/error.h"
#include "abi/handle.h"
#include "rtc/modules.h"
#include "plan/layout.h"
#include "plan/plan.h"
#include "abi/pointer_check.h"
#include "abi/registry.h"

/* The driver's functions user kernels need besides the launch's: 1 where it has them all. */
static int have_driver(void)
{
    const ewi_driver_t *d = ewi_driver();
    return d->context_current && d->module_load && d->module_unload && d->module_function && d->launch &&
           d->error_name && d->occupancy;
}

/* ---- kernel objects ---- */

/* Only create and destroy take its lock; launches never do. */
static ewi_registry_t kernels = EWI_REGISTRY_INITIALIZER(ewi_user_kernel_t);

static ew_status_t fail_dead_kernel(ew_kernel_t kernel)
{
    return ewi_fail(EW_ERROR_INVALID_HANDLE, "kernel %p is not a live kernel (destroyed?)", (void *)kernel);
}

/* A destroyed kernel's source, freed before its slot can be taken again. */
static void kernel_release(void *object)
{
    ewi_user_kernel_t *k = object;
    free(k->source);
    k->source = NULL;
}

/* A new kernel value for spec on handle, without code (*k its object). */
static ew_status_t kernel_new(ew_handle_t handle, const ewi_kernel_spec_t *spec, ew_kernel_t *kernel,
                              ewi_user_kernel_t **found)
{
    const size_t source_size = strlen(spec->source) + 1;
    char *source = malloc(source_size);
    void *value;
    ewi_user_kernel_t *k = source != NULL ? ewi_registry_add(&kernels, &value) : NULL;
    if (k == NULL) {
        free(source);
        return ewi_fail(EW_ERROR_OUT_OF_MEMORY, "kernel: out of host memory");
    }
    memcpy(source, spec->source, source_size);
    *k = (ewi_user_kernel_t){.handle = handle,
                        .out_dtype = spec->out_dtype,
                        .n_inputs = spec->n_inputs,
                        .n_params = spec->n_params,
                        .source = source};
    const ewi_slots_t slots = ewi_kernel_slots(spec);
    k->set.widest_pack = slots.widest_pack;
    k->set.access_packs = slots.access_packs;
    for (int i = 0; i < spec->n_inputs; ++i)
        k->in_dtypes[i] = spec->in_dtypes[i];
    *kernel = value;
    *found = k;
    return EW_SUCCESS;
}

ew_status_t ewi_user_kernel_make(ew_handle_t handle, const ewi_kernel_spec_t *spec, ew_kernel_t *kernel)
{
    *kernel = NULL;
    ewi_handle_t *h;
    ewi_user_kernel_t *k;
    ew_status_t status = ewi_handle_find(handle, &h);
    if (status == EW_SUCCESS)
        status = ewi_kernel_check(spec);
    return status == EW_SUCCESS ? kernel_new(handle, spec, kernel, &k) : status;
}

ew_status_t ew_kernel_destroy(ew_kernel_t kernel)
{
    if (kernel == NULL)
        return EW_SUCCESS;
    return ewi_registry_remove(&kernels, kernel, kernel_release) ? EW_SUCCESS : fail_dead_kernel(kernel);
}

/* The calling thread's context, made current first where the thread has none: the device's primary
 * context, as the runtime would bind it on the thread's first call (the device check has passed). */
static ew_status_t current_context(const ewi_handle_t *handle, CUcontext *context)
{
    *context = NULL;
    CUresult result = ewi_driver()->context_current(context);
    if (result == CUDA_SUCCESS && *context == NULL) {
        cudaError_t error = cudaSetDevice(handle->device);
        if (error != cudaSuccess)
            return ewi_fail_cuda(error, "cudaSetDevice");
        result = ewi_driver()->context_current(context);
    }
    if (result != CUDA_SUCCESS)
        return ewi_fail_driver(result, "cuCtxGetCurrent");
    return *context != NULL ? EW_SUCCESS : ewi_fail(EW_ERROR_CUDA, "no CUDA context on this thread");
}

ew_status_t ew_kernel_create(ew_handle_t handle, const char *source, ew_dtype_t out_dtype, int n_inputs,
                             const ew_dtype_t *in_dtypes, int n_params, ew_kernel_t *kernel)
{
    if (kernel == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "kernel (where the new kernel goes) is NULL");
    *kernel = NULL;
    const ewi_kernel_spec_t spec = {source, out_dtype, n_inputs, in_dtypes, n_params, 0};
    ewi_handle_t *h;
    ew_status_t status = ewi_handle_find(handle, &h);
    if (status == EW_SUCCESS)
        status = ewi_kernel_check(&spec);
    if (status == EW_SUCCESS)
        status = ewi_handle_check_device(h);
    if (status != EW_SUCCESS)
        return status;
    if (!have_driver())
        return ewi_fail(EW_ERROR_NOT_SUPPORTED, "the CUDA driver lacks cuModuleLoadData or cuLaunchKernelEx");

    int major = 0, minor = 0;
    cudaError_t error = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, h->device);
    if (error == cudaSuccess)
        error = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, h->device);
    if (error != cudaSuccess)
        return ewi_fail_cuda(error, "cudaDeviceGetAttribute");
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
    CUcontext context;
    if ((status = current_context(h, &context)) != EW_SUCCESS)
        return status;

    ew_kernel_t value;
    ewi_user_kernel_t *k;
    if ((status = kernel_new(handle, &spec, &value, &k)) != EW_SUCCESS)
        return status;
    memcpy(k->arch, arch, sizeof k->arch);
    const ewi_module_t *module;
    if ((status = ewi_module_load(&spec, arch, context, &module)) != EW_SUCCESS) {
        ew_kernel_destroy(value);
        return status;
    }
    k->module = module->module;
    for (int slot = 0; slot < EW_SLOT_COUNT; ++slot)
        k->set.kernel[slot].function = module->function[slot];
    k->set.bulk_blocks_per_sm = module->bulk_blocks_per_sm;
    *kernel = value;
    return EW_SUCCESS;
}

ew_status_t ew_kernel_cache_fill(const char *source, ew_dtype_t out_dtype, int n_inputs, const ew_dtype_t *in_dtypes,
                                 int n_params, const char *arch)
{
    ewi_kernel_spec_t spec = {source, out_dtype, n_inputs, in_dtypes, n_params, 0};
    ew_status_t status = ewi_kernel_check(&spec);
    if (status != EW_SUCCESS)
        return status;
    /* the name ew_kernel_create gives a device: "sm_" and its compute capability's digits */
    size_t digits = arch != NULL && strncmp(arch, "sm_", 3) == 0 ? strspn(arch + 3, "0123456789") : 0;
    if (digits < 2 || digits > 3 || arch[3 + digits] != '\0')
        return ewi_fail(EW_ERROR_INVALID_VALUE, "arch \"%.40s\" is not \"sm_\" and a compute capability's digits, "
                                                "as \"sm_90\" names cc 9.0", arch != NULL ? arch : "(null)");
    for (spec.strided = 0; status == EW_SUCCESS && spec.strided <= 1; ++spec.strided)
        status = ewi_module_store(&spec, arch);
    return status;
}

ew_status_t ew_kernel_cache_get_count(ew_kernel_cache_counter_t counter, uint64_t *count)
{
    if (count == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "count is NULL");
    if ((int)counter < 0 || (int)counter >= EW_KERNEL_CACHE_COUNTERS)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "counter = %d is not an ew_kernel_cache_counter_t", (int)counter);
    *count = ewi_kernel_cache_count(counter);
    return EW_SUCCESS;
}

/* ---- the launches: checked here, planned and launched as the catalogue's (src/launch/launch.c) ---- */

/* What every launch checks first: a live kernel (*k its object) of a live handle (*h). */
static ew_status_t find_kernel(ew_kernel_t kernel, ewi_user_kernel_t **k, ewi_handle_t **h)
{
    *k = NULL;
    *h = NULL;
    if (kernel == NULL)
        return ewi_fail(EW_ERROR_INVALID_HANDLE, "kernel is NULL");
    if ((*k = ewi_registry_find(&kernels, kernel)) == NULL)
        return fail_dead_kernel(kernel);
    if (ewi_handle_find((*k)->handle, h) != EW_SUCCESS)
        return ewi_fail(EW_ERROR_INVALID_HANDLE, "kernel %p: its handle %p is not a live handle (destroyed?)",
                        (void *)kernel, (void *)(*k)->handle);
    return EW_SUCCESS;
}

static ew_status_t check_params(const ewi_user_kernel_t *kernel, const double *params)
{
    return params == NULL && kernel->n_params > 0
               ? ewi_fail(EW_ERROR_INVALID_VALUE, "params is NULL but the kernel takes %d", kernel->n_params)
               : EW_SUCCESS;
}

/* The functor's bytes: the kernel's parameters, zero past n_params. */
static ew_functor_t functor_of(const ewi_user_kernel_t *kernel, const double *params)
{
    ew_functor_t functor = {{0}};
    for (int i = 0; i < kernel->n_params; ++i)
        functor.params[i] = params[i];
    return functor;
}

/* ew_kernel_launch once the kernel and its handle are found. */
static ew_status_t launch_flat(const ewi_user_kernel_t *kernel, ewi_handle_t *handle, int64_t n, void *out,
                               const void *const *inputs, const double *params, ew_stream_t stream)
{
    ew_status_t status;
    if (n < 0)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "n = %lld is negative", (long long)n);
    if (n == 0)
        return EW_SUCCESS;
    if (inputs == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "inputs is NULL with n = %lld", (long long)n);
    if ((status = check_params(kernel, params)) != EW_SUCCESS)
        return status;

    static const char *const names[EW_PLAN_MAX_POINTERS] = {"out", "inputs[0]", "inputs[1]", "inputs[2]",
                                                            "inputs[3]"};
    const int count = 1 + kernel->n_inputs;
    ewi_operand_t operands[EW_PLAN_MAX_POINTERS] = {{names[0], out, ew_dtype_size(kernel->out_dtype)}};
    for (int i = 0; i < kernel->n_inputs; ++i)
        operands[1 + i] = (ewi_operand_t){names[1 + i], inputs[i], ew_dtype_size(kernel->in_dtypes[i])};
    if ((status = ewi_check_flat(handle, n, operands, count)) != EW_SUCCESS)
        return status;
    if (kernel->module == NULL) /* ewi_user_kernel_make's objects have no code */
        return ewi_fail(EW_ERROR_NOT_SUPPORTED, "the kernel has no compiled code");
    /* A thread whose first CUDA call this is has no context yet: bind the device's primary one. Asked
     * before the launch, not after a failed one, which tools such as compute-sanitizer report. */
    CUcontext context;
    if ((status = current_context(handle, &context)) != EW_SUCCESS)
        return status;
    const ew_functor_t functor = functor_of(kernel, params);
    const ew_launch_t how = ewi_launch_of(handle, stream);
    return ewi_launch_flat(handle, &kernel->set, n, operands, count, &functor, &how);
}

ew_status_t ew_kernel_launch(ew_kernel_t kernel, int64_t n, void *out, const void *const *inputs,
                             const double *params, ew_stream_t stream)
{
    ewi_user_kernel_t *k;
    ewi_handle_t *h;
    ew_status_t status = find_kernel(kernel, &k, &h);
    return status == EW_SUCCESS ? launch_flat(k, h, n, out, inputs, params, stream) : status;
}

/* ---- the strided launch: the layout checked and coalesced, then the flat launch or a strided kernel ---- */

static pthread_mutex_t strided_lock = PTHREAD_MUTEX_INITIALIZER;

/* The strided program's functions of kernel, compiled or found in the caches at its first strided
 * launch (one at a time in the process), in the thread's current context. */
static ew_status_t load_strided(ewi_user_kernel_t *kernel, CUcontext context)
{
    if (__atomic_load_n(&kernel->strided_loaded, __ATOMIC_ACQUIRE))
        return EW_SUCCESS;
    ew_status_t status = EW_SUCCESS;
    pthread_mutex_lock(&strided_lock);
    if (!kernel->strided_loaded) {
        const ewi_kernel_spec_t spec = {kernel->source,    kernel->out_dtype, kernel->n_inputs,
                                        kernel->in_dtypes, kernel->n_params,  1};
        const ewi_module_t *module;
        if ((status = ewi_module_load(&spec, kernel->arch, context, &module)) == EW_SUCCESS) {
            for (int slot = EW_SLOT_GATHER; slot <= EW_SLOT_TILED; ++slot)
                kernel->set.kernel[slot].function = module->function[slot];
            __atomic_store_n(&kernel->strided_loaded, 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&strided_lock);
    return status;
}

ew_status_t ew_kernel_launch_strided(ew_kernel_t kernel_value, int ndim, const int64_t *shape, void *out,
                                     const int64_t *out_strides, const void *const *inputs,
                                     const int64_t *const *in_strides, const double *params,
                                     ew_stream_t stream)
{
    ewi_user_kernel_t *kernel;
    ewi_handle_t *handle;
    ew_status_t status = find_kernel(kernel_value, &kernel, &handle);
    if (status != EW_SUCCESS)
        return status;
    static const char *const names[EW_LAYOUT_MAX_OPERANDS] = {"out", "inputs[0]", "inputs[1]", "inputs[2]",
                                                              "inputs[3]"};
    static const char *const strides_names[EW_LAYOUT_MAX_OPERANDS] = {
        "out_strides", "in_strides[0]", "in_strides[1]", "in_strides[2]", "in_strides[3]"};
    const int count = 1 + kernel->n_inputs;
    ew_view_t views[EW_LAYOUT_MAX_OPERANDS] = {
        {names[0], strides_names[0], out, out_strides, ew_dtype_size(kernel->out_dtype)}};
    for (int i = 0; i < kernel->n_inputs; ++i)
        views[1 + i] = (ew_view_t){inputs != NULL ? names[1 + i] : "inputs", strides_names[1 + i],
                                   inputs != NULL ? inputs[i] : NULL, in_strides != NULL ? in_strides[i] : NULL,
                                   ew_dtype_size(kernel->in_dtypes[i])};
    ew_layout_t layout;
    if ((status = ew_layout_make(ndim, shape, count, views, &layout)) != EW_SUCCESS || layout.n == 0 ||
        (status = check_params(kernel, params)) != EW_SUCCESS)
        return status;
    const void *bases[EWI_KERNEL_MAX_INPUTS] = {NULL};
    for (int i = 0; i < kernel->n_inputs; ++i)
        bases[i] = (const void *)layout.base[1 + i];
    if (ew_layout_is_flat(&layout))
        return launch_flat(kernel, handle, layout.n, (void *)layout.base[0], bases, params, stream);

    if ((status = ewi_check_strided(handle, &layout, views, count)) != EW_SUCCESS)
        return status;
    if (kernel->module == NULL) /* ewi_user_kernel_make's objects have no code */
        return ewi_fail(EW_ERROR_NOT_SUPPORTED, "the kernel has no compiled code");
    CUcontext context;
    if ((status = current_context(handle, &context)) != EW_SUCCESS ||
        (status = load_strided(kernel, context)) != EW_SUCCESS)
        return status;
    const ew_strided_plan_t plan = ew_strided_plan_make(&layout, &handle->policy);
    const ew_functor_t functor = functor_of(kernel, params);
    const ew_launch_t how = ewi_launch_of(handle, stream);
    return ew_launch_strided(&kernel->set, &plan, (void *)layout.base[0], bases, &functor, &how);
}
