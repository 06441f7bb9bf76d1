/* SPDX-License-Identifier: Apache-2.0 */
/* User-defined kernels (ew_kernel_*): the object an ew_kernel_t value names (src/abi/registry.h) and
 * its kernel set, a function of its loaded programs per kernel the launch plan can pick. Defined in
 * src/abi/user_kernel.c; the programs are src/rtc/rtc.c's, their loaded code src/rtc/modules.c's. */
#ifndef EW_USER_KERNEL_H
#define EW_USER_KERNEL_H

#include <stddef.h>

#include "elementwise.h"
#include "launch/kernel_set.h"
#include "plan/plan.h"
#include "rtc/rtc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    ew_handle_t handle;     /* the value: a kernel of a destroyed handle is refused */
    ewi_kernel_spec_t spec; /* what it is made of (its flat program's spec): source its own copy, in_dtypes
                             * the array below */
    ew_dtype_t in_dtypes[EWI_KERNEL_MAX_INPUTS];
    ew_kernel_set_t set; /* its programs' functions, the flat ones' from create, the shifted, bulk,
                          * strided and lists' ones from the first launches that need them */
    void *module;        /* the driver's CUmodule, the in-memory cache's; NULL for ewi_user_kernel_make's */
    char arch[16];       /* "sm_90": what the programs are compiled for */
    int loaded[EWI_PROGRAMS]; /* 1 once set has a program's slots (atomic: set once, released) */
    /* Of spec, once, for the launches: */
    int n_arrays;                             /* its array outputs, 1 to EW_KERNEL_MAX_OUTPUTS */
    ew_dtype_t arrays[EW_KERNEL_MAX_OUTPUTS]; /* their dtypes, in order */
    int reduction; /* the index of its reduction output among spec.outputs, or -1 */
    /* the operands in messages, the arrays then the inputs: ew_kernel_create's "out", a kernel of
     * outputs' "outputs[k]" (k among all its outputs); their strides' likewise */
    const char *names[EW_PLAN_MAX_CALL_POINTERS], *strides_names[EW_PLAN_MAX_CALL_POINTERS];
    const char *reduction_name; /* its scalar's, "outputs[k]"; NULL without a reduction */
} ewi_user_kernel_t;

/* A kernel object for spec on handle without code: launches check their arguments as for a compiled
 * kernel and stop at the device check (EW_ERROR_DEVICE_MISMATCH, or EW_ERROR_CUDA without a GPU).
 * For the CPU tests and the fuzzer; ew_kernel_destroy releases it. */
ew_status_t ewi_user_kernel_make(ew_handle_t handle, const ewi_kernel_spec_t *spec, ew_kernel_t *kernel);

#ifdef __cplusplus
}
#endif

#endif
