/* SPDX-License-Identifier: Apache-2.0 */
/* The calling thread's last error message and the helpers that set it. */
#ifndef EW_ERROR_H
#define EW_ERROR_H

#include <cuda_runtime_api.h>

#include "elementwise.h"

/* Sets the thread's message from format and returns status. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
ew_status_t ewi_fail(ew_status_t status, const char *format, ...);

/* EW_ERROR_CUDA, with a message naming the call and the CUDA error. */
ew_status_t ewi_fail_cuda(cudaError_t error, const char *call);

#endif
