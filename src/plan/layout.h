/* SPDX-License-Identifier: Apache-2.0 */
/* Strided layouts: the checks a strided call's views must pass, their coalescing into the fewest
 * dimensions that address the same elements (src/plan/layout.c), and the strided launch plan (which kernel,
 * how its operands are read, its grid; src/plan/strided_plan.c, its parts in src/plan/strided_plan.h). Pure C, so
 * the CPU tests check it against a brute-force model; the kernels (src/device/strided.cuh) take the plan as it
 * is. NVRTC sees the plan's types only (run-time
 * compiled ops' strided kernels: src/rtc/rtc.c defines EW_MAX_DIMS for it). */
#ifndef EW_LAYOUT_H
#define EW_LAYOUT_H

#if !defined(__CUDACC_RTC__)
#include <stddef.h>
#include <stdint.h>

#include "elementwise.h"
#endif
#include "plan/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    /* out, up to four inputs (two for the catalogue's ops) and, for run-time compiled ops, up to three
     * more outputs after the inputs */
    EW_LAYOUT_MAX_OPERANDS = EW_PLAN_MAX_CALL_POINTERS,
    EW_ROWS_MAX_SHARED = 49152 /* the staged slots of a rows block: no more than a launch gets unasked */
};

/* Division by a fixed divisor d in [1, 2^63) as a multiply-high, an add and a shift, exact for every
 * dividend in [0, 2^63): q = (mulhi(n, magic) + n) >> shift (round-up method, as PyTorch's IntDivider
 * does in 32 bits). */
typedef struct {
    uint64_t divisor;
    uint64_t magic;
    int shift;
} ew_divider_t;

/* How a kernel reaches one operand. */
typedef enum {
    EW_ACCESS_PACKED = 0,  /* contiguous with out at out's index and pack phase: whole aligned packs */
    EW_ACCESS_LINEAR = 1,  /* contiguous with out at another phase: element by element at out's index */
    EW_ACCESS_SCALAR = 2,  /* one element for all (every stride 0): loaded once */
    EW_ACCESS_INDEXED = 3, /* by its strides from the element's coordinates */
    EW_ACCESS_TILED = 4    /* tiled kernel: read along the tile's other dimension into shared memory */
} ew_access_t;

typedef enum {
    EW_STRIDED_FLAT = 0,   /* every operand contiguous alike: the flat call (ew_layout_is_flat) */
    EW_STRIDED_GATHER = 1, /* out walked in packs of its flat index; inputs as their access says */
    EW_STRIDED_TILED = 2,  /* an input transposed against out: tiles of dimensions 0 and tile_dim */
    EW_STRIDED_ROWS = 3    /* out dense over at most two dimensions: packs of out; inputs whole, scalar or
                              read along the row (a broadcast row or column) */
} ew_strided_kernel_t;

/* The strided plan: the coalesced layout, as the kernels index it, and the grid. */
typedef struct {
    ew_strided_kernel_t kernel;
    int ndim;
    int64_t n;
    int64_t shape[EW_MAX_DIMS];
    ew_divider_t divider[EW_MAX_DIMS]; /* by shape[d] */
    int64_t stride[EW_LAYOUT_MAX_OPERANDS][EW_MAX_DIMS];
    int64_t carry[EW_LAYOUT_MAX_OPERANDS]; /* offset step from the end of a dimension-0 run to the next */
    ew_access_t access[EW_LAYOUT_MAX_OPERANDS];
    int pack;      /* gather, rows: elements per pack (the direct kernel's widest) */
    int64_t head;  /* gather, rows: elements before out's first whole pack (0 where out is indexed) */
    int64_t packs; /* gather, rows: whole packs from head; the rest, up to n, are the tail */
    int tile_dim;  /* tiled: the dimension tiled with dimension 0 */
    int tile_run;  /* tiled: a thread's run, along 0 and along tile_dim (EW_TILE_RUN) */
    int64_t tiles; /* tiled: tiles in all, a block each */
    ew_divider_t tile_divider[EW_MAX_DIMS]; /* tiled: the tile index split by tile_extent */
    int64_t tile_extent[EW_MAX_DIMS];       /* tiled: tiles along 0, along tile_dim, the other extents */
    int tile_order[EW_MAX_DIMS];            /* tiled: the dimension of each entry of tile_extent */
    unsigned tile_vector;                   /* tiled: bit k where operand k's runs are aligned vectors */
    int block_packs;                        /* rows: packs a block takes, a multiple of EW_ROWS_GROUP */
    int rows_whole;                         /* rows: every input read along the row takes whole packs */
    int rows_spliced;                       /* rows: not rows_whole; an input runs along rows of
                                             * two packs or more (its packs at another phase spliced) */
    unsigned rows_table;                    /* rows: bit k where input k, broadcast over rows shorter than
                                             * two packs, takes its packs from a table of one a phase */
    unsigned staged;                        /* rows: bit k where input k comes by bulk copies */
    unsigned shared_bytes;                  /* rows: the staged inputs' slots, then the tables (16 bytes
                                             * a pack), in shared memory */
    unsigned blocks;
} ew_strided_plan_t;

