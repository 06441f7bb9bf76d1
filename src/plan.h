/* Launch plan: pack width, scalar head and grid size for one call, as pure functions of the
 * pointers, n and the device figures cached in the handle. C, so the CPU tests can check it. */
#ifndef EW_PLAN_H
#define EW_PLAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    EW_PLAN_MAX_POINTERS = 3,    /* out and up to two inputs */
    EW_PLAN_MAX_PACK_BYTES = 16, /* the widest single access */
    EW_PLAN_BLOCK_THREADS = 256,
    EW_PLAN_WAVES = 32
};

typedef struct {
    int pack;        /* elements per vector access: 1, 2, 4 or 8 */
    int unroll;      /* packs each thread loads before it computes */
    int64_t head;    /* leading elements done one by one so every pointer is pack-aligned after them */
    unsigned blocks; /* grid size; the kernel strides over the rest */
} ew_plan_t;

/* Largest legal pack for elements of max_elem_size bytes: P * size <= 16 and P <= 8. */
int ew_plan_max_pack(size_t max_elem_size);

/* Packs per thread per step: enough to have 16 bytes of the widest type in flight per thread. */
int ew_plan_unroll(int pack, size_t max_elem_size);

/* Plan a call over n elements (n > 0) with count pointers, each aligned to its element size.
 * The pack is the largest P for which all pointers sit at the same element phase modulo P; the
 * head peels that phase so the body is fully vectorised (head is 0 when all are P-aligned). */
ew_plan_t ew_plan_make(int64_t n, int count, const uintptr_t address[], const size_t elem_size[],
                       int sm_count, int max_threads_per_sm);

#ifdef __cplusplus
}
#endif

#endif
