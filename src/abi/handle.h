/* SPDX-License-Identifier: Apache-2.0 */
/* The handle: the device's figures and the architecture's tuning policy, fixed at creation, and the
 * device's primary context, retained by the first call that finds it current. An ew_handle_t is a
 * value of src/abi/registry.h naming such an object, never its address: ewi_handle_find gives the object. */
#ifndef EW_HANDLE_H
#define EW_HANDLE_H

#include <stdatomic.h>

#include "elementwise.h"
#include "plan/plan.h"
#include "plan/policy.h"

typedef struct {
    int device;
    ew_device_t figures;
    ew_policy_t policy;                       /* the architecture's, with the environment's overrides */
    int check_pointers;    /* EW_CHECK_POINTERS=1 at create */
    void *_Atomic context; /* the device's primary context, retained; NULL: not yet */
    atomic_int adoption_tried;
} ewi_handle_t;

#ifdef __cplusplus
extern "C" {
#endif

/* A handle from given device figures, with no device query and the policy of GPUs before cc 9.0
 * (the direct kernel, plain launches). ew_handle_create queries the device and calls it; the CPU
 * tests call it to reach validation and dispatch without a GPU. */
ew_status_t ewi_handle_make(int device, int sm_count, int max_threads_per_sm, ew_handle_t *handle);

/* EW_SUCCESS and the object of a live handle in *found; EW_ERROR_INVALID_HANDLE with the message set
 * (naming `handle`) and *found NULL otherwise: NULL, destroyed, or never made. */
ew_status_t ewi_handle_find(ew_handle_t handle, ewi_handle_t **found);

/* EW_SUCCESS when the calling thread's current device is the handle's; EW_ERROR_DEVICE_MISMATCH or
 * EW_ERROR_CUDA with the message set otherwise. */
ew_status_t ewi_handle_check_device(ewi_handle_t *handle);

#ifdef __cplusplus
}
#endif

#endif
