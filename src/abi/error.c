/* SPDX-License-Identifier: Apache-2.0 */
#include "abi/error.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[512];

ew_status_t ewi_fail(ew_status_t status, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(last_error, sizeof last_error, format, args);
    va_end(args);
    return status;
}

ew_status_t ewi_fail_cuda(cudaError_t error, const char *call)
{
    return ewi_fail(EW_ERROR_CUDA, "%s failed: %s (%s)", call, cudaGetErrorName(error),
                    cudaGetErrorString(error));
}

const char *ew_get_last_error_message(void) { return last_error; }

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
