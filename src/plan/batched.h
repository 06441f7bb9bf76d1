/* SPDX-License-Identifier: Apache-2.0 */
/* Tensor lists: how a list of flat calls is packed into launches. Pure C, so the CPU tests check it.
 *
 * The entries' descriptors travel in one kernel parameter, a descriptor block: a header, then per row
 * its first block (u32), its length (u32) and its pointers (u64 each), as arrays of the block's row
 * capacity. A row is an entry, or a slice of at most EW_BATCHED_MAX_ROW elements of one (its pointers
 * advanced to the slice, which keeps their phases). Each thread block of a launch runs one chunk of
 * one row: block b finds its row as the last whose first block is <= b. Chunks are a power-of-two
 * number of the kernel's steps (a step: every thread of the block moves its bytes in flight once),
 * chosen per launch so that its blocks fill the GPU a few times over: small lists get one-step blocks,
 * large ones longer blocks that amortize the row lookup. Rows never cross launches; a launch takes as
 * many rows as its block holds, so a list takes ceil(rows / capacity) launches. */
#ifndef EW_BATCHED_H
#define EW_BATCHED_H

#if !defined(__CUDACC_RTC__) /* NVRTC (src/device/batched.cuh): the device header defines the types */
#include <stddef.h>
#include <stdint.h>
#endif

#include "plan/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    /* Kernel parameter bytes: 4 KiB everywhere, 32 764 on drivers of CUDA 12.1 and later (cc >= 7.0).
     * The descriptor block leaves room for the functor's parameters beside it. */
    EW_BATCHED_SMALL_PARAMS = 4096,
    EW_BATCHED_LARGE_PARAMS = 32764,
    EW_BATCHED_SMALL_BLOCK = 4096 - 128,
    EW_BATCHED_LARGE_BLOCK = 32 * 1024 - 128,
    EW_BATCHED_HEADER = 16,
    EW_BATCHED_MAX_ROW = 1 << 30, /* elements of one row: a multiple of every chunk, and fits u32 */
    /* a row's columns: its arrays, its inputs and, for run-time compiled ops, its entry's parameters
     * and its entry's reduction scalar */
    EW_BATCHED_MAX_COLUMNS = EW_PLAN_MAX_CALL_POINTERS + 2
};

/* A descriptor block, at the largest size; the 4 KiB kernel takes its first EW_BATCHED_SMALL_BLOCK
 * bytes, laid out for that size. */
typedef struct {
    uint32_t rows;   /* rows in this launch, >= 1 */
    uint32_t chunk;  /* elements per thread block: a power of two times the step */
    uint32_t blocks; /* the launch's grid */
    uint32_t reserved;
    uint64_t data[(EW_BATCHED_LARGE_BLOCK - EW_BATCHED_HEADER) / 8]; /* the arrays, at byte offsets below */
} ew_batched_desc_t;

/* Rows a block of `block_bytes` holds for rows of `pointers` pointer columns. The rule, shared with
 * the kernel, which takes it at compile time. */
#define EW_BATCHED_CAPACITY(block_bytes, pointers) \
    ((int)(((block_bytes)-EW_BATCHED_HEADER) / (8 + 8 * (pointers))))
/* Offsets in data[] of the arrays of a block of `capacity` rows: first blocks, lengths, pointer j. */
#define EW_BATCHED_FIRST_AT(capacity) 0
#define EW_BATCHED_LENGTH_AT(capacity) (4 * (capacity))
#define EW_BATCHED_POINTER_AT(capacity, j) (8 * (capacity) + 8 * (capacity) * (j))

/* Elements one step of the kernel moves: 256 threads, each EW_PLAN_UNROLL packs of the widest legal
 * pack (as the direct kernel's threads). A power of two. */
#define EW_BATCHED_STEP(widest)                                                                \
    ((uint32_t)EW_PLAN_BLOCK_THREADS * (uint32_t)EW_PLAN_UNROLL(EW_PLAN_MAX_PACK(widest) * (widest), 0) * \
     (uint32_t)EW_PLAN_MAX_PACK(widest))

/* A list as the packer sees it: count entries of n[i] elements (n[i] >= 0; 0 has no rows), pointers
 * pointer arrays (the outputs first), each of elements of elem_size[j] bytes; with params_column, one
 * more column, which slices do not move: entry i's parameters at params + i * params_stride bytes
 * (params NULL: NULL for every row, the launch's own parameters); with scalar_column, the last column,
 * which slices do not move either: entry i's reduction scalar, scalar[i] (every row of the entry
 * commits its blocks' folds there; scalar NULL: NULL for every row, no commit). */
typedef struct {
    int64_t count;
    const int64_t *n;
    int pointers;
    const void *const *address[EW_BATCHED_MAX_COLUMNS - 2];
    size_t elem_size[EW_BATCHED_MAX_COLUMNS - 2];
    int params_column;
    const void *params;
    size_t params_stride;
    int scalar_column;
    const void *const *scalar;
    int block_bytes;       /* EW_BATCHED_SMALL_BLOCK or EW_BATCHED_LARGE_BLOCK */
    int64_t target_blocks; /* blocks one fill of the GPU holds: SMs * threads per SM / 256 */
} ew_batched_list_t;

/* The pointer columns of the list's rows: its pointers, its parameters' column and its scalars'. */
static inline int ew_batched_columns(const ew_batched_list_t *list)
{
    return list->pointers + list->params_column + list->scalar_column;
}

/* Where the next launch starts: entry and element within it. Start at {0, 0}. */
typedef struct {
    int64_t entry;
    int64_t offset;
} ew_batched_cursor_t;

/* The widest element size of the list. */
size_t ew_batched_widest(const ew_batched_list_t *list);

/* Fills *desc with the next launch from *cursor and advances it: returns 1, or 0 when the list has no
 * more rows (desc untouched). */
int ew_batched_next(const ew_batched_list_t *list, ew_batched_cursor_t *cursor, ew_batched_desc_t *desc);

/* An overwriting reduction's reset over a list, one launch of the reset kernel (a kernel parameter of
 * the 4 KiB every driver takes): count scalars, each set to value's low `bytes` bytes (4 or 8: the
 * identity's bits). Every reset launch of a list is queued before its first list launch, so every
 * reset precedes every fold, whichever entries share a scalar. */
enum { EW_BATCHED_RESET_SCALARS = (EW_BATCHED_SMALL_BLOCK - 16) / 8 };
typedef struct {
    uint32_t count;
    uint32_t bytes;
    uint64_t value;
    uint64_t scalar[EW_BATCHED_RESET_SCALARS];
} ew_batched_reset_t;

/* Fills reset's scalars (count and scalar[]; bytes and value are the caller's) with the list's from
 * entry *cursor on, empty entries' too (their scalars get the value over nothing), and advances it;
 * an entry's scalar equal to the entry's before it is not taken again, so a scalar shared by the
 * whole list is one store. Returns 1, or 0 when no scalar is left (reset's count untouched). */
int ew_batched_next_reset(const ew_batched_list_t *list, int64_t *cursor, ew_batched_reset_t *reset);

#ifdef __cplusplus
}
#endif

#endif
