/* The C ABI: argument validation, the handle, error text; then the dispatch table and the plan. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "dispatch.h"
#include "driver.h"
#include "elementwise.h"
#include "handle.h"
#include "plan.h"
#include "pointer_check.h"

enum { HANDLE_LIVE = 0x65776831u /* "ewh1" */, HANDLE_DEAD = 0xDEADu };

struct ew_handle_s {
    unsigned magic;
    int device;
    int sm_count;
    int max_threads_per_sm;
    int check_pointers;                       /* EW_CHECK_POINTERS=1 at create */
    ewi_address_range_fn address_range_query; /* for those checks; NULL if the driver lacks it */
    void *_Atomic context;                    /* the device's primary context, retained; NULL: not yet */
    atomic_int adoption_tried;
    ew_plan_bulk_mode_t bulk_copy;
    int bulk_tile_bytes;
    int dependent_launch; /* cc >= 9.0, unless EW_DEPENDENT_LAUNCH=0 at create */
    int capped_shared;    /* bulk: shared memory a block asks so that EW_PLAN_BULK_CAPPED_BLOCKS fit an SM */
    struct ew_handle_s *next_free;
};

/* Destroyed handles are kept for reuse, never freed, so a stale handle reads as dead instead of
 * touching freed memory. Only create and destroy take the lock; calls never do. */
static pthread_mutex_t free_handles_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ew_handle_s *free_handles;

static _Thread_local char last_error[512];

static ew_status_t fail(ew_status_t status, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(last_error, sizeof last_error, format, args);
    va_end(args);
    return status;
}

static ew_status_t fail_cuda(cudaError_t error, const char *call)
{
    return fail(EW_ERROR_CUDA, "%s failed: %s (%s)", call, cudaGetErrorName(error),
                cudaGetErrorString(error));
}

const char *ew_get_last_error_message(void) { return last_error; }

unsigned ew_get_version(void) { return EW_VERSION; }

const char *ew_status_string(ew_status_t status)
{
    static const char *const names[] = {
        "EW_SUCCESS",
        "EW_ERROR_INVALID_VALUE",
        "EW_ERROR_INVALID_HANDLE",
        "EW_ERROR_NOT_SUPPORTED",
        "EW_ERROR_DEVICE_MISMATCH",
        "EW_ERROR_NO_DEVICE",
        "EW_ERROR_CUDA",
        "EW_ERROR_OUT_OF_MEMORY",
    };
    unsigned index = (unsigned)status;
    return index < sizeof names / sizeof names[0] ? names[index] : "unknown status";
}

static const struct {
    const char *name;
    size_t size;
} dtype_info[EW_DTYPE_END] = {
    [EW_BOOL] = {"bool", 1}, [EW_I8] = {"i8", 1},   [EW_U8] = {"u8", 1},         [EW_I16] = {"i16", 2},
    [EW_I32] = {"i32", 4},   [EW_I64] = {"i64", 8}, [EW_F16] = {"f16", 2},       [EW_BF16] = {"bf16", 2},
    [EW_F32] = {"f32", 4},   [EW_F64] = {"f64", 8}, [EW_F8E4M3] = {"f8e4m3", 1}, [EW_F8E5M2] = {"f8e5m2", 1},
};

static int dtype_valid(ew_dtype_t dtype) { return (unsigned)dtype - 1u < (unsigned)(EW_DTYPE_END - 1); }

const char *ew_dtype_name(ew_dtype_t dtype)
{
    return dtype_valid(dtype) ? dtype_info[dtype].name : "invalid";
}

size_t ew_dtype_size(ew_dtype_t dtype) { return dtype_valid(dtype) ? dtype_info[dtype].size : 0; }

static const char *op_name(ew_op_t op)
{
    static const char *const names[EW_OP_END] = {"invalid", "add", "mul", "relu", "cast", "scale_add"};
    return (unsigned)op < EW_OP_END ? names[op] : "invalid";
}

int ew_is_supported(ew_op_t op, ew_dtype_t out_dtype, ew_dtype_t in_dtype)
{
    return ew_dispatch_find(op, out_dtype, in_dtype) != NULL;
}

/* ---- handle ---- */

static ew_status_t check_handle(ew_handle_t handle)
{
    if (handle == NULL)
        return fail(EW_ERROR_INVALID_HANDLE, "handle is NULL");
    if (handle->magic != HANDLE_LIVE)
        return fail(EW_ERROR_INVALID_HANDLE, "handle %p is not a live handle (destroyed?)", (void *)handle);
    return EW_SUCCESS;
}

