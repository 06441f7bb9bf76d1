/* SPDX-License-Identifier: Apache-2.0 */
/* Tuning policy: every figure the launch plan tunes by at run time, one policy per architecture family,
 * chosen once per handle from the device's compute capability, apart from the kernels that obey it (as
 * CUB's policies are). What the kernels fix at compile time (block size, bytes in flight per thread,
 * launch bounds) is the compile-time policy beside it, src/plan/tuning.h; docs/design.md has the
 * reason for each figure, docs/tuning-log.md the runs behind it. */
#ifndef EW_POLICY_H
#define EW_POLICY_H

#ifdef __cplusplus
extern "C" {
#endif

/* When a call may use the bulk-copy kernel. */
typedef enum {
    EW_BULK_OFF = 0,    /* never (GPUs without cp.async.bulk, or EW_BULK_COPY=0) */
    EW_BULK_AUTO = 1,   /* where the policy's bulk_min_tiles say it measured faster */
    EW_BULK_ALWAYS = 2, /* whenever the grid allows (tests: EW_BULK_COPY=always) */
} ew_bulk_mode_t;

/* The call shapes the bulk-copy rules tell apart: by arity and element sizes, out first, and for
 * 1-byte types by whether the op fills a table per block. */
typedef enum {
    EW_SHAPE_BYTES,          /* every type 1 byte (add i8, i8 -> u8) */
    EW_SHAPE_BYTES_TABLE,    /* the same, the op filling a table per block (fp8 -> i8), which tiles amortize */
    EW_SHAPE_UNARY_SAME,     /* unary, the input 2 bytes or wider and out as wide (relu f32, f16 -> bf16) */
    EW_SHAPE_UNARY_HALVING,  /* unary, out half the input's width (f32 -> f16, f16 -> i8) */
    EW_SHAPE_UNARY_NARROWER, /* unary, out a quarter of the input's width or less (f32 -> fp8) */
    EW_SHAPE_UNARY_WIDENING, /* unary, out wider than the input (f16 -> f32, u8 -> f32) */
    EW_SHAPE_BINARY_2BYTE,   /* binary on 2-byte types (and run-time compiled ops of three or four inputs) */
    EW_SHAPE_BINARY_WIDE,    /* binary on 4- or 8-byte types (the same) */
    EW_SHAPE_COUNT
} ew_shape_t;

enum {
    EW_NEVER = -1,   /* bulk_min_tiles: the direct kernel at every size */
    EW_ONE_PHASE = 0, /* bulk_min_tiles' columns: every pointer at one phase of the access, or not */
    EW_OTHER_PHASES = 1
};

typedef struct {
    const char *name;      /* the family and where its figures come from */
    int out_align;         /* bytes the head aligns out to (whole cache lines): a power of two, 1-128 */
    int shifted_waves;     /* grid cap of shifted windows, in full loads of the device */
    int blocks_waves;      /* grid cap of the block-scaled casts, in full loads of the device */
    int dependent_launch;  /* launch as a programmatic dependent of the stream's previous kernel */
    ew_bulk_mode_t bulk;   /* the bulk-copy kernel: off where the GPU lacks cp.async.bulk */
    int bulk_tile_bytes;   /* input bytes of a tile, all inputs together (1024-32768) */
    int bulk_widening_tile_divisor; /* unary ops widening a 2-byte input to 4 bytes: tiles this many times
                                       smaller */
    int bulk_narrowing_tile_factor; /* at other phases, unary ops from 2 bytes to 2 or fewer: tiles this many
                                       times larger (their per-element float work wants more bytes in flight) */
    int bulk_wave_tiles;   /* at other phases, tiles are halved while the grid holds fewer per SM */
    int rows_tile_packs;   /* packs a strided rows block of 2-byte elements takes where an input is read along
                              its row (a power of two, 512-4096) */
    /* Tiles per SM from which the bulk-copy kernel runs instead of the direct one, per shape and by
     * phase (EW_ONE_PHASE, EW_OTHER_PHASES); EW_NEVER where it never measured faster. */
    int bulk_min_tiles[EW_SHAPE_COUNT][2];
} ew_policy_t;

/* The policy of GPUs of compute capability major.minor, as built in; no environment read. */
ew_policy_t ew_policy_for(int major, int minor);

/* The documented overrides, read once per handle: EW_BULK_COPY=0 or always, EW_BULK_TILE_BYTES,
 * EW_ROWS_TILE_PACKS, EW_DEPENDENT_LAUNCH=0. Values outside their ranges are ignored; bulk copies and
 * dependent launches are never turned on where the policy has them off (the GPU lacks them). */
void ew_policy_apply_environment(ew_policy_t *policy);

#ifdef __cplusplus
}
#endif

#endif
