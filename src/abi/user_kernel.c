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
    free((char *)k->spec.source);
    k->spec.source = NULL;
}

/* The names of kernel's operands in messages (ewi_user_kernel_t's names, strides_names). */
static void name_operands(ewi_user_kernel_t *kernel)
{
    static const char *const outputs[] = {"outputs[0]", "outputs[1]", "outputs[2]", "outputs[3]"};
    static const char *const output_strides[] = {"out_strides[0]", "out_strides[1]", "out_strides[2]",
                                                 "out_strides[3]"};
    static const char *const inputs[] = {"inputs[0]", "inputs[1]", "inputs[2]", "inputs[3]"};
    static const char *const input_strides[] = {"in_strides[0]", "in_strides[1]", "in_strides[2]",
                                                "in_strides[3]"};
    const int of_outputs = kernel->spec.n_outputs > 0;
    kernel->reduction_name = kernel->reduction >= 0 ? outputs[kernel->reduction] : NULL;
    int a = 0;
    for (int k = 0; k < (of_outputs ? kernel->spec.n_outputs : 1); ++k)
        if (k != kernel->reduction) {
            kernel->names[a] = of_outputs ? outputs[k] : "out";
            kernel->strides_names[a++] = of_outputs ? output_strides[k] : "out_strides";
        }
    for (int i = 0; i < kernel->spec.n_inputs; ++i) {
        kernel->names[a + i] = inputs[i];
        kernel->strides_names[a + i] = input_strides[i];
    }
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
    *k = (ewi_user_kernel_t){.handle = handle, .spec = *spec, .reduction = ewi_kernel_reduction(spec)};
    k->spec.source = source;
    k->spec.program = EWI_PROGRAM_FLAT;
    memcpy(k->in_dtypes, spec->in_dtypes, (size_t)spec->n_inputs * sizeof *spec->in_dtypes);
    k->spec.in_dtypes = k->in_dtypes;
    k->n_arrays = ewi_kernel_arrays(spec, k->arrays);
    name_operands(k);
    const ewi_slots_t slots = ewi_kernel_slots(spec);
    k->set.widest_pack = slots.widest_pack;
    k->set.access_packs = slots.access_packs;
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

static pthread_mutex_t program_lock = PTHREAD_MUTEX_INITIALIZER;

/* The functions of kernel's program, compiled or found in the caches, in the thread's current context:
 * the flat one at create, each other at the first launch that needs it (one at a time in the process).
 * Another thread may plan on kernel->set meanwhile: a slot's function is set before the program counts
 * as loaded, and the bulk kernel's residency atomically. */
static ew_status_t load_program(ewi_user_kernel_t *kernel, ewi_program_t program, CUcontext context)
{
    if (__atomic_load_n(&kernel->loaded[program], __ATOMIC_ACQUIRE))
        return EW_SUCCESS;
    ew_status_t status = EW_SUCCESS;
    pthread_mutex_lock(&program_lock);
    if (!kernel->loaded[program]) {
        ewi_kernel_spec_t spec = kernel->spec;
        spec.program = program;
        const ewi_slots_t slots = ewi_kernel_slots(&spec);
        const ewi_module_t *module;
        if ((status = ewi_module_load(&spec, kernel->arch, context, &module)) == EW_SUCCESS) {
            for (int slot = 0; slot < EW_SLOT_COUNT; ++slot)
                if (slots.present[slot])
                    kernel->set.kernel[slot].function = module->function[slot];
            if (slots.present[EW_SLOT_BULK])
                __atomic_store_n(&kernel->set.bulk_blocks_per_sm, module->bulk_blocks_per_sm,
                                 __ATOMIC_RELAXED);
            if (program == EWI_PROGRAM_FLAT)
                kernel->module = module->module;
            __atomic_store_n(&kernel->loaded[program], 1, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&program_lock);
    return status;
}

/* What a launch that passed its checks needs first: the kernel's code (ewi_user_kernel_make's objects
 * have none), and program loaded, in the thread's context. A thread whose first CUDA call this is has
 * none yet: the device's primary one is bound, asked before the launch, not after a failed one, which
 * tools such as compute-sanitizer report. */
static ew_status_t need_program(ewi_user_kernel_t *kernel, const ewi_handle_t *handle, ewi_program_t program)
{
    if (kernel->module == NULL)
        return ewi_fail(EW_ERROR_NOT_SUPPORTED, "the kernel has no compiled code");
    CUcontext context;
    const ew_status_t status = current_context(handle, &context);
    return status != EW_SUCCESS ? status : load_program(kernel, program, context);
}

/* ew_kernel_create and ew_kernel_create_outputs once their arguments make spec. */
static ew_status_t create(ew_handle_t handle, const ewi_kernel_spec_t *spec_value, ew_kernel_t *kernel)
{
    *kernel = NULL;
    const ewi_kernel_spec_t spec = *spec_value;
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
    if ((status = load_program(k, EWI_PROGRAM_FLAT, context)) != EW_SUCCESS) {
        ew_kernel_destroy(value);
        return status;
    }
    *kernel = value;
    return EW_SUCCESS;
}

ew_status_t ew_kernel_create(ew_handle_t handle, const char *source, ew_dtype_t out_dtype, int n_inputs,
                             const ew_dtype_t *in_dtypes, int n_params, ew_kernel_t *kernel)
{
    if (kernel == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "kernel (where the new kernel goes) is NULL");
    const ewi_kernel_spec_t spec = {.source = source,
                                    .out_dtype = out_dtype,
                                    .n_inputs = n_inputs,
                                    .in_dtypes = in_dtypes,
                                    .n_params = n_params};
    return create(handle, &spec, kernel);
}

/* The spec of ew_kernel_create_outputs' (and ew_kernel_cache_fill_outputs') arguments, its outputs
 * checked first (ewi_kernel_check_outputs); ewi_kernel_check checks the rest. */
static ew_status_t outputs_spec(const char *source, int n_outputs, const ew_kernel_output_t *outputs,
                                int n_inputs, const ew_dtype_t *in_dtypes, int n_params,
                                ewi_kernel_spec_t *spec)
{
    const ew_status_t status = ewi_kernel_check_outputs(n_outputs, outputs);
    if (status != EW_SUCCESS)
        return status;
    *spec = (ewi_kernel_spec_t){.source = source,
                                .n_inputs = n_inputs,
                                .in_dtypes = in_dtypes,
                                .n_params = n_params,
                                .n_outputs = n_outputs};
    memcpy(spec->outputs, outputs, (size_t)n_outputs * sizeof *outputs);
    return EW_SUCCESS;
}

ew_status_t ew_kernel_create_outputs(ew_handle_t handle, const char *source, int n_outputs,
                                     const ew_kernel_output_t *outputs, int n_inputs,
                                     const ew_dtype_t *in_dtypes, int n_params, ew_kernel_t *kernel)
{
    if (kernel == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "kernel (where the new kernel goes) is NULL");
    *kernel = NULL;
    ewi_kernel_spec_t spec;
    ew_status_t status = outputs_spec(source, n_outputs, outputs, n_inputs, in_dtypes, n_params, &spec);
    return status == EW_SUCCESS ? create(handle, &spec, kernel) : status;
}

/* ew_kernel_cache_fill and ew_kernel_cache_fill_outputs once their arguments make spec: every program
 * of it, flat, strided and the lists', compiled for arch into the disk cache. */
static ew_status_t fill(ewi_kernel_spec_t spec, const char *arch)
{
    ew_status_t status = ewi_kernel_check(&spec);
    if (status != EW_SUCCESS)
        return status;
    /* the name ew_kernel_create gives a device: "sm_" and its compute capability's digits */
    size_t digits = arch != NULL && strncmp(arch, "sm_", 3) == 0 ? strspn(arch + 3, "0123456789") : 0;
    if (digits < 2 || digits > 3 || arch[3 + digits] != '\0')
        return ewi_fail(EW_ERROR_INVALID_VALUE, "arch \"%.40s\" is not \"sm_\" and a compute capability's digits, "
                                                "as \"sm_90\" names cc 9.0", arch != NULL ? arch : "(null)");
    for (int program = EWI_PROGRAM_FLAT; status == EW_SUCCESS && program < EWI_PROGRAMS; ++program) {
        spec.program = (ewi_program_t)program;
        const ewi_slots_t slots = ewi_kernel_slots(&spec);
        int any = 0; /* a kernel whose inputs cannot be shifted has no shifted program */
        for (int slot = 0; slot < EW_SLOT_COUNT; ++slot)
            any |= slots.present[slot];
        if (any)
            status = ewi_module_store(&spec, arch);
    }
    return status;
}

ew_status_t ew_kernel_cache_fill(const char *source, ew_dtype_t out_dtype, int n_inputs,
                                 const ew_dtype_t *in_dtypes, int n_params, const char *arch)
{
    const ewi_kernel_spec_t spec = {.source = source,
                                    .out_dtype = out_dtype,
                                    .n_inputs = n_inputs,
                                    .in_dtypes = in_dtypes,
                                    .n_params = n_params};
    return fill(spec, arch);
}

ew_status_t ew_kernel_cache_fill_outputs(const char *source, int n_outputs, const ew_kernel_output_t *outputs,
                                         int n_inputs, const ew_dtype_t *in_dtypes, int n_params,
                                         const char *arch)
{
    ewi_kernel_spec_t spec;
    ew_status_t status = outputs_spec(source, n_outputs, outputs, n_inputs, in_dtypes, n_params, &spec);
    return status == EW_SUCCESS ? fill(spec, arch) : status;
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
    return params == NULL && kernel->spec.n_params > 0
               ? ewi_fail(EW_ERROR_INVALID_VALUE, "params is NULL but the kernel takes %d",
                          kernel->spec.n_params)
               : EW_SUCCESS;
}

/* A reduction's scalar for a launch (NULL: the kernel has none): where it goes, as what, and how the
 * launch sets it first (EW_REDUCE_OVERWRITE: to the reduction's value over nothing). */
typedef struct {
    void *address;
    ew_reduce_mode_t mode;
} scalar_t;

/* The functor's bytes: the kernel's parameters, zero past n_params; then, where the launch has a
 * reduction's scalar, the reduction (src/rtc/rtc.c: its target, then a zero key). */
static ew_functor_t functor_of(const ewi_user_kernel_t *kernel, const double *params, const scalar_t *scalar)
{
    ew_functor_t functor = {{0}};
    for (int i = 0; params != NULL && i < kernel->spec.n_params; ++i)
        functor.params[i] = params[i];
    if (scalar != NULL)
        memcpy(&functor.params[EWI_KERNEL_MAX_PARAMS], &scalar->address, sizeof scalar->address);
    return functor;
}

/* The bits of a reduction's value over nothing: 0 for abs max and sum, -inf for max, +inf for min. */
static unsigned long long identity_of(ew_reduce_op_t op, ew_dtype_t dtype)
{
    const unsigned long long infinity = dtype == EW_F64 ? 0x7FF0000000000000ull : 0x7F800000ull;
    const unsigned long long sign = dtype == EW_F64 ? 0x8000000000000000ull : 0x80000000ull;
    return op == EW_REDUCE_MAX ? infinity | sign : op == EW_REDUCE_MIN ? infinity : 0;
}

/* The scalar's checks against the operands' byte spans [lo[k], hi[k]): set, aligned to its size, inside
 * no operand, with EW_CHECK_POINTERS device memory of the handle's device; then, for an overwrite, how's
 * reset to the value over nothing. */
static ew_status_t take_scalar(const ewi_user_kernel_t *kernel, ewi_handle_t *handle, const scalar_t *scalar,
                               int count, const char *const names[], const uintptr_t lo[],
                               const uintptr_t hi[], ew_launch_t *how)
{
    const ew_kernel_output_t *output = &kernel->spec.outputs[kernel->reduction];
    const char *name = kernel->reduction_name;
    const size_t size = ew_dtype_size(output->dtype);
    ew_status_t status = ewi_check_reduction_scalar(name, scalar->address, size, count, names, lo, hi);
    if (status == EW_SUCCESS && handle->check_pointers && (status = ewi_handle_check_device(handle)) == EW_SUCCESS)
        status = ewi_check_pointer(handle->device, name, scalar->address, size);
    if (status == EW_SUCCESS && scalar->mode == EW_REDUCE_OVERWRITE) {
        how->reset = scalar->address;
        how->reset_bytes = size;
        how->reset_value = identity_of(output->reduce, output->dtype);
    }
    return status;
}

/* ew_kernel_launch (scalar NULL) and ew_kernel_launch_outputs once the kernel and its handle are found:
 * its n_arrays arrays, in order. */
static ew_status_t launch_flat(ewi_user_kernel_t *kernel, ewi_handle_t *handle, int64_t n,
                               void *const *arrays, const scalar_t *scalar, const void *const *inputs,
                               const double *params, ew_stream_t stream)
{
    ew_status_t status;
    if (n < 0)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "n = %lld is negative", (long long)n);
    const char *const *names = kernel->names;
    const int outputs = kernel->n_arrays, count = outputs + kernel->spec.n_inputs;
    ewi_operand_t operands[EW_PLAN_MAX_CALL_POINTERS];
    for (int k = 0; k < outputs; ++k)
        operands[k] = (ewi_operand_t){names[k], arrays[k], ew_dtype_size(kernel->arrays[k])};
    for (int i = 0; i < kernel->spec.n_inputs && inputs != NULL; ++i)
        operands[outputs + i] =
            (ewi_operand_t){names[outputs + i], inputs[i], ew_dtype_size(kernel->spec.in_dtypes[i])};
    ew_launch_t how = ewi_launch_of(handle, stream);
    if (scalar != NULL) {
        uintptr_t lo[EW_PLAN_MAX_CALL_POINTERS], hi[EW_PLAN_MAX_CALL_POINTERS];
        const int given = inputs != NULL ? count : outputs;
        ewi_operand_spans(n, operands, given, NULL, lo, hi); /* the operands' names are the kernel's */
        if ((status = take_scalar(kernel, handle, scalar, given, names, lo, hi, &how)) != EW_SUCCESS)
            return status;
    }
    if (n == 0) { /* an overwritten scalar still gets the value over nothing */
        if (how.reset == NULL)
            return EW_SUCCESS;
        status = ewi_handle_check_device(handle);
        return status != EW_SUCCESS ? status : ew_launch_reset(&how);
    }
    if (inputs == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "inputs is NULL with n = %lld", (long long)n);
    if ((status = check_params(kernel, params)) != EW_SUCCESS)
        return status;
    if ((status = ewi_check_flat(handle, n, operands, outputs, count)) != EW_SUCCESS)
        return status;
    if ((status = need_program(kernel, handle, EWI_PROGRAM_FLAT)) != EW_SUCCESS)
        return status;
    /* the program of the plan's kernel loaded at its first use; the plan made again, for the bulk
     * kernel's tiles go by its residency, which its program gives */
    ew_call_t call;
    ew_plan_t plan = ewi_plan_flat(handle, &kernel->set, n, operands, outputs, count, &call);
    const ewi_program_t program = ewi_flat_slot_program(ew_flat_slot(&kernel->set, &plan));
    if (!__atomic_load_n(&kernel->loaded[program], __ATOMIC_ACQUIRE)) {
        if ((status = need_program(kernel, handle, program)) != EW_SUCCESS)
            return status;
        plan = ewi_plan_flat(handle, &kernel->set, n, operands, outputs, count, &call);
    }
    const ew_functor_t functor = functor_of(kernel, params, scalar);
    return ew_launch_flat(&kernel->set, &call, &plan, &functor, &how);
}

/* A kernel of outputs launched as one of one output, or the reverse: refused. */
static ew_status_t check_form(const ewi_user_kernel_t *kernel, ew_kernel_t value, int outputs)
{
    if (outputs && kernel->spec.n_outputs == 0)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "kernel %p has one output: launch it with ew_kernel_launch",
                        (void *)value);
    if (!outputs && kernel->spec.n_outputs > 0)
        return ewi_fail(EW_ERROR_INVALID_VALUE,
                        "kernel %p is a kernel of outputs: launch it with ew_kernel_launch_outputs",
                        (void *)value);
    return EW_SUCCESS;
}

/* What a launch of outputs checks first: a live kernel of outputs (*k, of the live handle *h), the
 * outputs array, the mode; then its arrays' pointers in order, and its scalar's (*scalar, address NULL
 * where it has no reduction). */
static ew_status_t find_outputs_kernel(ew_kernel_t value, void *const *outputs, ew_reduce_mode_t mode,
                                       ewi_user_kernel_t **k, ewi_handle_t **h,
                                       void *arrays[EW_KERNEL_MAX_OUTPUTS], scalar_t *scalar)
{
    ew_status_t status = find_kernel(value, k, h);
    if (status == EW_SUCCESS)
        status = check_form(*k, value, 1);
    if (status != EW_SUCCESS)
        return status;
    if (outputs == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "outputs is NULL");
    if (mode != EW_REDUCE_OVERWRITE && mode != EW_REDUCE_ACCUMULATE)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "mode = %d is not an ew_reduce_mode_t", (int)mode);
    *scalar = (scalar_t){NULL, mode};
    for (int k_out = 0, a = 0; k_out < (*k)->spec.n_outputs; ++k_out)
        if (k_out == (*k)->reduction)
            scalar->address = outputs[k_out];
        else
            arrays[a++] = outputs[k_out];
    return EW_SUCCESS;
}

