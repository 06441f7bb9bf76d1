/* Launch plan: pack width, scalar head and grid size for one call, as pure functions of the
 * pointers, n and the device figures cached in the handle. C, so the CPU tests can check it. */
#ifndef EW_PLAN_H
#define EW_PLAN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Tuning knobs, fixed at build time (bench/NOTES.md records how they were chosen). */
#ifndef EW_PLAN_THREAD_BYTES
#define EW_PLAN_THREAD_BYTES 32 /* bytes of the widest type each thread loads per step */
#endif
#ifndef EW_PLAN_SHIFTED_THREAD_BYTES
#define EW_PLAN_SHIFTED_THREAD_BYTES 16 /* the same for shifted windows, which load two packs per pack */
#endif
#ifndef EW_PLAN_WAVES
#define EW_PLAN_WAVES 32 /* grid cap of shifted windows, in full loads of the device */
#endif
#ifndef EW_PLAN_BULK_TILE_BYTES
#define EW_PLAN_BULK_TILE_BYTES 8192 /* bulk-copy tiles: bytes of all inputs together per tile */
#endif
#ifndef EW_PLAN_BULK_MIN_TILES
#define EW_PLAN_BULK_MIN_TILES 24 /* fewer tiles than this per SM: the direct kernel instead */
#endif
#ifndef EW_PLAN_BULK_SHIFTED_MIN_TILES
#define EW_PLAN_BULK_SHIFTED_MIN_TILES 1 /* the same when inputs sit at other phases than out */
#endif
#ifndef EW_PLAN_BULK_SPLICED_MIN_TILES
#define EW_PLAN_BULK_SPLICED_MIN_TILES 192 /* the same for binary 4- and 8-byte and same-size unary ops */
#endif
#ifndef EW_PLAN_BULK_WAVE_TILES
#define EW_PLAN_BULK_WAVE_TILES 8 /* larger tiles only while they leave this many per SM */
#endif
#ifndef EW_PLAN_BULK_CAPPED_BLOCKS
#define EW_PLAN_BULK_CAPPED_BLOCKS 7 /* binary ops at one phase with many tiles: blocks an SM holds */
#endif
#ifndef EW_PLAN_BULK_CAP_MIN_TILES
#define EW_PLAN_BULK_CAP_MIN_TILES 192 /* tiles per SM from which those calls keep to that many */
#endif

#ifndef EW_PLAN_OUT_ALIGN
#define EW_PLAN_OUT_ALIGN 128 /* bytes: the head aligns out to whole cache lines (1: to the access) */
#endif
/* The head (fewer than 2 * EW_PLAN_OUT_ALIGN 1-byte elements) is done by the threads of one block. */
#if EW_PLAN_OUT_ALIGN < 1 || EW_PLAN_OUT_ALIGN > 128 || (EW_PLAN_OUT_ALIGN & (EW_PLAN_OUT_ALIGN - 1)) != 0
#error "EW_PLAN_OUT_ALIGN must be a power of two from 1 to 128"
#endif
#ifndef EW_PLAN_BULK_BYTE_ACCESS
#define EW_PLAN_BULK_BYTE_ACCESS 16 /* bulk kernel, 1-byte types: bytes per access (8: one pack) */
#endif
/* Packs per access of the bulk kernel: 1-byte types' 8-byte packs go two to a 16-byte access.
 * A macro so that the kernels (at compile time) and the plan share it. */
#define EW_PLAN_BULK_ACCESS_PACKS(max_elem_size) ((max_elem_size) == 1 ? EW_PLAN_BULK_BYTE_ACCESS / 8 : 1)
#ifndef EW_PLAN_DIRECT_BYTE_ACCESS
#define EW_PLAN_DIRECT_BYTE_ACCESS 16 /* direct kernel, 1-byte types: bytes per access (8: one pack) */
#endif
/* The same for the direct kernel, where every pointer sits at one phase of the access. */
#define EW_PLAN_DIRECT_ACCESS_PACKS(max_elem_size) ((max_elem_size) == 1 ? EW_PLAN_DIRECT_BYTE_ACCESS / 8 : 1)