#if !defined(__CUDACC_RTC__)
/* One operand of a strided call as the caller gave it: strides in elements (NULL: C-contiguous). */
typedef struct {
    const char *name;       /* "out", "a", "b", "x" */
    const char *strides_name; /* "out_strides", ... */
    const void *address;
    const int64_t *strides;
    size_t elem_size;
} ew_view_t;

/* The views coalesced: dimension 0 is out's innermost (smallest stride), extents all >= 2, every
 * stride of out positive, adjacent dimensions merged wherever every operand allows. Operand k's element
 * at index (i_0, ..., i_{ndim-1}) is at base[k] + sum_d i_d * stride[k][d] elements. */
typedef struct {
    int ndim; /* 0 (one element) to EW_MAX_DIMS */
    int count;
    int64_t n; /* elements */
    int64_t shape[EW_MAX_DIMS];
    int64_t stride[EW_LAYOUT_MAX_OPERANDS][EW_MAX_DIMS];
    uintptr_t base[EW_LAYOUT_MAX_OPERANDS]; /* byte addresses of the elements at index 0 */
    size_t elem_size[EW_LAYOUT_MAX_OPERANDS]; /* bytes an element, as the views gave them */
    unsigned outputs;                         /* bit k where operand k is an output (bit 0: out) */
} ew_layout_t;

/* Checks views of shape (ndim extents, outermost first, as the caller gives it) and coalesces them.
 * views[0] is out; so is each view of a bit of `outputs` (bit 0 implied; a kernel's further arrays,
 * after its inputs): each must address distinct elements and overlap no other operand but an input
 * exactly in place (never another output). On failure returns the status with the message set (naming the
 * operand and the dimension); on success *layout holds n (0: nothing to do, and nothing else is filled). */
ew_status_t ew_layout_make(int ndim, const int64_t *shape, int count, unsigned outputs,
                           const ew_view_t views[], ew_layout_t *layout);

/* 1 if every operand is contiguous over the layout, in the same order: the flat call does it. */
int ew_layout_is_flat(const ew_layout_t *layout);

/* The byte range [*lo, *hi) operand k spans. */
void ew_layout_span(const ew_layout_t *layout, int k, uintptr_t *lo, uintptr_t *hi);

ew_divider_t ew_divider_make(uint64_t divisor);
static inline uint64_t ew_divider_div(const ew_divider_t *d, uint64_t n)
{
    const uint64_t high = (uint64_t)(((unsigned __int128)n * d->magic) >> 64);
    return (high + n) >> d->shift;
}

/* The plan of a coalesced layout, under the handle's policy (bulk copies for the rows kernel's staged
 * inputs where it has them on): the chooser's kernel, planned by that kernel's planner
 * (src/plan/strided_plan.h); a flat layout's plan holds the layout alone. */
ew_strided_plan_t ew_strided_plan_make(const ew_layout_t *layout, const ew_policy_t *policy);
#endif

#ifdef __cplusplus
}
#endif

#endif