ew_status_t ew_kernel_launch(ew_kernel_t kernel, int64_t n, void *out, const void *const *inputs,
                             const double *params, ew_stream_t stream)
{
    ewi_user_kernel_t *k;
    ewi_handle_t *h;
    ew_status_t status = find_kernel(kernel, &k, &h);
    if (status == EW_SUCCESS)
        status = check_form(k, kernel, 0);
    return status == EW_SUCCESS ? launch_flat(k, h, n, &out, NULL, inputs, params, stream) : status;
}

ew_status_t ew_kernel_launch_outputs(ew_kernel_t kernel, int64_t n, void *const *outputs,
                                     ew_reduce_mode_t mode, const void *const *inputs, const double *params,
                                     ew_stream_t stream)
{
    ewi_user_kernel_t *k;
    ewi_handle_t *h;
    void *arrays[EW_KERNEL_MAX_OUTPUTS];
    scalar_t scalar;
    const ew_status_t status = find_outputs_kernel(kernel, outputs, mode, &k, &h, arrays, &scalar);
    if (status != EW_SUCCESS)
        return status;
    return launch_flat(k, h, n, arrays, k->reduction >= 0 ? &scalar : NULL, inputs, params, stream);
}

/* ---- the strided launch: the layout checked and coalesced, then the flat launch or a strided kernel ---- */

