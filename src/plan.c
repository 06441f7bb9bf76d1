#include "plan.h"

int ew_plan_max_pack(size_t max_elem_size) { return EW_PLAN_MAX_PACK(max_elem_size); }

int ew_plan_unroll(int pack, size_t max_elem_size, int shifted)
{
    return EW_PLAN_UNROLL((size_t)pack * max_elem_size, shifted);
}

int ew_plan_can_shift(int pack, int count, const size_t elem_size[])
{
    if (pack < 2)
        return 0;
    for (int i = 1; i < count; ++i)
        if (!EW_PLAN_WHOLE_WORDS(pack, elem_size[i]))
            return 0;
    return 1;
}

/* Element phase of address modulo pack (the address is element-aligned). Sizes and packs are
 * powers of two, so this is a mask: no division on the call path. */
static int64_t phase_of(uintptr_t address, size_t elem_size, int pack)
{
    return (int64_t)((address & ((uintptr_t)pack * elem_size - 1)) / elem_size);
}

/* Bytes out is aligned to after the head: the access, or EW_PLAN_OUT_ALIGN if more (both powers of
 * two, so the larger is a multiple of the other). */
static int64_t out_alignment(int64_t access_bytes)
{
    return access_bytes > EW_PLAN_OUT_ALIGN ? access_bytes : (int64_t)EW_PLAN_OUT_ALIGN;
}

/* Elements to peel so that out (element-aligned) reaches a multiple of alignment bytes. */
static int64_t out_head(uintptr_t address, size_t elem_size, int64_t alignment)
{
    return (int64_t)(((uintptr_t)alignment - (address & (uintptr_t)(alignment - 1))) &
                     (uintptr_t)(alignment - 1)) /
           (int64_t)elem_size;
}

