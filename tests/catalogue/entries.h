/* SPDX-License-Identifier: Apache-2.0 */
/* What the tests of the catalogue's kernel sets walk: every entry of the dispatch table, and every
 * phase within 16 bytes of a call's pointers. Header-only. */
#ifndef EW_TESTS_ENTRIES_H
#define EW_TESTS_ENTRIES_H

#include <stddef.h>
#include <stdint.h>

#include "catalogue/dispatch.h"
#include "plan/plan.h"

/* Every entry of the table with its op and dtypes (set: its kernel set); the body runs once per entry
 * (`continue` goes on to the next one). */
#define FOR_EACH_ENTRY(op, out, in, set)                                                 \
    for (int op = 1; op < EW_OP_END; ++op)                                               \
        for (int out = 1; out < EW_DTYPE_END; ++out)                                     \
            for (int in = 1; in < EW_DTYPE_END; ++in)                                    \
                for (const ew_kernel_set_t *set =                                        \
                         ew_dispatch_find((ew_op_t)op, (ew_dtype_t)out, (ew_dtype_t)in); \
                     set != NULL; set = NULL)

/* The phases count pointers of these element sizes take within 16 bytes, all combined. */
static inline int entry_phases(int count, const size_t size[])
{
    int phases = 1;
    for (int i = 0; i < count; ++i)
        phases *= 16 / (int)size[i];
    return phases;
}

/* call's pointers (out first, 1 MiB apart) at combination `phase` of their phases, and their sizes. */
static inline void entry_phase_call(int phase, int count, const size_t size[], ew_call_t *call)
{
    call->count = count;
    for (int i = 0, rest = phase; i < count; ++i) {
        const int per = 16 / (int)size[i];
        call->address[i] = (uintptr_t)(i + 1) * 0x100000 + (uintptr_t)(rest % per) * size[i];
        call->elem_size[i] = size[i];
        rest /= per;
    }
}

#endif