/* ew_kernel_launch_strided (scalar NULL) and ew_kernel_launch_outputs_strided once the kernel and its
 * handle are found (its arrays and their strides in order): the views checked and coalesced, then the flat
 * launch or a strided kernel. The layout's operands: the first array, the inputs, the other arrays
 * (src/plan/layout.h). */
static ew_status_t launch_strided(ewi_user_kernel_t *kernel, ewi_handle_t *handle, int ndim,
                                  const int64_t *shape, void *const *arrays,
                                  const int64_t *const *array_strides, const scalar_t *scalar,
                                  const void *const *inputs, const int64_t *const *in_strides,
                                  const double *params, ew_stream_t stream)
{
    const char *const *names = kernel->names, *const *strides = kernel->strides_names;
    const int n_arrays = kernel->n_arrays, n_inputs = kernel->spec.n_inputs, count = n_arrays + n_inputs;
    ew_view_t views[EW_LAYOUT_MAX_OPERANDS];
    unsigned outputs = 1u;
    for (int a = 0; a < n_arrays; ++a) {
        const int k = a == 0 ? 0 : n_inputs + a;
        views[k] =
            (ew_view_t){names[a], strides[a], arrays[a], array_strides[a], ew_dtype_size(kernel->arrays[a])};
        outputs |= 1u << k;
    }
    for (int i = 0; i < n_inputs; ++i)
        views[1 + i] =
            (ew_view_t){inputs != NULL ? names[n_arrays + i] : "inputs", strides[n_arrays + i],
                        inputs != NULL ? inputs[i] : NULL, in_strides != NULL ? in_strides[i] : NULL,
                        ew_dtype_size(kernel->spec.in_dtypes[i])};
    ew_layout_t layout;
    ew_status_t status = ew_layout_make(ndim, shape, count, outputs, views, &layout);
    if (status != EW_SUCCESS)
        return status;
    if (layout.n == 0) /* nothing runs; an overwritten scalar still gets the value over nothing */
        return scalar != NULL ? launch_flat(kernel, handle, 0, arrays, scalar, inputs, params, stream)
                              : EW_SUCCESS;
    if ((status = check_params(kernel, params)) != EW_SUCCESS)
        return status;
    void *bases[EW_PLAN_MAX_OUTPUTS] = {NULL};
    const void *input_bases[EWI_KERNEL_MAX_INPUTS] = {NULL};
    for (int a = 0; a < n_arrays; ++a)
        bases[a] = (void *)layout.base[a == 0 ? 0 : n_inputs + a];
    for (int i = 0; i < n_inputs; ++i)
        input_bases[i] = (const void *)layout.base[1 + i];
    if (ew_layout_is_flat(&layout))
        return launch_flat(kernel, handle, layout.n, bases, scalar, input_bases, params, stream);

    ew_launch_t how = ewi_launch_of(handle, stream);
    if (scalar != NULL) {
        uintptr_t lo[EW_LAYOUT_MAX_OPERANDS], hi[EW_LAYOUT_MAX_OPERANDS];
        const char *view_names[EW_LAYOUT_MAX_OPERANDS];
        ewi_view_spans(&layout, views, count, view_names, lo, hi);
        if ((status = take_scalar(kernel, handle, scalar, count, view_names, lo, hi, &how)) != EW_SUCCESS)
            return status;
    }
    if ((status = ewi_check_strided(handle, &layout, views, count)) != EW_SUCCESS)
        return status;
    if ((status = need_program(kernel, handle, EWI_PROGRAM_STRIDED)) != EW_SUCCESS)
        return status;
    const ew_strided_plan_t plan = ew_strided_plan_make(&layout, &handle->policy);
    const ew_functor_t functor = functor_of(kernel, params, scalar);
    return ew_launch_strided(&kernel->set, &plan, bases, input_bases, &functor, &how);
}