/* Driver functions for the current-device check; NULL if absent. */
static struct {
    int (*context_current)(void **context);
    int (*device_get)(int *device, int ordinal);
    int (*primary_retain)(void **context, int device);
    int (*primary_release)(int device);
} driver;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

static void find_driver_functions(void)
{
    driver.context_current = (int (*)(void **))ewi_driver_function("cuCtxGetCurrent");
    driver.device_get = (int (*)(int *, int))ewi_driver_function("cuDeviceGet");
    driver.primary_retain = (int (*)(void **, int))ewi_driver_function("cuDevicePrimaryCtxRetain");
    driver.primary_release = (int (*)(int))ewi_driver_function("cuDevicePrimaryCtxRelease");
    if (!driver.context_current || !driver.device_get || !driver.primary_retain || !driver.primary_release)
        driver.context_current = NULL;
}

/* Calls check the current device by comparing the current context with the handle's device's
 * primary context, a thread-local read in the driver, instead of asking the runtime each time
 * (cudaGetDevice measured 62 ns a call on the H200 machine). The first call that finds the handle's
 * device current from its primary context (the runtime's) retains that context, once per handle,
 * so it stays the same context until destroy; other contexts always take the runtime's answer. */
static void adopt_primary_context(struct ew_handle_s *h)
{
    if (driver.context_current == NULL || atomic_exchange(&h->adoption_tried, 1))
        return;
    void *current = NULL, *primary = NULL;
    int device = 0;
    if (driver.context_current(&current) != 0 || current == NULL ||
        driver.device_get(&device, h->device) != 0 || driver.primary_retain(&primary, device) != 0)
        return;
    if (primary == current)
        atomic_store(&h->context, primary);
    else
        driver.primary_release(device);
}

static void release_primary_context(struct ew_handle_s *h)
{
    int device = 0;
    if (atomic_exchange(&h->context, NULL) != NULL && driver.device_get(&device, h->device) == 0)
        driver.primary_release(device);
}

/* Settings of GPUs of cc >= 9.0 (cp.async.bulk, griddepcontrol), read once, at create:
 * EW_BULK_COPY=0 turns the bulk-copy kernel off, =always uses it at every n (tests);
 * EW_BULK_TILE_BYTES (1024 to 32768) sizes its tiles;
 * EW_DEPENDENT_LAUNCH=0 launches every call in plain stream order (measurements). */
static void hopper_settings(struct ew_handle_s *h)
{
    const char *mode = getenv("EW_BULK_COPY");
    h->bulk_copy = mode == NULL || *mode == '\0' ? EW_PLAN_BULK_AUTO
                   : strcmp(mode, "0") == 0      ? EW_PLAN_BULK_OFF
                   : strcmp(mode, "always") == 0 ? EW_PLAN_BULK_ALWAYS
                                                 : EW_PLAN_BULK_AUTO;
    const char *bytes = getenv("EW_BULK_TILE_BYTES");
    long value = bytes != NULL ? strtol(bytes, NULL, 10) : 0;
    if (value >= 1024 && value <= 32768)
        h->bulk_tile_bytes = (int)value;
    const char *dependent = getenv("EW_DEPENDENT_LAUNCH");
    h->dependent_launch = dependent == NULL || strcmp(dependent, "0") != 0;
}

ew_status_t ew_handle_create(int device, ew_handle_t *handle)
{
    if (handle == NULL)
        return fail(EW_ERROR_INVALID_VALUE, "handle: the output pointer is NULL");
    int count = 0;
    cudaError_t error = cudaGetDeviceCount(&count);
    if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver || error == cudaErrorStubLibrary ||
        (error == cudaSuccess && count == 0)) {
        cudaGetLastError(); /* the failed query leaves nothing behind for the caller */
        return fail(EW_ERROR_NO_DEVICE, "no CUDA device or driver: %s", cudaGetErrorName(error));
    }
    if (error != cudaSuccess)
        return fail_cuda(error, "cudaGetDeviceCount");
    if (device < 0 || device >= count)
        return fail(EW_ERROR_INVALID_VALUE, "device: %d is not in [0, %d)", device, count);

    int sm_count = 0, threads = 0;
    if ((error = cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess)
        return fail_cuda(error, "cudaDeviceGetAttribute(MultiProcessorCount)");
    if ((error = cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, device)) !=
        cudaSuccess)
        return fail_cuda(error, "cudaDeviceGetAttribute(MaxThreadsPerMultiProcessor)");

    int major = 0;
    if ((error = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) != cudaSuccess)
        return fail_cuda(error, "cudaDeviceGetAttribute(ComputeCapabilityMajor)");
    int shared_per_sm = 0, reserved_shared = 0;
    if ((error = cudaDeviceGetAttribute(&shared_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor,
                                        device)) != cudaSuccess)
        return fail_cuda(error, "cudaDeviceGetAttribute(MaxSharedMemoryPerMultiprocessor)");
    if ((error = cudaDeviceGetAttribute(&reserved_shared, cudaDevAttrReservedSharedMemoryPerBlock, device)) !=
        cudaSuccess)
        return fail_cuda(error, "cudaDeviceGetAttribute(ReservedSharedMemoryPerBlock)");

    ew_status_t status = ewi_handle_make(device, sm_count, threads, handle);
    if (status == EW_SUCCESS) {
        (*handle)->check_pointers = ewi_pointer_checks_requested(&(*handle)->address_range_query);
        if (major >= 9) {
            hopper_settings(*handle);
            (*handle)->capped_shared = ew_plan_capped_shared_bytes(shared_per_sm, reserved_shared);
        }
        pthread_once(&driver_once, find_driver_functions);
    }
    return status;
}

