/* SPDX-License-Identifier: Apache-2.0 */
/* Opt-in pointer checks (EW_CHECK_POINTERS=1 at handle creation): each call asks the driver
 * whether every pointer is device memory of the handle's device and whether [p, p + bytes) lies
 * inside its allocation, so a host pointer passed by mistake is refused instead of faulting the
 * context. Costs a few driver queries per call; off by default. */
#ifndef EW_POINTER_CHECK_H
#define EW_POINTER_CHECK_H

#include <stddef.h>

#include "elementwise.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if EW_CHECK_POINTERS asks for checks. */
int ewi_pointer_checks_requested(void);

/* 1 if [address, address + bytes) is device memory of `device` inside one allocation (the driver's
 * cuMemGetAddressRange, where it has one); otherwise 0, with the reason written to why. */
int ewi_pointer_ok(int device, const void *address, size_t bytes, char *why, size_t why_size);

/* The check of every call family: EW_SUCCESS where ewi_pointer_ok, else EW_ERROR_INVALID_VALUE with
 * "NAME = ADDRESS REASON" as the message. */
ew_status_t ewi_check_pointer(int device, const char *name, const void *address, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif
