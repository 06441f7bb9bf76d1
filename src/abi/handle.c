/* SPDX-License-Identifier: Apache-2.0 */
/* The handle: create, destroy, getters, and the current-device check every call makes. */
#include "abi/handle.h"

#include <stddef.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "launch/driver.h"
#include "abi/error.h"
#include "abi/pointer_check.h"
#include "abi/registry.h"

/* Only create and destroy take its lock; calls never do. */
static ewi_registry_t handles = EWI_REGISTRY_INITIALIZER(ewi_handle_t);

ew_status_t ewi_handle_find(ew_handle_t handle, ewi_handle_t **found)
{
    if (handle == NULL) {
        *found = NULL;
        return ewi_fail(EW_ERROR_INVALID_HANDLE, "handle is NULL");
    }
    if ((*found = ewi_registry_find(&handles, handle)) == NULL)
        return ewi_fail(EW_ERROR_INVALID_HANDLE, "handle %p is not a live handle (destroyed?)", (void *)handle);
    return EW_SUCCESS;
}

/* The first call that finds the handle's device current from its primary context (the runtime's)
 * retains that context, once per handle, so it stays the same context until destroy; later calls
 * compare the current context with it. Other contexts always take the runtime's answer. */
ew_status_t ewi_handle_check_device(ewi_handle_t *handle)
{
    void *primary = atomic_load_explicit(&handle->context, memory_order_relaxed);
    if (primary != NULL && ewi_current_context() == primary)
        return EW_SUCCESS;
    int current = -1;
    cudaError_t error = cudaGetDevice(&current);
    if (error != cudaSuccess)
        return ewi_fail_cuda(error, "cudaGetDevice");
    if (current != handle->device)
        return ewi_fail(EW_ERROR_DEVICE_MISMATCH, "the current device is %d but the handle is for device %d",
                        current, handle->device);
    if (primary == NULL && !atomic_exchange(&handle->adoption_tried, 1)) {
        void *adopted = ewi_retain_current_primary_context(handle->device);
        if (adopted != NULL)
            atomic_store(&handle->context, adopted);
    }
    return EW_SUCCESS;
}

/* A new handle value and its object (*h), its fields set before the value is handed out. */
static ew_status_t handle_add(int device, int sm_count, int max_threads_per_sm, ew_handle_t *handle,
                              ewi_handle_t **h)
{
    void *value;
    *h = ewi_registry_add(&handles, &value);
    *handle = value;
    if (*h == NULL)
        return ewi_fail(EW_ERROR_OUT_OF_MEMORY, "handle: out of host memory");
    (*h)->device = device;
    (*h)->figures = (ew_device_t){.sm_count = sm_count, .max_threads_per_sm = max_threads_per_sm};
    (*h)->policy = ew_policy_for(0, 0);
    return EW_SUCCESS;
}

ew_status_t ewi_handle_make(int device, int sm_count, int max_threads_per_sm, ew_handle_t *handle)
{
    ewi_handle_t *h;
    return handle_add(device, sm_count, max_threads_per_sm, handle, &h);
}

/* The device queries of ew_handle_create, in order. */
static const struct {
    enum cudaDeviceAttr attribute;
    const char *call;
} queries[] = {
    {cudaDevAttrMultiProcessorCount, "cudaDeviceGetAttribute(MultiProcessorCount)"},
    {cudaDevAttrMaxThreadsPerMultiProcessor, "cudaDeviceGetAttribute(MaxThreadsPerMultiProcessor)"},
    {cudaDevAttrComputeCapabilityMajor, "cudaDeviceGetAttribute(ComputeCapabilityMajor)"},
    {cudaDevAttrComputeCapabilityMinor, "cudaDeviceGetAttribute(ComputeCapabilityMinor)"},
};
enum { SM_COUNT, THREADS_PER_SM, MAJOR, MINOR, QUERIES };

/* The oldest driver series that runs the runtime of CUDA version `runtime` (CUDART_VERSION's form):
 * CUDA's minor-version compatibility lets a 12.x runtime run on the drivers of 12.0 (525) on; 13.x
 * needs 580. */
