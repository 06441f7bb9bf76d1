/* SPDX-License-Identifier: Apache-2.0 */
/* The in-memory cache in front of NVRTC and the on-disk cache (src/rtc/kernel_cache.h): the code of
 * each program, loaded through the driver once per context and kept for the process's life, with the
 * function of every slot the program has (src/launch/kernel_set.h). */
#ifndef EW_MODULES_H
#define EW_MODULES_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h> /* the driver's types only: its functions are src/launch/driver.c's */

#include "elementwise.h"
#include "launch/kernel_set.h"
#include "rtc/rtc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ewi_module_s {
    uint64_t hash;
    char *key; /* what was compiled (ewi_module_load) */
    size_t key_size;
    CUcontext context;
    CUmodule module;
    CUfunction function[EW_SLOT_COUNT]; /* NULL where the program has no such kernel */
    int bulk_blocks_per_sm;             /* 0 where the program has no bulk kernel or the driver would not say */
    struct ewi_module_s *next;
} ewi_module_t;

/* spec's program compiled for arch and loaded in context, or found in the caches: from memory, else
 * from the disk cache, else compiled by NVRTC (and stored on disk). A program the disk cache held that
 * the driver refuses is compiled again once. *found lives as long as the process. */
ew_status_t ewi_module_load(const ewi_kernel_spec_t *spec, const char *arch, CUcontext context,
                            const ewi_module_t **found);

/* spec's program compiled for arch into the disk cache, unless it holds it already (a disk hit): no
 * device, no context. EW_ERROR_NOT_SUPPORTED where there is no disk cache, it could not store the
 * program, or there is no NVRTC; EW_ERROR_INVALID_VALUE where the source or arch does not compile. */
ew_status_t ewi_module_store(const ewi_kernel_spec_t *spec, const char *arch);

/* The count of one of ew_kernel_cache_get_count's counters, at the time of the call. */
uint64_t ewi_kernel_cache_count(ew_kernel_cache_counter_t counter);

#ifdef __cplusplus
}
#endif

#endif