ew_status_t ewi_handle_make(int device, int sm_count, int max_threads_per_sm, ew_handle_t *handle)
{
    pthread_mutex_lock(&free_handles_lock);
    struct ew_handle_s *h = free_handles;
    if (h != NULL)
        free_handles = h->next_free;
    pthread_mutex_unlock(&free_handles_lock);
    if (h == NULL && (h = malloc(sizeof *h)) == NULL)
        return fail(EW_ERROR_OUT_OF_MEMORY, "handle: out of host memory");
    *h = (struct ew_handle_s){.magic = HANDLE_LIVE,
                              .device = device,
                              .sm_count = sm_count,
                              .max_threads_per_sm = max_threads_per_sm,
                              .bulk_tile_bytes = EW_PLAN_BULK_TILE_BYTES};
    *handle = h;
    return EW_SUCCESS;
}

ew_status_t ew_handle_destroy(ew_handle_t handle)
{
    if (handle == NULL)
        return EW_SUCCESS;
    ew_status_t status = check_handle(handle);
    if (status != EW_SUCCESS)
        return status;
    release_primary_context(handle);
    pthread_mutex_lock(&free_handles_lock);
    handle->magic = HANDLE_DEAD;
    handle->next_free = free_handles;
    free_handles = handle;
    pthread_mutex_unlock(&free_handles_lock);
    return EW_SUCCESS;
}

static ew_status_t get_handle_int(ew_handle_t handle, int *value, const char *what, int which)
{
    ew_status_t status = check_handle(handle);
    if (status != EW_SUCCESS)
        return status;
    if (value == NULL)
        return fail(EW_ERROR_INVALID_VALUE, "%s: the output pointer is NULL", what);
    *value = which == 0 ? handle->device : which == 1 ? handle->sm_count : handle->max_threads_per_sm;
    return EW_SUCCESS;
}

ew_status_t ew_handle_get_device(ew_handle_t handle, int *device)
{
    return get_handle_int(handle, device, "device", 0);
}

ew_status_t ew_handle_get_sm_count(ew_handle_t handle, int *count)
{
    return get_handle_int(handle, count, "count", 1);
}

ew_status_t ew_handle_get_max_threads_per_sm(ew_handle_t handle, int *threads)
{
    return get_handle_int(handle, threads, "threads", 2);
}

/* ---- one call: validate, plan, launch ---- */

typedef struct {
    const char *name;
    const void *address;
    size_t elem_size;
} operand_t;

/* Overlap rules: out may equal an input of the same element size; any other overlap is refused. */
static ew_status_t check_operands(int64_t n, const operand_t *operands, int count)
{
    uintptr_t end[EW_PLAN_MAX_POINTERS];
    for (int i = 0; i < count; ++i) {
        const operand_t *p = &operands[i];
        uintptr_t address = (uintptr_t)p->address;
        if (p->address == NULL)
            return fail(EW_ERROR_INVALID_VALUE, "%s is NULL with n = %lld", p->name, (long long)n);
        if ((address & (p->elem_size - 1)) != 0) /* element sizes are powers of two */
            return fail(EW_ERROR_INVALID_VALUE, "%s = %p is not aligned to its element size %zu", p->name,
                        p->address, p->elem_size);
        uintptr_t bytes;
        if (__builtin_mul_overflow((uintptr_t)n, (uintptr_t)p->elem_size, &bytes) ||
            bytes > UINTPTR_MAX - address)
            return fail(EW_ERROR_INVALID_VALUE, "%s: n = %lld elements run past the end of the address space",
                        p->name, (long long)n);
        end[i] = address + bytes;
    }
    for (int i = 1; i < count; ++i) {
        uintptr_t out = (uintptr_t)operands[0].address, in = (uintptr_t)operands[i].address;
        if (out == in && operands[0].elem_size == operands[i].elem_size)
            continue;
        if (out < end[i] && in < end[0])
            return fail(EW_ERROR_INVALID_VALUE,
                        "out [%p, +%lld elements) overlaps %s; only exact in-place with equal element sizes "
                        "is allowed",
                        operands[0].address, (long long)n, operands[i].name);
    }
    return EW_SUCCESS;
}

