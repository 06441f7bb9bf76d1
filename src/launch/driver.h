/* SPDX-License-Identifier: Apache-2.0 */
/* The driver, reached without a link to libcuda: every entry point the library calls, found once per
 * process through the runtime's entry-point query, here alone. The launch (src/launch/launch.c) goes through
 * it, and the handle tells the current device by its context, a thread-local read in the driver,
 * instead of asking the runtime on every call (cudaGetDevice measured 62 ns a call on an H200 machine). */
#ifndef EW_DRIVER_H
#define EW_DRIVER_H

#include <stddef.h>

#include <cuda.h> /* the driver's types only: its functions are found at run time */

#include "elementwise.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The driver's functions (as of the CUDA 12.0 ABI); each NULL where the driver lacks it. */
typedef struct {
    CUresult (*context_current)(CUcontext *context);
    CUresult (*device_get)(CUdevice *device, int ordinal);
    CUresult (*primary_retain)(CUcontext *context, CUdevice device);
    CUresult (*primary_release)(CUdevice device);
    CUresult (*module_load)(CUmodule *module, const void *image);
    CUresult (*module_unload)(CUmodule module);
    CUresult (*module_function)(CUfunction *function, CUmodule module, const char *name);
    CUresult (*launch)(const CUlaunchConfig *config, CUfunction function, void **params, void **extra);
    CUresult (*memset32)(CUdeviceptr address, unsigned value, size_t count, CUstream stream);
    CUresult (*memset8)(CUdeviceptr address, unsigned char value, size_t count, CUstream stream);
    CUresult (*occupancy)(int *blocks, CUfunction function, int block_size, size_t dynamic_shared);
    CUresult (*address_range)(CUdeviceptr *base, size_t *size, CUdeviceptr address);
    CUresult (*error_name)(CUresult error, const char **name);
} ewi_driver_t;

/* The table, its functions found at the first call (thread-safe, leaves no runtime error behind). */
const ewi_driver_t *ewi_driver(void);

/* EW_ERROR_CUDA with "CALL failed: NAME (RESULT)" as the message. */
ew_status_t ewi_fail_driver(CUresult result, const char *call);

/* The calling thread's current context; NULL where there is none. */
void *ewi_current_context(void);

/* The primary context of device `ordinal`, retained, if it is the calling thread's current context;
 * NULL (and nothing retained) otherwise. Each non-NULL result is released by one
 * ewi_release_primary_context(ordinal). */
void *ewi_retain_current_primary_context(int ordinal);
void ewi_release_primary_context(int ordinal);

#ifdef __cplusplus
}
#endif

#endif
