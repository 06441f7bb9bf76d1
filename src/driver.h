/* SPDX-License-Identifier: Apache-2.0 */
/* The driver, reached without a link to libcuda: its functions are found at run time through the
 * runtime's entry-point query. Besides the launch (src/launch.cuh) and the pointer checks, the handle
 * uses it to tell the current device by its context, a thread-local read in the driver, instead of
 * asking the runtime on every call (cudaGetDevice measured 62 ns a call on an H200 machine). */
#ifndef EW_DRIVER_H
#define EW_DRIVER_H

#ifdef __cplusplus
extern "C" {
#endif

/* The driver's function `name` (as of the CUDA 12.0 ABI), or NULL if the driver lacks it; leaves no
 * error behind for the caller. */
void *ewi_driver_function(const char *name);

/* The calling thread's current context; NULL where there is none. For callers that hold a context from
 * ewi_retain_current_primary_context (the functions it needs are found by then). */
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