/* Validate a call on the handle and look its kernels up; *launcher is NULL when n == 0.
 * entry/arity: for ew_unary and ew_binary, which take the op as an argument. */
static ew_status_t prepare(ew_handle_t handle, const char *entry, int arity, ew_op_t op, ew_dtype_t out_dtype,
                           ew_dtype_t in_dtype, int64_t n, const ew_launcher_t **launcher)
{
    static const int op_arity[EW_OP_END] = {0, 2, 2, 1, 0, 0}; /* cast and scale_add have their own calls */
    ew_status_t status = check_handle(handle);
    if (status != EW_SUCCESS)
        return status;
    if (entry != NULL && ((unsigned)op >= EW_OP_END || op_arity[op] != arity))
        return fail(EW_ERROR_NOT_SUPPORTED, "op %d (%s) is not an op of %s", (int)op, op_name(op), entry);
    if ((*launcher = ew_dispatch_find(op, out_dtype, in_dtype)) == NULL) {
        if (op == EW_OP_CAST)
            return fail(EW_ERROR_NOT_SUPPORTED,
                        "cast from dtype %d (%s) to dtype %d (%s) is not in the catalogue", (int)in_dtype,
                        ew_dtype_name(in_dtype), (int)out_dtype, ew_dtype_name(out_dtype));
        return fail(EW_ERROR_NOT_SUPPORTED, "op %d (%s) on dtype %d (%s) is not in the catalogue", (int)op,
                    op_name(op), (int)out_dtype, ew_dtype_name(out_dtype));
    }
    if (n < 0)
        return fail(EW_ERROR_INVALID_VALUE, "n = %lld is negative", (long long)n);
    if (n == 0)
        *launcher = NULL;
    return EW_SUCCESS;
}

static ew_status_t run(ew_handle_t handle, const ew_launcher_t *launcher, ew_launch_args_t *args,
                       const operand_t *operands, int count)
{
    ew_status_t status = check_operands(args->n, operands, count);
    if (status != EW_SUCCESS)
        return status;

    void *context = NULL, *primary = atomic_load_explicit(&handle->context, memory_order_relaxed);
    if (primary == NULL || driver.context_current(&context) != 0 || context != primary) {
        int current = -1;
        cudaError_t error = cudaGetDevice(&current);
        if (error != cudaSuccess)
            return fail_cuda(error, "cudaGetDevice");
        if (current != handle->device)
            return fail(EW_ERROR_DEVICE_MISMATCH, "the current device is %d but the handle is for device %d",
                        current, handle->device);
        if (primary == NULL)
            adopt_primary_context(handle);
    }

    for (int i = 0; handle->check_pointers && i < count; ++i) {
        char why[256];
        if (!ewi_pointer_ok(handle->device, handle->address_range_query, operands[i].address,
                            (size_t)args->n * operands[i].elem_size, why, sizeof why))
            return fail(EW_ERROR_INVALID_VALUE, "%s = %p %s", operands[i].name, operands[i].address, why);
    }

    uintptr_t address[EW_PLAN_MAX_POINTERS];
    size_t elem_size[EW_PLAN_MAX_POINTERS];
    for (int i = 0; i < count; ++i) {
        address[i] = (uintptr_t)operands[i].address;
        elem_size[i] = operands[i].elem_size;
    }
    args->plan =
        ew_plan_choose(args->n, count, address, elem_size, handle->sm_count, handle->max_threads_per_sm,
                       handle->bulk_copy, handle->bulk_tile_bytes, launcher->block_table);
    args->dependent_launch = handle->dependent_launch;
    args->bulk_shared_min = args->plan.capped ? (size_t)handle->capped_shared : 0;
    ew_launch_fn launch = ew_launcher_pick(launcher, &args->plan);
    cudaError_t error = launch(args);
    if (error != cudaSuccess) {
        cudaGetLastError(); /* the launch's own error is reported here, not left for the caller */
        return fail_cuda(error, "cudaLaunchKernel");
    }
    return EW_SUCCESS;
}