enum {
    EW_PLAN_MAX_POINTERS = 3,    /* out and up to two inputs */
    EW_PLAN_MAX_PACK_BYTES = 16, /* the widest single access */
    EW_PLAN_MAX_UNROLL = 4,      /* narrow packs: more would cost registers, not bandwidth */
    EW_PLAN_BLOCK_THREADS = 256,
    EW_PLAN_BULK_ALIGN = 128, /* bulk copies start at this boundary (the fastest), at most this early */
    EW_PLAN_BULK_MAX_TILE_BYTES = 16384 /* per input: two inputs stay within 48 KiB of shared memory */
};

/* When a call may use the bulk-copy kernel. */
typedef enum {
    EW_PLAN_BULK_OFF = 0,    /* never (GPUs without cp.async.bulk, or EW_BULK_COPY=0) */
    EW_PLAN_BULK_AUTO = 1,   /* where ew_plan_make_bulk measured it faster */
    EW_PLAN_BULK_ALWAYS = 2, /* whenever the grid allows (tests) */
} ew_plan_bulk_mode_t;

/* The kernel a plan runs, one launcher slot each (src/dispatch.h). Zero is the aligned kernel, so that a
 * plan initialized with its pack alone runs it. */
typedef enum {
    EW_PLAN_KERNEL_ALIGNED = 0,     /* the direct kernel at plan.pack, every pointer at one phase */
    EW_PLAN_KERNEL_SHIFTED = 1,     /* the same at the widest pack, inputs read through shifted windows */
    EW_PLAN_KERNEL_OUT_SHIFTED = 2, /* the same, the head aligning the input, out stored element by element */
    EW_PLAN_KERNEL_BULK = 3         /* the bulk-copy kernel: inputs staged in shared memory, a tile a block */
} ew_plan_kernel_t;

typedef struct {
    ew_plan_kernel_t kernel; /* which kernel runs the plan: one value, as the kernels exclude each other */
    int pack;                /* elements per pack: 1, 2, 4 or 8 (a pack is at most 16 bytes) */
    int access_packs; /* packs moved by one vector access: 2 for 1-byte packs where every pointer allows */
    int unroll;       /* packs each thread loads before it computes */
    int64_t head;     /* leading elements done one by one, after which out is aligned (ew_plan_make) */
    int64_t packs;    /* whole packs after the head; the tail after them is done one by one */
    int shift[2];     /* per input, its phase in elements past pack alignment (0 but for shifted windows) */
    unsigned blocks;  /* grid size; the kernel strides over the rest (bulk: tiles, 0 if n == head) */
    int tile_packs;   /* bulk: packs per thread per tile (a tile is EW_PLAN_BLOCK_THREADS * this packs) */
    int capped;       /* bulk: the launch lets an SM hold EW_PLAN_BULK_CAPPED_BLOCKS blocks at most */
} ew_plan_t;

/* Largest legal pack for elements of max_elem_size bytes (a power of two): P * size <= 16 and
 * P <= 8. The macro is the rule, shared with the kernels, which take it at compile time. */
#define EW_PLAN_MAX_PACK(max_elem_size)              \
    ((max_elem_size)*8 <= EW_PLAN_MAX_PACK_BYTES ? 8 \
     : (max_elem_size) >= EW_PLAN_MAX_PACK_BYTES ? 1 \
                                                 : (int)(EW_PLAN_MAX_PACK_BYTES / (max_elem_size)))
int ew_plan_max_pack(size_t max_elem_size);

/* Packs per thread per step: EW_PLAN_THREAD_BYTES (shifted: EW_PLAN_SHIFTED_THREAD_BYTES) of the
 * widest type in flight per thread, at most EW_PLAN_MAX_UNROLL. The macro is the rule, shared with
 * the kernels, which take it at compile time. */
#define EW_PLAN_STEP_BYTES(shifted) ((shifted) ? EW_PLAN_SHIFTED_THREAD_BYTES : EW_PLAN_THREAD_BYTES)
#define EW_PLAN_UNROLL(pack_bytes, shifted)                                                     \
    (EW_PLAN_STEP_BYTES(shifted) / (pack_bytes) >= EW_PLAN_MAX_UNROLL ? (int)EW_PLAN_MAX_UNROLL \
     : EW_PLAN_STEP_BYTES(shifted) / (pack_bytes) < 1                 ? 1                       \
                                                      : (int)(EW_PLAN_STEP_BYTES(shifted) / (pack_bytes)))
int ew_plan_unroll(int pack, size_t max_elem_size, int shifted);

/* 1 where a unary op narrows its input to a quarter of its size or less (f32 -> fp8, f64 -> f16): at
 * other phases than out, such a call aligns the input instead of out and writes out element by element
 * (EW_PLAN_KERNEL_OUT_SHIFTED), since out is the small part of its bytes. The rule, shared with the
 * kernels, which take it at compile time. */