static int driver_series_needed(int runtime)
{
    return runtime / 1000 == 12 ? 525 : 580;
}

/* cudaErrorInsufficientDriver: no driver at all, or one older than the runtime linked in. */
static ew_status_t fail_insufficient_driver(void)
{
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    cudaGetLastError();
    if (driver == 0)
        return ewi_fail(EW_ERROR_NO_DEVICE, "no CUDA device or driver: cudaErrorInsufficientDriver");
    return ewi_fail(EW_ERROR_NO_DEVICE,
                    "the NVIDIA driver is too old: it supports CUDA %d.%d, but this library carries the CUDA "
                    "%d.%d runtime, which needs a driver of the %d series or newer (cudaErrorInsufficientDriver)",
                    driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10,
                    driver_series_needed(runtime));
}

ew_status_t ew_handle_create(int device, ew_handle_t *handle)
{
    if (handle == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "handle: the output pointer is NULL");
    *handle = NULL;
    int count = 0;
    cudaError_t error = cudaGetDeviceCount(&count);
    if (error == cudaErrorInsufficientDriver)
        return fail_insufficient_driver();
    if (error == cudaErrorNoDevice || error == cudaErrorStubLibrary ||
        (error == cudaSuccess && count == 0)) {
        cudaGetLastError(); /* the failed query leaves nothing behind for the caller */
        return ewi_fail(EW_ERROR_NO_DEVICE, "no CUDA device or driver: %s", cudaGetErrorName(error));
    }
    if (error != cudaSuccess)
        return ewi_fail_cuda(error, "cudaGetDeviceCount");
    if (device < 0 || device >= count)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "device: %d is not in [0, %d)", device, count);

    _Static_assert(sizeof queries / sizeof queries[0] == QUERIES, "one query per figure");
    int figure[QUERIES];
    for (int i = 0; i < QUERIES; ++i)
        if ((error = cudaDeviceGetAttribute(&figure[i], queries[i].attribute, device)) != cudaSuccess)
            return ewi_fail_cuda(error, queries[i].call);

    ewi_handle_t *h;
    ew_status_t status = handle_add(device, figure[SM_COUNT], figure[THREADS_PER_SM], handle, &h);
    if (status != EW_SUCCESS)
        return status;
    h->check_pointers = ewi_pointer_checks_requested();
    h->policy = ew_policy_for(figure[MAJOR], figure[MINOR]);
    ew_policy_apply_environment(&h->policy);
    return EW_SUCCESS;
}

/* The primary context a destroyed handle retained, released before its slot can be taken again. */
static void handle_release(void *object)
{
    ewi_handle_t *h = object;
    if (atomic_exchange(&h->context, NULL) != NULL)
        ewi_release_primary_context(h->device);
}

ew_status_t ew_handle_destroy(ew_handle_t handle)
{
    if (handle == NULL)
        return EW_SUCCESS;
    if (!ewi_registry_remove(&handles, handle, handle_release))
        return ewi_fail(EW_ERROR_INVALID_HANDLE, "handle %p is not a live handle (destroyed?)",
                        (void *)handle);
    return EW_SUCCESS;
}

/* The getters: each a figure of the handle (an int at `offset` in its object), by name. */
static ew_status_t get_figure(ew_handle_t handle, const char *what, int *value, size_t offset)
{
    ewi_handle_t *h;
    ew_status_t status = ewi_handle_find(handle, &h);
    if (status != EW_SUCCESS)
        return status;
    if (value == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "%s: the output pointer is NULL", what);
    memcpy(value, (const char *)h + offset, sizeof *value);
    return EW_SUCCESS;
}

ew_status_t ew_handle_get_device(ew_handle_t handle, int *device)
{
    return get_figure(handle, "device", device, offsetof(ewi_handle_t, device));
}

ew_status_t ew_handle_get_sm_count(ew_handle_t handle, int *count)
{
    return get_figure(handle, "count", count, offsetof(ewi_handle_t, figures.sm_count));
}

ew_status_t ew_handle_get_max_threads_per_sm(ew_handle_t handle, int *threads)
{
    return get_figure(handle, "threads", threads, offsetof(ewi_handle_t, figures.max_threads_per_sm));
}