ew_status_t ew_kernel_launch_strided(ew_kernel_t kernel_value, int ndim, const int64_t *shape, void *out,
                                     const int64_t *out_strides, const void *const *inputs,
                                     const int64_t *const *in_strides, const double *params,
                                     ew_stream_t stream)
{
    ewi_user_kernel_t *kernel;
    ewi_handle_t *handle;
    ew_status_t status = find_kernel(kernel_value, &kernel, &handle);
    if (status == EW_SUCCESS)
        status = check_form(kernel, kernel_value, 0);
    return status == EW_SUCCESS ? launch_strided(kernel, handle, ndim, shape, &out, &out_strides, NULL,
                                                 inputs, in_strides, params, stream)
                                : status;
}

ew_status_t ew_kernel_launch_outputs_strided(ew_kernel_t kernel_value, int ndim, const int64_t *shape,
                                             void *const *outputs, const int64_t *const *out_strides,
                                             ew_reduce_mode_t mode, const void *const *inputs,
                                             const int64_t *const *in_strides, const double *params,
                                             ew_stream_t stream)
{
    ewi_user_kernel_t *kernel;
    ewi_handle_t *handle;
    void *arrays[EW_KERNEL_MAX_OUTPUTS];
    scalar_t scalar;
    const ew_status_t status =
        find_outputs_kernel(kernel_value, outputs, mode, &kernel, &handle, arrays, &scalar);
    if (status != EW_SUCCESS)
        return status;
    const int64_t *array_strides[EW_KERNEL_MAX_OUTPUTS] = {NULL};
    for (int k = 0, a = 0; k < kernel->spec.n_outputs && out_strides != NULL; ++k)
        if (k != kernel->reduction)
            array_strides[a++] = out_strides[k];
    return launch_strided(kernel, handle, ndim, shape, arrays, array_strides,
                          kernel->reduction >= 0 ? &scalar : NULL, inputs, in_strides, params, stream);
}

