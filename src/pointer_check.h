/* SPDX-License-Identifier: Apache-2.0 */
/* Opt-in pointer checks (EW_CHECK_POINTERS=1 at handle creation): each call asks the driver
 * whether every pointer is device memory of the handle's device and whether [p, p + bytes) lies
 * inside its allocation, so a host pointer passed by mistake is refused instead of faulting the
 * context. Costs a few driver queries per call; off by default. */
#ifndef EW_POINTER_CHECK_H
#define EW_POINTER_CHECK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The driver's cuMemGetAddressRange, found at run time so the library needs no link to libcuda. */
typedef int (*ewi_address_range_fn)(unsigned long long *base, size_t *size, unsigned long long address);

/* 1 if EW_CHECK_POINTERS asks for checks, and *range_query then holds the driver query (or NULL). */
int ewi_pointer_checks_requested(ewi_address_range_fn *range_query);

/* 1 if [address, address + bytes) is device memory of `device` inside one allocation; otherwise 0,
 * with the reason written to why. */
int ewi_pointer_ok(int device, ewi_address_range_fn range_query, const void *address, size_t bytes, char *why,
                   size_t why_size);

#ifdef __cplusplus
}
#endif

#endif