#define EW_PLAN_SHIFTS_OUT(count, out_size, in_size) ((count) == 2 && (in_size) >= 4 * (out_size))

/* 1 if a shifted-window kernel exists for this pack: every input's pack is whole 32-bit words
 * (EW_PLAN_WHOLE_WORDS, the rule the kernels take at compile time). */
#define EW_PLAN_WHOLE_WORDS(pack, elem_size) ((pack) * (elem_size) % 4 == 0)
int ew_plan_can_shift(int pack, int count, const size_t elem_size[]);

/* Plan a call over n elements (n > 0) with count pointers (out first), each aligned to its
 * element size. The pack is always the largest legal one when possible:
 * - all pointers at the same element phase modulo P: the head peels that phase and every access
 *   of the body is a whole aligned pack (EW_PLAN_KERNEL_ALIGNED);
 * - different phases: the head aligns out, and each input is read as aligned packs shifted into
 *   place (ew_plan_can_shift), so every access is still a whole aligned pack (EW_PLAN_KERNEL_SHIFTED);
 * - otherwise the largest P at which the phases agree (EW_PLAN_KERNEL_ALIGNED);
 * - unary ops that narrow to a quarter or less (EW_PLAN_SHIFTS_OUT) at different phases: the head
 *   aligns the input, and out is written element by element (EW_PLAN_KERNEL_OUT_SHIFTED).
 * The head runs on in whole packs until out (out-shifted: the input) is EW_PLAN_OUT_ALIGN-aligned too. */
ew_plan_t ew_plan_make(int64_t n, int count, const uintptr_t address[], const size_t elem_size[],
                       int sm_count, int max_threads_per_sm);

/* Plan a call for the bulk-copy kernel (GPUs with cp.async.bulk): out's head is peeled to one access
 * (EW_PLAN_BULK_ACCESS_PACKS packs of the widest pack) or EW_PLAN_OUT_ALIGN if more, each block stages its
 * tile of every input in shared memory with bulk copies from EW_PLAN_BULK_ALIGN-aligned addresses,
 * whatever the inputs' phases, and writes whole packs. A tile is the most packs per thread (a power of
 * two, at least one access) whose inputs fit its bytes and whose widest type fits
 * EW_PLAN_BULK_MAX_TILE_BYTES; its bytes are tile_input_bytes but for the shapes plan.c names.
 * Returns 0, leaving *plan alone, where the direct kernel measured as fast or faster: below the tiles
 * per SM that plan.c's table gives the call's shape (by arity and element sizes, and for 1-byte types by
 * EW_PLAN_BULK_TABLE; with every pointer at one phase of the access or not; bench/NOTES.md has the
 * measurements). flags: EW_PLAN_BULK_*. */
enum {
    EW_PLAN_BULK_FORCE = 1, /* plan it whenever the grid allows (tests) */
    EW_PLAN_BULK_TABLE = 2  /* the op fills a table per block, which the bulk kernel's tiles amortize */
};
int ew_plan_make_bulk(int64_t n, int count, const uintptr_t address[], const size_t elem_size[], int sm_count,
                      int tile_input_bytes, int flags, ew_plan_t *plan);

/* Dynamic shared memory a bulk-copy block asks where its plan is capped, so that
 * EW_PLAN_BULK_CAPPED_BLOCKS blocks fit an SM and one more does not: the SM's share for each, in whole
 * 128-byte allocation units, less the block's reserved memory and an allowance for the kernel's own.
 * From the device's figures, read once per handle; 0 (no cap) where they are unknown. */
int ew_plan_capped_shared_bytes(int shared_per_sm, int reserved_per_block);

/* The plan of one call: the bulk-copy kernel's (EW_PLAN_KERNEL_BULK) where bulk_mode allows it and
 * ew_plan_make_bulk takes the call, else the direct kernel's (ew_plan_make). block_table: the op
 * fills a table per block (EW_PLAN_BULK_TABLE). */
ew_plan_t ew_plan_choose(int64_t n, int count, const uintptr_t address[], const size_t elem_size[],
                         int sm_count, int max_threads_per_sm, ew_plan_bulk_mode_t bulk_mode,
                         int tile_input_bytes, int block_table);

#ifdef __cplusplus
}
#endif

#endif
