/* Internal (not exported): a handle from given device figures, with no device query. The C ABI's
 * ew_handle_create queries the device and calls it; the CPU tests call it to reach validation
 * and dispatch without a GPU. */
#ifndef EW_HANDLE_H
#define EW_HANDLE_H

#include "elementwise.h"

#ifdef __cplusplus
extern "C" {
#endif

ew_status_t ewi_handle_make(int device, int sm_count, int max_threads_per_sm, ew_handle_t *handle);

#ifdef __cplusplus
}
#endif

#endif