static size_t widest(int count, const size_t elem_size[])
{
    size_t max_size = 1;
    for (int i = 0; i < count; ++i)
        if (elem_size[i] > max_size)
            max_size = elem_size[i];
    return max_size;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Blocks to give each thread one unrolled step; shifted windows are capped at EW_PLAN_WAVES full
 * loads of the device (measured faster: bench/NOTES.md); past a cap the grid-stride loop takes over. */
static unsigned grid_blocks(int64_t packs, int unroll, int shifted, int sm_count, int max_threads_per_sm)
{
    int64_t wanted = ceil_div(ceil_div(packs, unroll), EW_PLAN_BLOCK_THREADS);
    int64_t resident = (int64_t)sm_count * max_threads_per_sm / EW_PLAN_BLOCK_THREADS * EW_PLAN_WAVES;
    int64_t blocks = min64(shifted ? min64(wanted, resident) : wanted, INT32_MAX);
    return (unsigned)(blocks < 1 ? 1 : blocks);
}

static int phases_agree(int count, const uintptr_t address[], const size_t elem_size[], int pack)
{
    for (int i = 1; i < count; ++i)
        if (phase_of(address[i], elem_size[i], pack) != phase_of(address[0], elem_size[0], pack))
            return 0;
    return 1;
}

/* Where the body starts: the pack (the largest at which the phases agree, unless shifted), the
 * packs per access and the head that aligns out, and each shifted input's phase after it. agree:
 * the phases agree at the widest pack, which plan->pack holds on entry. */
static void place_body(ew_plan_t *plan, int count, const uintptr_t address[], const size_t elem_size[],
                       size_t max_size, int agree)
{
    const int shifted = plan->kernel == EW_PLAN_KERNEL_SHIFTED;
    int pack = plan->pack;
    if (!shifted && !agree)
        do
            pack /= 2;
        while (!phases_agree(count, address, elem_size, pack));
    plan->pack = pack;
    /* Whole packs two to a 16-byte access (1-byte types) where every pointer sits at one phase of it. */
    const int access = EW_PLAN_DIRECT_ACCESS_PACKS(max_size);
    plan->access_packs = !shifted && access > 1 && pack == ew_plan_max_pack(max_size) &&
                                 phases_agree(count, address, elem_size, pack * access)
                             ? access
                             : 1;
    const int64_t alignment = out_alignment((int64_t)pack * plan->access_packs * (int64_t)elem_size[0]);
    plan->head = out_head(address[0], elem_size[0], alignment);
    if (!shifted)
        return;
    int widest_shift = 0;
    for (int i = 1; i < count; ++i) {
        plan->shift[i - 1] = (int)((phase_of(address[i], elem_size[i], pack) + plan->head) % pack);
        if (plan->shift[i - 1] > widest_shift)
            widest_shift = plan->shift[i - 1];
    }
    if (plan->head < widest_shift) /* a shifted input's first aligned pack starts before it */
        plan->head += alignment / (int64_t)elem_size[0];
}

ew_plan_t ew_plan_make(int64_t n, int count, const uintptr_t address[], const size_t elem_size[],
                       int sm_count, int max_threads_per_sm)
{
    size_t max_size = widest(count, elem_size);
    ew_plan_t plan = {
        .kernel = EW_PLAN_KERNEL_ALIGNED, .pack = ew_plan_max_pack(max_size), .access_packs = 1};
    const int agree = phases_agree(count, address, elem_size, plan.pack);
    if (!agree && EW_PLAN_SHIFTS_OUT(count, elem_size[0], elem_size[1]))
        plan.kernel = EW_PLAN_KERNEL_OUT_SHIFTED;
    else if (!agree && ew_plan_can_shift(plan.pack, count, elem_size))
        plan.kernel = EW_PLAN_KERNEL_SHIFTED;
    const int shifted = plan.kernel == EW_PLAN_KERNEL_SHIFTED;
    /* out-shifted: the input aligned to its pack, or to EW_PLAN_OUT_ALIGN bytes if more */
    if (plan.kernel == EW_PLAN_KERNEL_OUT_SHIFTED)
        plan.head =
            out_head(address[1], elem_size[1], out_alignment((int64_t)plan.pack * (int64_t)elem_size[1]));
    else
        place_body(&plan, count, address, elem_size, max_size, agree);
    const int pack = plan.pack;
    plan.head = min64(plan.head, n);
    plan.packs = (n - plan.head) / pack;
    for (int i = 0; shifted && i < count - 1; ++i)
        if (plan.shift[i] > 0) /* pack j also reads the input's aligned pack j + 1 */
            plan.packs = min64(plan.packs, (n - plan.head + plan.shift[i]) / pack - 1);
    if (plan.packs < 0)
        plan.packs = 0;
    plan.unroll = ew_plan_unroll(pack, max_size, shifted);
    plan.blocks = grid_blocks(plan.packs, plan.unroll, shifted, sm_count, max_threads_per_sm);
    return plan;
}

/* Packs per thread for a tile of at most tile_input_bytes of inputs and EW_PLAN_BULK_MAX_TILE_BYTES of
 * the widest type: a power of two, at least one access. */
static int64_t bulk_tile_packs(int pack, size_t max_size, size_t input_bytes, int64_t tile_input_bytes)
{
    int64_t tile_packs = EW_PLAN_BULK_ACCESS_PACKS(max_size);
    while (EW_PLAN_BLOCK_THREADS * 2 * tile_packs * pack * (int64_t)input_bytes <= tile_input_bytes &&
           EW_PLAN_BLOCK_THREADS * 2 * tile_packs * pack * (int64_t)max_size <= EW_PLAN_BULK_MAX_TILE_BYTES)
        tile_packs *= 2;
    return tile_packs;
}

/* The shapes the bulk rules tell apart: by arity and element sizes, out first, and for 1-byte types by
 * whether the op fills a table per block. */
typedef enum {
    SHAPE_BYTES,          /* every type 1 byte (add i8, i8 -> u8) */
    SHAPE_BYTES_TABLE,    /* the same, the op filling a table per block (fp8 -> i8), which tiles amortize */
    SHAPE_UNARY_SAME,     /* unary, the input 2 bytes or wider and out as wide (relu f32, f16 -> bf16) */
    SHAPE_UNARY_HALVING,  /* unary, out half the input's width (f32 -> f16, f16 -> i8) */
    SHAPE_UNARY_NARROWER, /* unary, out a quarter of the input's width or less (f32 -> fp8) */
    SHAPE_UNARY_WIDENING, /* unary, out wider than the input (f16 -> f32, u8 -> f32) */
    SHAPE_BINARY_2BYTE,   /* binary on 2-byte types */
    SHAPE_BINARY_WIDE,    /* binary on 4- or 8-byte types */
    SHAPE_COUNT
} bulk_shape_t;

static bulk_shape_t bulk_shape(int count, const size_t elem_size[], size_t max_size, int block_table)
{
    if (max_size == 1)
        return block_table ? SHAPE_BYTES_TABLE : SHAPE_BYTES;
    if (count == 3)
        return max_size == 2 ? SHAPE_BINARY_2BYTE : SHAPE_BINARY_WIDE;
    const size_t out = elem_size[0], in = elem_size[1];
    return in < out        ? SHAPE_UNARY_WIDENING
           : in == out     ? SHAPE_UNARY_SAME
           : in == 2 * out ? SHAPE_UNARY_HALVING
                           : SHAPE_UNARY_NARROWER;
}

/* The bulk rules per shape (bench/NOTES.md §6, §13, §17, §19, §25, §30, §33): the tiles per SM from
 * which the bulk kernel measured faster than the direct one, every pointer at one phase of the access
 * or not (NEVER where it never did); and whether calls at one phase from EW_PLAN_BULK_CAP_MIN_TILES
 * tiles per SM ran faster with EW_PLAN_BULK_CAPPED_BLOCKS blocks an SM than with as many as fit (8: 64
 * KiB of inputs in flight, where 7 keep 56 KiB). */
enum { NEVER = -1 };
static const struct {
    int one_phase, other_phases, capped;
} bulk_rules[SHAPE_COUNT] = {
    [SHAPE_BYTES] = {NEVER, EW_PLAN_BULK_SHIFTED_MIN_TILES}, /* the direct kernel moves 16 bytes an access */
    [SHAPE_BYTES_TABLE] = {EW_PLAN_BULK_MIN_TILES, EW_PLAN_BULK_SHIFTED_MIN_TILES},
    [SHAPE_UNARY_SAME] = {NEVER, EW_PLAN_BULK_SPLICED_MIN_TILES},
    [SHAPE_UNARY_HALVING] = {NEVER, EW_PLAN_BULK_MIN_TILES},
    [SHAPE_UNARY_NARROWER] = {NEVER, NEVER},
    [SHAPE_UNARY_WIDENING] = {EW_PLAN_BULK_MIN_TILES, EW_PLAN_BULK_SHIFTED_MIN_TILES},
    [SHAPE_BINARY_2BYTE] = {EW_PLAN_BULK_MIN_TILES, EW_PLAN_BULK_MIN_TILES, .capped = 1},
    [SHAPE_BINARY_WIDE] = {EW_PLAN_BULK_MIN_TILES, EW_PLAN_BULK_SPLICED_MIN_TILES, .capped = 1},
};

int ew_plan_make_bulk(int64_t n, int count, const uintptr_t address[], const size_t elem_size[], int sm_count,
                      int tile_input_bytes, int flags, ew_plan_t *plan)
{
    const int always = flags & EW_PLAN_BULK_FORCE;
    size_t max_size = widest(count, elem_size), input_bytes = 0;
    for (int i = 1; i < count; ++i)
        input_bytes += elem_size[i];
    int pack = ew_plan_max_pack(max_size);
    /* Too small for the fewest tiles even at the smallest tile: done before anything else. */
    if (!always && n < (int64_t)EW_PLAN_BULK_SHIFTED_MIN_TILES * sm_count * EW_PLAN_BLOCK_THREADS * pack)
        return 0;
    int access = pack * EW_PLAN_BULK_ACCESS_PACKS(max_size); /* elements per access */
    int shifted = !phases_agree(count, address, elem_size, access);
    const bulk_shape_t shape = bulk_shape(count, elem_size, max_size, flags & EW_PLAN_BULK_TABLE);
    int64_t min_tiles_per_sm = shifted ? bulk_rules[shape].other_phases : bulk_rules[shape].one_phase;
    if (always)
        min_tiles_per_sm = 0;
    else if (min_tiles_per_sm == NEVER)
        return 0;
    int64_t head =
        min64(out_head(address[0], elem_size[0], out_alignment((int64_t)access * (int64_t)elem_size[0])), n);

    /* Tiles of tile_input_bytes of inputs, halved for 2-byte inputs widened to 4 bytes; at other phases
     * doubled for unary ops from 2 bytes to 2 or fewer (the per-element float work of narrowing casts
     * wants more bytes in flight), and halved once where the grid would keep fewer than
     * EW_PLAN_BULK_WAVE_TILES tiles per SM (bench/NOTES.md §6, §17, §19, §25, §30). */
    const int two_byte_unary = count == 2 && elem_size[1] == 2;
    int64_t bytes = two_byte_unary && elem_size[0] == 4              ? tile_input_bytes / 2
                    : shifted && two_byte_unary && elem_size[0] <= 2 ? 2 * (int64_t)tile_input_bytes
                                                                     : tile_input_bytes;
    int64_t tile_packs = bulk_tile_packs(pack, max_size, input_bytes, bytes);
    int64_t tile = EW_PLAN_BLOCK_THREADS * tile_packs * pack, tiles = ceil_div(n - head, tile);
    if (shifted && tiles < EW_PLAN_BULK_WAVE_TILES * sm_count) {
        tile_packs = bulk_tile_packs(pack, max_size, input_bytes, bytes / 2);
        tile = EW_PLAN_BLOCK_THREADS * tile_packs * pack;
        tiles = ceil_div(n - head, tile);
    }
    if (tiles >= INT32_MAX || tiles < min_tiles_per_sm * sm_count) /* the kernel adds a block for the head */
        return 0;
    *plan = (ew_plan_t){.kernel = EW_PLAN_KERNEL_BULK,
                        .pack = pack,
                        .access_packs = EW_PLAN_BULK_ACCESS_PACKS(max_size),
                        .unroll = 1,
                        .head = head,
                        .packs = (n - head) / pack,
                        .blocks = (unsigned)tiles, /* 0 where n == head: the head block alone */
                        .tile_packs = (int)tile_packs,
                        .capped = !shifted && bulk_rules[shape].capped &&
                                  tiles >= (int64_t)EW_PLAN_BULK_CAP_MIN_TILES * sm_count};
    return 1;
}

int ew_plan_capped_shared_bytes(int shared_per_sm, int reserved_per_block)
{
    enum { UNIT = 128, STATIC_ALLOWANCE = 256 }; /* allocation unit; the kernel's own shared memory */
    int bytes =
        shared_per_sm / EW_PLAN_BULK_CAPPED_BLOCKS / UNIT * UNIT - reserved_per_block - STATIC_ALLOWANCE;
    return shared_per_sm > 0 && bytes > 0 ? bytes : 0;
}

ew_plan_t ew_plan_choose(int64_t n, int count, const uintptr_t address[], const size_t elem_size[],
                         int sm_count, int max_threads_per_sm, ew_plan_bulk_mode_t bulk_mode,
                         int tile_input_bytes, int block_table)
{
    ew_plan_t plan;
    int flags =
        (bulk_mode == EW_PLAN_BULK_ALWAYS ? EW_PLAN_BULK_FORCE : 0) | (block_table ? EW_PLAN_BULK_TABLE : 0);
    if (bulk_mode != EW_PLAN_BULK_OFF &&
        ew_plan_make_bulk(n, count, address, elem_size, sm_count, tile_input_bytes, flags, &plan))
        return plan;
    return ew_plan_make(n, count, address, elem_size, sm_count, max_threads_per_sm);
}