/* ---- the lists: every entry checked as its flat launch, then the catalogue's list launches ---- */

ew_status_t ew_kernel_launch_batched(ew_kernel_t kernel_value, int64_t count, const int64_t *n,
                                     void *const *const *outputs, ew_reduce_mode_t mode,
                                     const void *const *const *inputs, const double *params,
                                     const double *entry_params, ew_stream_t stream)
{
    ewi_user_kernel_t *kernel;
    ewi_handle_t *handle;
    ew_status_t status = find_kernel(kernel_value, &kernel, &handle);
    if (status != EW_SUCCESS)
        return status;
    if (mode != EW_REDUCE_OVERWRITE && mode != EW_REDUCE_ACCUMULATE)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "mode = %d is not an ew_reduce_mode_t", (int)mode);
    if (params != NULL && entry_params != NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "params and entry_params are both given: the parameters come "
                                                "from one of them");
    if (count > 0 && (outputs == NULL || inputs == NULL))
        return ewi_fail(EW_ERROR_INVALID_VALUE, "%s is NULL with count = %lld",
                        outputs == NULL ? "outputs" : "inputs", (long long)count);
    const int n_params = kernel->spec.n_params, reduction = kernel->reduction;
    if (count > 0 && entry_params == NULL && (status = check_params(kernel, params)) != EW_SUCCESS)
        return status;
    ewi_list_call_t call = {.count = count,
                            .n = n,
                            .outputs = kernel->n_arrays,
                            .pointers = kernel->n_arrays + kernel->spec.n_inputs,
                            .params_column = n_params > 0,
                            .params = entry_params,
                            .params_stride = (size_t)n_params * sizeof(double),
                            .params_name = "entry_params",
                            .scalar_column = reduction >= 0};
    /* outputs: one per output of the kernel, in its order (arrays and the reduction's scalars) */
    const int given = kernel->spec.n_outputs > 0 ? kernel->spec.n_outputs : 1;
    for (int k = 0, a = 0; k < given && count > 0; ++k)
        if (k == reduction)
            call.scalar = (const void *const *)outputs[k];
        else
            call.address[a++] = (const void *const *)outputs[k];
    for (int j = 0; j < call.pointers && count > 0; ++j) {
        const int output = j < kernel->n_arrays;
        call.name[j] = kernel->names[j];
        if (!output)
            call.address[j] = inputs[j - kernel->n_arrays];
        call.elem_size[j] =
            ew_dtype_size(output ? kernel->arrays[j] : kernel->spec.in_dtypes[j - kernel->n_arrays]);
    }
    if (reduction >= 0) {
        const ew_kernel_output_t *output = &kernel->spec.outputs[reduction];
        call.scalar_name = kernel->reduction_name;
        call.scalar_size = ew_dtype_size(output->dtype);
        call.reset = mode == EW_REDUCE_OVERWRITE && count > 0;
        call.reset_value = identity_of(output->reduce, output->dtype);
    }
    int64_t rows;
    if ((status = ewi_check_list(handle, &call, &rows)) != EW_SUCCESS || (rows == 0 && !call.reset))
        return status;
    /* No rows: the scalars' resets alone, the catalogue's kernel; else the kernel's list program. */
    if (rows > 0 && (status = need_program(kernel, handle, EWI_PROGRAM_BATCHED)) != EW_SUCCESS)
        return status;
    const ew_functor_t functor = functor_of(kernel, params, NULL);
    return ewi_launch_list(handle, &kernel->set, &call, rows, &functor, stream);
}