ew_status_t ew_unary(ew_handle_t handle, ew_op_t op, ew_dtype_t dtype, int64_t n, void *out, const void *x,
                     ew_stream_t stream)
{
    const ew_launcher_t *launcher;
    ew_status_t status = prepare(handle, "ew_unary", 1, op, dtype, dtype, n, &launcher);
    if (status != EW_SUCCESS || launcher == NULL)
        return status;
    size_t size = ew_dtype_size(dtype);
    operand_t operands[] = {{"out", out, size}, {"x", x, size}};
    ew_launch_args_t args = {.out = out, .in = {x, NULL}, .n = n, .stream = (cudaStream_t)stream};
    return run(handle, launcher, &args, operands, 2);
}

ew_status_t ew_binary(ew_handle_t handle, ew_op_t op, ew_dtype_t dtype, int64_t n, void *out, const void *a,
                      const void *b, ew_stream_t stream)
{
    const ew_launcher_t *launcher;
    ew_status_t status = prepare(handle, "ew_binary", 2, op, dtype, dtype, n, &launcher);
    if (status != EW_SUCCESS || launcher == NULL)
        return status;
    size_t size = ew_dtype_size(dtype);
    operand_t operands[] = {{"out", out, size}, {"a", a, size}, {"b", b, size}};
    ew_launch_args_t args = {.out = out, .in = {a, b}, .n = n, .stream = (cudaStream_t)stream};
    return run(handle, launcher, &args, operands, 3);
}

ew_status_t ew_cast(ew_handle_t handle, ew_dtype_t out_dtype, ew_dtype_t in_dtype, int64_t n, void *out,
                    const void *x, ew_stream_t stream)
{
    const ew_launcher_t *launcher;
    ew_status_t status = prepare(handle, NULL, 0, EW_OP_CAST, out_dtype, in_dtype, n, &launcher);
    if (status != EW_SUCCESS || launcher == NULL)
        return status;
    operand_t operands[] = {{"out", out, ew_dtype_size(out_dtype)}, {"x", x, ew_dtype_size(in_dtype)}};
    ew_launch_args_t args = {.out = out, .in = {x, NULL}, .n = n, .stream = (cudaStream_t)stream};
    return run(handle, launcher, &args, operands, 2);
}

/* Integer dtypes take alpha as an exact integer of the dtype (bool: 0 or 1), as a wrapping multiplier. */
static ew_status_t integer_alpha(ew_dtype_t dtype, double alpha, uint64_t *alpha_integer)
{
    static const struct {
        double min, max_exclusive;
    } range[EW_DTYPE_END] = {
        [EW_BOOL] = {0, 2},
        [EW_I8] = {-128, 128},
        [EW_U8] = {0, 256},
        [EW_I16] = {-32768, 32768},
        [EW_I32] = {-2147483648.0, 2147483648.0},
        [EW_I64] = {-9223372036854775808.0, 9223372036854775808.0},
    };
    if (!(alpha >= range[dtype].min && alpha < range[dtype].max_exclusive) || alpha != floor(alpha))
        return fail(EW_ERROR_INVALID_VALUE, "alpha = %.17g is not an integer representable in %s", alpha,
                    ew_dtype_name(dtype));
    *alpha_integer = (uint64_t)(int64_t)alpha;
    return EW_SUCCESS;
}

ew_status_t ew_scale_add(ew_handle_t handle, ew_dtype_t dtype, double alpha, int64_t n, void *out,
                         const void *a, const void *b, ew_stream_t stream)
{
    const ew_launcher_t *launcher;
    ew_status_t status = prepare(handle, NULL, 0, EW_OP_SCALE_ADD, dtype, dtype, n, &launcher);
    if (status != EW_SUCCESS)
        return status;
    ew_launch_args_t args = {
        .out = out, .in = {a, b}, .n = n, .stream = (cudaStream_t)stream, .alpha = alpha};
    int is_integer = dtype == EW_BOOL || dtype == EW_I8 || dtype == EW_U8 || dtype == EW_I16 ||
                     dtype == EW_I32 || dtype == EW_I64;
    /* alpha is part of the op, so it is checked even when n == 0 (as PyTorch does on empty tensors) */
    if (is_integer && (status = integer_alpha(dtype, alpha, &args.alpha_integer)) != EW_SUCCESS)
        return status;
    if (launcher == NULL)
        return EW_SUCCESS;
    size_t size = ew_dtype_size(dtype);
    operand_t operands[] = {{"out", out, size}, {"a", a, size}, {"b", b, size}};
    return run(handle, launcher, &args, operands, 3);
}
