/* SPDX-License-Identifier: Apache-2.0 */
/* The compile-time policy: every tuning figure the kernels fix when they are compiled (block size,
 * bytes in flight a thread, unroll depths, launch bounds, the strided kernels' shapes, the lists'
 * chunks), beside the run-time policy of src/plan/policy.h, as CUB keeps its policies. One family is
 * measured, sm_90 (docs/design.md has each figure's reason); every architecture compiles it. The plans
 * and the kernels read these, never a figure of their own. C, for the planners, the kernels and NVRTC. */
#ifndef EW_TUNING_H
#define EW_TUNING_H

enum {
    /* the flat kernels */
    EW_PLAN_BLOCK_THREADS = 256,       /* every kernel's block */
    EW_PLAN_THREAD_BYTES = 32,         /* bytes of the widest type each thread loads per step */
    EW_PLAN_SHIFTED_THREAD_BYTES = 16, /* the same for shifted windows, which load two packs per pack */
    EW_PLAN_MAX_UNROLL = 4,            /* narrow packs: more would cost registers, not bandwidth */
    EW_PLAN_BULK_MAX_TILE_BYTES = 16384, /* a bulk tile of the widest input */
    /* the strided kernels */
    EW_TILE_THREADS = 16,   /* the tiled kernel's tile: 16 x 16 threads over dimensions 0 and tile_dim */
    EW_TILE_MIN_EXTENT = 8, /* both tiled dimensions at least this long, else the gather kernel */
    EW_GATHER_UNROLL = 2,   /* packs a gather thread loads before it computes: 32 bytes an input */
    EW_ROWS_GROUP = 512,    /* a rows block's packs come in groups of two a thread: its tile elsewhere */
    /* the list kernel */
    EW_BATCHED_MAX_STEPS = 8, /* steps a chunk holds at most */
    EW_BATCHED_WAVES = 4      /* chunks shrink (to one step) until a launch has this many grid fills */
};

/* Elements of a tiled kernel thread's runs (along dimension 0 and along the tiled one alike), by the
 * bytes of the widest operand's element: 16 bytes of 2- and 4-byte elements. */
#define EW_TILE_RUN(bytes) ((bytes) >= 4 ? 4 : 8)

/* Whether the rows kernel takes its tile from the plan (block_packs), by the widest operand's element
 * bytes: for 2-byte elements; the others' tile is EW_ROWS_GROUP, a constant, where a tile read from the
 * plan measured 1-3 % slower on f32 broadcasts. */
#define EW_ROWS_TILE_FROM_PLAN(bytes) ((bytes) == 2)

/* Packs a rows thread loads before it computes any, by the widest element's bytes: two where elements
 * are 4 bytes or wider (packs of at most 4, whose element-by-element path is short), one at a time for
 * narrower ones, whose path of a pack of 8 kept a second pack's registers live (16-bit rows, 48 -> 36
 * registers, 5 -> 7 resident blocks). */
#define EW_ROWS_AHEAD(bytes) ((bytes) >= 4 ? EW_GATHER_UNROLL : 1)

/* Whether the rows kernel has loops of their own for plans whose inputs along the row take whole packs
 * (rows_whole), splice one (rows_spliced) or read one from a table (rows_table), by the widest element's
 * bytes: for 2-byte elements, whose packs of 8 the general loop splits; f32 broadcasts ran slower with
 * them. */
#define EW_ROWS_LOOPS(bytes) ((bytes) == 2)

/* Resident blocks the rows kernel asks of ptxas (its launch bounds): a full SM of sm_threads where
 * every operand is 4 bytes (on sm_90 8 blocks, 32 registers: f32 broadcasts +1 to +12 % over no
 * bound); 0 otherwise, which leaves ptxas its own choice (f16 add: 36 registers, 7 blocks; a full
 * SM's 8, with 12 bytes spilled, ran f16 row broadcasts 6 % slower and column ones 3-5 % faster). */
#define EW_ROWS_MIN_BLOCKS(all_four_bytes, sm_threads) ((all_four_bytes) ? (sm_threads) / EW_PLAN_BLOCK_THREADS : 0)

#endif
