/* The launch plan (src/plan.c) as pure functions, checked against an independent brute-force model
 * written here and against the properties the kernel (src/kernels.cuh) relies on:
 * - pack P: P * (widest element) <= 16, P <= 8. When one common head h < P brings every pointer to a
 *   multiple of P * its element size, P is the largest such (plain plan, EW_PLAN_KERNEL_ALIGNED). When
 *   the pointers' phases differ at the largest legal P and every input's pack is whole 32-bit words
 *   (ew_plan_can_shift), P is the largest legal one and the inputs are read through shifted windows
 *   (shifted plan, EW_PLAN_KERNEL_SHIFTED), but for unary ops that narrow to a quarter or less
 *   (EW_PLAN_SHIFTS_OUT), whose out is written element by element instead (out-shifted plan,
 *   EW_PLAN_KERNEL_OUT_SHIFTED). plan.kernel names the kind of plan.
 * - head: elements done one by one first; after them every pointer is P-aligned (shifted plans: out;
 *   out-shifted plans: the input), and that pointer is aligned to max(P * its size,
 *   EW_PLAN_OUT_ALIGN) bytes, so warps store (out-shifted: load) whole cache lines. In a shifted
 *   plan each input's window starts `shift` elements before the body and never before the input
 *   itself (head >= shift). Clamped to n.
 * - packs: whole packs of the body; a shifted input with shift > 0 reads one aligned pack past each
 *   body pack, which must still lie inside its n elements.
 * - unroll: packs per thread per step, EW_PLAN_THREAD_BYTES (shifted: EW_PLAN_SHIFTED_THREAD_BYTES) of
 *   the widest type in flight.
 * - blocks = max(1, min(ceil(ceil(packs / unroll) / 256), INT32_MAX, and when shifted
 *   sm * threads_per_sm / 256 * EW_PLAN_WAVES)):
 *   the head (at most 2 * 128 elements) and the tail (shorter than 2P) are done by one extra block
 *   after these (the kernels' edge_blocks). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "plan.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

enum {
    MAX_BYTES = 16,
    BLOCK = 256,
    THREAD_BYTES = EW_PLAN_THREAD_BYTES,
    SHIFTED_THREAD_BYTES = EW_PLAN_SHIFTED_THREAD_BYTES,
    WAVES = EW_PLAN_WAVES,
    OUT_ALIGN = EW_PLAN_OUT_ALIGN,
    DIRECT_BYTE_ACCESS = EW_PLAN_DIRECT_BYTE_ACCESS
};

/* ---- the model ---- */

static int model_max_pack(size_t size)
{
    int pack = 1;
    for (int p = 1; p <= 8; p *= 2)
        if ((size_t)p * size <= MAX_BYTES)
            pack = p;
    return pack;
}

static size_t model_thread_bytes(int shifted) { return shifted ? SHIFTED_THREAD_BYTES : THREAD_BYTES; }

static int model_unroll(int pack, size_t size, int shifted)
{
    size_t bytes = (size_t)pack * size;
    int unroll = bytes >= model_thread_bytes(shifted) ? 1 : (int)(model_thread_bytes(shifted) / bytes);
    return unroll > 4 ? 4 : unroll; /* at most 4 packs per thread */
}

/* Shifted windows splice 32-bit words: every input's pack must be whole words, and P >= 2. */
static int model_can_shift(int pack, int count, const size_t size[])
{
    int ok = pack >= 2;
    for (int i = 1; i < count; ++i)
        ok = ok && (pack * size[i]) % 4 == 0;
    return ok;
}

/* The smallest h in [0, pack) that aligns address to pack * size: by trying each h. */
static int aligning_head(uintptr_t address, size_t size, int pack)
{
    for (int h = 0; h < pack; ++h)
        if ((address + (uintptr_t)h * size) % ((uintptr_t)pack * size) == 0)
            return h;
    return -1; /* not element-aligned; never happens for valid calls */
}

static int common_head(int count, const uintptr_t address[], const size_t size[], int pack)
{
    int head = aligning_head(address[0], size[0], pack);
    for (int i = 1; i < count && head >= 0; ++i)
        if (aligning_head(address[i], size[i], pack) != head)
            head = -1;
    return head;
}

/* Elements of out per alignment step of the head: a pack, or EW_PLAN_OUT_ALIGN bytes if more. */
static int out_step(int pack, size_t size)
{
    int step = (int)(OUT_ALIGN / size);
    return step > pack ? step : pack;
}

static int64_t div_up(int64_t a, int64_t b)
{
    return a / b + (a % b != 0);
}
static int64_t min_of(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* The model's pack, packs per access, shifts and kind of plan (into *plan, whose pack starts at the
 * widest), and its head before the clamp to n. */
static int64_t model_head(ew_plan_t *plan, int count, const uintptr_t address[], const size_t size[],
                          size_t widest)
{
    int64_t head = common_head(count, address, size, plan->pack);
    if (head < 0 && count == 2 && size[1] >= 4 * size[0]) {
        /* narrowing to a quarter or less: the head aligns the input to its pack and line instead */
        plan->kernel = EW_PLAN_KERNEL_OUT_SHIFTED;
        plan->access_packs = 1;
        return aligning_head(address[1], size[1], out_step(plan->pack, size[1]));
    }
    if (head < 0 && model_can_shift(plan->pack, count, size)) {
        plan->kernel = EW_PLAN_KERNEL_SHIFTED;
        head = aligning_head(address[0], size[0], plan->pack);
        /* the input element at the body's start lies `shift` elements into its aligned pack */
        for (int i = 1; i < count; ++i) {
            int shift = 0;
            while ((address[i] + (uintptr_t)(head - shift) * size[i]) % ((uintptr_t)plan->pack * size[i]) !=
                   0)
                ++shift;
            plan->shift[i - 1] = shift;
        }
    }
    while (head < 0) {
        plan->pack /= 2;
        head = common_head(count, address, size, plan->pack);
    }
    const int shifted = plan->kernel == EW_PLAN_KERNEL_SHIFTED;
    /* 1-byte packs of the widest width go two to an access when one head aligns every pointer to it */
    int access = widest == 1 ? DIRECT_BYTE_ACCESS / 8 : 1;
    plan->access_packs = !shifted && access > 1 && plan->pack == model_max_pack(widest) &&
                                 common_head(count, address, size, plan->pack * access) >= 0
                             ? access
                             : 1;
    /* the common head plus whole accesses, up to out's alignment; shifted: past every shift */
    int step = out_step(plan->pack * plan->access_packs, size[0]);
    head = aligning_head(address[0], size[0], step);
    for (int i = 1; shifted && i < count; ++i)
        if (head < plan->shift[i - 1])
            head = aligning_head(address[0], size[0], step) + step;
    return head;
}

static ew_plan_t model_plan(int64_t n, int count, const uintptr_t address[], const size_t size[], int sm,
                            int threads_per_sm)
{
    size_t widest = 0;
    for (int i = 0; i < count; ++i)
        widest = size[i] > widest ? size[i] : widest;
    ew_plan_t plan = {.kernel = EW_PLAN_KERNEL_ALIGNED, .pack = model_max_pack(widest)};
    plan.head = min_of(model_head(&plan, count, address, size, widest), n);
    const int shifted = plan.kernel == EW_PLAN_KERNEL_SHIFTED;
    plan.packs = (n - plan.head) / plan.pack;
    for (int i = 1; shifted && i < count; ++i) {
        int shift = plan.shift[i - 1];
        /* largest k with the window's last aligned pack inside the input: head - shift + (k + 1) P <= n */
        while (shift > 0 && plan.packs > 0 && plan.head - shift + (plan.packs + 1) * plan.pack > n)
            --plan.packs;
    }
    plan.unroll = model_unroll(plan.pack, widest, shifted);
    int64_t wanted = div_up(div_up(plan.packs, plan.unroll), BLOCK);
    int64_t cap = shifted ? (int64_t)sm * threads_per_sm / BLOCK * WAVES : INT32_MAX;
    int64_t blocks = min_of(min_of(wanted, cap), INT32_MAX);
    plan.blocks = (unsigned)(blocks < 1 ? 1 : blocks);
    return plan;
}

/* ---- one case: the model, then the properties on their own ---- */

static uint64_t cases, shifted_cases, out_shifted_cases;

static const char *kernel_name(ew_plan_kernel_t kernel)
{
    switch (kernel) {
    case EW_PLAN_KERNEL_ALIGNED: return "aligned";
    case EW_PLAN_KERNEL_SHIFTED: return "shifted";
    case EW_PLAN_KERNEL_OUT_SHIFTED: return "out-shifted";
    case EW_PLAN_KERNEL_BULK: return "bulk";
    }
    return "not a kernel";
}

static void print_case(const char *what, int64_t n, int count, const uintptr_t address[], const size_t size[],
                       int sm, int tps, const ew_plan_t *got, const ew_plan_t *want)
{
    print_error("%s\n  n = %lld, sm = %d, threads/sm = %d, pointers:", what, (long long)n, sm, tps);
    for (int i = 0; i < count; ++i)
        print_error(" %#llx (size %zu)", (unsigned long long)address[i], size[i]);
    const ew_plan_t *plans[2] = {got, want};
    for (int k = 0; k < 2 && plans[k]; ++k)
        print_error("\n  %s kernel %d (%s) pack %d x%d head %lld packs %lld shift %d,%d unroll %d blocks %u",
                    k ? "want" : "got ", (int)plans[k]->kernel, kernel_name(plans[k]->kernel), plans[k]->pack,
                    plans[k]->access_packs, (long long)plans[k]->head, (long long)plans[k]->packs,
                    plans[k]->shift[0], plans[k]->shift[1], plans[k]->unroll, plans[k]->blocks);
    print_error("\n");
}

#define PROPERTY(condition)                                                                                  \
    do {                                                                                                     \
        if (!(condition)) {                                                                                  \
            print_case("violated: " #condition, n, count, address, size, sm, tps, &got, NULL);               \
            fail();                                                                                          \
        }                                                                                                    \
    } while (0)

static void check_case(int64_t n, int count, const uintptr_t address[], const size_t size[], int sm, int tps)
{
    ew_plan_t got = ew_plan_make(n, count, address, size, sm, tps);
    ew_plan_t want = model_plan(n, count, address, size, sm, tps);
    const int shifted = got.kernel == EW_PLAN_KERNEL_SHIFTED,
              out_shifted = got.kernel == EW_PLAN_KERNEL_OUT_SHIFTED;
    ++cases;
    shifted_cases += shifted;
    out_shifted_cases += out_shifted;
    int same = got.kernel == want.kernel && got.pack == want.pack && got.access_packs == want.access_packs &&
               got.head == want.head && got.packs == want.packs && got.unroll == want.unroll &&
               got.blocks == want.blocks;
    for (int i = 1; i < count && want.kernel == EW_PLAN_KERNEL_SHIFTED; ++i)
        same = same && got.shift[i - 1] == want.shift[i - 1];
    if (!same) {
        print_case("the plan differs from the model", n, count, address, size, sm, tps, &got, &want);
        fail();
    }

    /* The properties the kernel relies on, stated without the model. */
    size_t widest = 0;
    for (int i = 0; i < count; ++i)
        widest = size[i] > widest ? size[i] : widest;
    /* a direct kernel, one of three (ew_plan_make never plans the bulk-copy kernel) */
    PROPERTY(got.kernel == EW_PLAN_KERNEL_ALIGNED || shifted || out_shifted);
    const int64_t P = got.pack;
    PROPERTY(P == 1 || P == 2 || P == 4 || P == 8);
    PROPERTY((size_t)P * widest <= MAX_BYTES);
    /* runs of access_packs packs, one vector access each: only unshifted, at most 16 bytes */
    const int64_t A = got.access_packs;
    PROPERTY(A == 1 || (A == DIRECT_BYTE_ACCESS / 8 && !shifted && widest == 1));
    PROPERTY((size_t)(P * A) * widest <= MAX_BYTES);
    /* the pointer the head aligns: out, or for out-shifted plans the input */
    const int aligned = out_shifted ? 1 : 0;
    const int64_t step = out_step((int)(P * A), size[aligned]);
    PROPERTY(got.head >= 0 && got.head <= n && got.head < (shifted ? 2 * step : step));
    PROPERTY(got.packs >= 0 && got.head + got.packs * P <= n);
    int64_t tail = n - got.head - got.packs * P;
    PROPERTY(tail >= 0 && tail < (shifted ? 2 * P : P));
    PROPERTY(got.head <= BLOCK && tail <= BLOCK);            /* a few elements per thread of the edge block */
    PROPERTY(n - got.head - got.packs / A * A * P <= BLOCK); /* the kernel's tail after whole runs */
    if (got.packs > 0)
        PROPERTY((address[aligned] + (uintptr_t)got.head * size[aligned]) %
                     ((uintptr_t)step * size[aligned]) ==
                 0);
    for (int i = 1; i < count && got.packs > 0; ++i) {
        int shift = shifted ? got.shift[i - 1] : 0;
        PROPERTY(shift >= 0 && shift < P);
        /* the window's first aligned pack (run): aligned, and not before the input */
        PROPERTY((address[i] + (uintptr_t)(got.head - shift) * size[i]) % ((uintptr_t)(P * A) * size[i]) ==
                 0);
        PROPERTY(got.head - shift >= 0);
        /* the last one read (one past the last body pack when shift > 0) ends inside the input */
        PROPERTY(got.head - shift + (got.packs + (shift > 0)) * P <= n);
    }
    /* unary ops narrowing to a quarter or less take the out-shifted plan exactly where phases differ */
    const int narrows = count == 2 && size[1] >= 4 * size[0];
    PROPERTY(!out_shifted == !(narrows && common_head(count, address, size, model_max_pack(widest)) < 0));
    if (out_shifted) {
        PROPERTY(!shifted && A == 1);
        PROPERTY(P == model_max_pack(widest));
    } else if (shifted) {
        PROPERTY(ew_plan_can_shift((int)P, count, size));
        PROPERTY(P == model_max_pack(widest));
        PROPERTY(common_head(count, address, size, (int)P) < 0); /* plain would not do */
    } else if (P < model_max_pack(widest)) {
        /* no wider pack would do: no common head at 2P, and no shifted kernel */
        PROPERTY(common_head(count, address, size, (int)(2 * P)) < 0);
        PROPERTY(!model_can_shift(model_max_pack(widest), count, size));
    }
    /* shifted plans leave at most one pack more than plain ones to the one-by-one tail */
    if (shifted && n - got.head >= 2 * P)
        PROPERTY(got.packs >= (n - got.head) / P - 1);
    PROPERTY(got.unroll >= 1);
    PROPERTY((size_t)got.unroll * P * widest == model_thread_bytes(shifted) || got.unroll == 4 ||
             (got.unroll == 1 && P * widest >= model_thread_bytes(shifted)));
    /* the grid covers every whole pack with one unrolled step per thread, unless capped */
    int64_t cap = shifted ? (int64_t)sm * tps / BLOCK * WAVES : INT32_MAX;
    cap = cap > 1 ? cap : 1; /* a device with fewer than 256 resident threads still gets one block */
    PROPERTY(got.blocks >= 1);
    PROPERTY((int64_t)got.blocks * BLOCK * got.unroll >= got.packs || (int64_t)got.blocks == cap);
    PROPERTY((int64_t)got.blocks <= cap);
    PROPERTY((int64_t)(got.blocks - 1) * BLOCK * got.unroll < got.packs ||
             got.blocks == 1); /* no idle block */
}

/* ---- inputs ---- */

static uint64_t random_state = 0x9E3779B97F4A7C15ull;

static uint64_t next_random(void)
{
    /* xorshift64*: fixed seed, so a failure reproduces */
    random_state ^= random_state >> 12;
    random_state ^= random_state << 25;
    random_state ^= random_state >> 27;
    return random_state * 0x2545F4914F6CDD1Dull;
}

static const size_t sizes[] = {1, 2, 4, 8};
static const int sm_counts[] = {1, 2, 28, 80, 108, 132, 144, 1024};
static const int threads_per_sm[] = {64, 128, 256, 1024, 1536, 2048};

/* A random address aligned to size: random high bits, or near the edges of the address space. */
static uintptr_t random_address(size_t size)
{
    uint64_t r = next_random();
    uintptr_t address;
    switch (r % 4) {
    case 0:
        address = (uintptr_t)(next_random() % 4096);
        break;
    case 1:
        address = UINTPTR_MAX - (uintptr_t)(next_random() % 4096);
        break;
    case 2:
        address = (uintptr_t)(0x7f0000000000ull + next_random() % (1ull << 32));
        break;
    default:
        address = (uintptr_t)next_random();
        break;
    }
    return address / size * size;
}

/* n from 1 to 2^40, spread over magnitudes, plus values right around the grid's step boundaries. */
static int64_t random_n(void)
{
    uint64_t r = next_random();
    int bits = (int)(r % 41);
    int64_t n = (int64_t)(next_random() & (((uint64_t)1 << bits) - 1)) + 1;
    if (r % 7 == 0) {
        int64_t step = (int64_t)BLOCK * (1 << (next_random() % 6)) * (1 << (next_random() % 4));
        n = step * (int64_t)(1 + next_random() % 64) + (int64_t)(next_random() % 17) - 8;
        if (n < 1)
            n = 1;
    }
    return n;
}

static const int64_t edge_n[] = {1,
                                 2,
                                 3,
                                 4,
                                 5,
                                 7,
                                 8,
                                 9,
                                 15,
                                 16,
                                 17,
                                 255,
                                 256,
                                 257,
                                 2047,
                                 2048,
                                 2049,
                                 4095,
                                 4096,
                                 4097,
                                 65535,
                                 65536,
                                 65537,
                                 (1 << 20) + 3,
                                 INT32_MAX,
                                 (int64_t)INT32_MAX + 2,
                                 (int64_t)1 << 32,
                                 ((int64_t)1 << 40) - 1,
                                 (int64_t)1 << 40};

/* ---- tests ---- */

static void test_max_pack_and_unroll(void **state)
{
    (void)state;
    for (size_t size = 1; size <= 64; size *= 2) {
        int pack = ew_plan_max_pack(size);
        assert_int_equal(pack, model_max_pack(size));
        assert_true(pack >= 1 && pack <= 8);
        assert_true(pack == 1 || (size_t)pack * size <= MAX_BYTES);
        for (int p = 1; p <= pack; p *= 2)
            for (int shifted = 0; shifted <= 1; ++shifted)
                assert_int_equal(ew_plan_unroll(p, size, shifted), model_unroll(p, size, shifted));
    }
    /* the values the issue fixes for the element sizes of the catalogue */
    assert_int_equal(ew_plan_max_pack(1), 8);
    assert_int_equal(ew_plan_max_pack(2), 8);
    assert_int_equal(ew_plan_max_pack(4), 4);
    assert_int_equal(ew_plan_max_pack(8), 2);
}

/* Every element phase within 16 bytes for each pointer, every size combination, a few n. */
static void test_all_phases(void **state)
{
    (void)state;
    static const int64_t ns[] = {1, 2, 3, 7, 8, 9, 17, 1000, 123457, (int64_t)1 << 33};
    uintptr_t address[3];
    size_t size[3];
    for (int count = 1; count <= 3; ++count) {
        int size_combinations = 1 << (2 * count);
        for (int sc = 0; sc < size_combinations; ++sc) {
            for (int i = 0; i < count; ++i)
                size[i] = sizes[(sc >> (2 * i)) & 3];
            int phase_combinations = 1;
            for (int i = 0; i < count; ++i)
                phase_combinations *= MAX_BYTES / (int)size[i];
            for (int pc = 0; pc < phase_combinations; ++pc) {
                int rest = pc;
                for (int i = 0; i < count; ++i) {
                    int phases = MAX_BYTES / (int)size[i];
                    address[i] = (uintptr_t)0x7f1234560000ull + (uintptr_t)(i + 1) * 0x100000 +
                                 (uintptr_t)(rest % phases) * size[i];
                    rest /= phases;
                }
                for (size_t k = 0; k < COUNT(ns); ++k)
                    check_case(ns[k], count, address, size, 132, 2048);
            }
        }
    }
}

/* Same-size pointers (add, mul, relu, scale_add) and mixed sizes (casts), at random. */
static void test_random(void **state)
{
    (void)state;
    uintptr_t address[3];
    size_t size[3];
    for (int iteration = 0; iteration < 300000; ++iteration) {
        int count = 1 + (int)(next_random() % 3);
        int mixed = count == 2 && next_random() % 2;
        size_t common = sizes[next_random() % 4];
        for (int i = 0; i < count; ++i) {
            size[i] = mixed ? sizes[next_random() % 4] : common;
            address[i] = random_address(size[i]);
        }
        int64_t n = random_n();
        int sm = sm_counts[next_random() % COUNT(sm_counts)];
        int tps = threads_per_sm[next_random() % COUNT(threads_per_sm)];
        check_case(n, count, address, size, sm, tps);
    }
}

/* Edge n on every device shape: step boundaries of the grid and the cap. */
static void test_edges(void **state)
{
    (void)state;
    uintptr_t address[3];
    size_t size[3];
    for (size_t s0 = 0; s0 < COUNT(sizes); ++s0)
        for (size_t s1 = 0; s1 < COUNT(sizes); ++s1)
            for (int misalign = 0; misalign < 3; ++misalign) {
                size[0] = sizes[s0];
                size[1] = sizes[s1];
                size[2] = sizes[s1];
                address[0] = (uintptr_t)0x10000000 + (misalign == 1 ? size[0] : 0);
                address[1] = (uintptr_t)0x20000000 + (misalign == 2 ? size[1] : 0);
                address[2] = (uintptr_t)0x30000000;
                for (size_t k = 0; k < COUNT(edge_n); ++k)
                    for (size_t a = 0; a < COUNT(sm_counts); ++a)
                        for (size_t b = 0; b < COUNT(threads_per_sm); ++b)
                            for (int count = 2; count <= 3; ++count) {
                                int64_t base = edge_n[k];
                                for (int64_t delta = -1; delta <= 1; ++delta)
                                    if (base + delta >= 1)
                                        check_case(base + delta, count, address, size, sm_counts[a],
                                                   threads_per_sm[b]);
                            }
            }
}

/* ew_plan_can_shift over packs and input sizes: whole 32-bit words per input pack, P >= 2. */
static void test_can_shift(void **state)
{
    (void)state;
    size_t size[3];
    for (int pack = 1; pack <= 8; pack *= 2)
        for (size_t a = 0; a < COUNT(sizes); ++a)
            for (size_t b = 0; b < COUNT(sizes); ++b)
                for (size_t c = 0; c < COUNT(sizes); ++c)
                    for (int count = 1; count <= 3; ++count) {
                        size[0] = sizes[a];
                        size[1] = sizes[b];
                        size[2] = sizes[c];
                        assert_int_equal(!!ew_plan_can_shift(pack, count, size),
                                         model_can_shift(pack, count, size));
                    }
    /* by hand: f32 inputs at P = 4 are 4 words; u8 at P = 2 is half a word; out's size does not matter */
    size_t f32[3] = {4, 4, 4}, u8_from_f64[2] = {8, 1}, f16_from_u8[2] = {2, 1};
    assert_true(ew_plan_can_shift(4, 3, f32));
    assert_false(ew_plan_can_shift(1, 3, f32));
    assert_false(ew_plan_can_shift(2, 2, u8_from_f64));
    assert_true(ew_plan_can_shift(8, 2, f16_from_u8));
}

/* A few plans written out by hand from the rules above (default knobs), so the model is checked too. */
static void test_hand_checked(void **state)
{
    (void)state;
    if (THREAD_BYTES != 32 || SHIFTED_THREAD_BYTES != 16 || WAVES != 32 || OUT_ALIGN != 128) {
        printf("# hand-checked plans assume EW_PLAN_THREAD_BYTES 32, EW_PLAN_SHIFTED_THREAD_BYTES 16, "
               "EW_PLAN_WAVES 32 and EW_PLAN_OUT_ALIGN 128; built with %d, %d, %d and %d\n",
               THREAD_BYTES, SHIFTED_THREAD_BYTES, WAVES, OUT_ALIGN);
        skip();
    }
    /* f32 add on an H200 (132 SMs, 2048 threads): all 16-byte aligned, n = 2^20 + 3 */
    uintptr_t aligned[3] = {0x1000, 0x2000, 0x3000};
    size_t f32[3] = {4, 4, 4};
    ew_plan_t plan = ew_plan_make((1 << 20) + 3, 3, aligned, f32, 132, 2048);
    assert_int_equal(plan.pack, 4);
    assert_int_equal(plan.head, 0);
    assert_int_equal(plan.packs, 1 << 18);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_ALIGNED);
    assert_int_equal(plan.unroll, 2);    /* 16-byte packs, 32 bytes per thread */
    assert_int_equal(plan.blocks, 512); /* 2^18 packs / 2 per thread / 256 threads */
    /* the same shifted by one element each: 31 head elements bring out to the next 128-byte line */
    uintptr_t one_more[3] = {0x1004, 0x2004, 0x3004};
    plan = ew_plan_make((1 << 20) + 3, 3, one_more, f32, 132, 2048);
    assert_int_equal(plan.pack, 4);
    assert_int_equal(plan.head, 31);
    assert_int_equal(plan.packs, 262137); /* (2^20 + 3 - 31) / 4 */
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_ALIGNED);
    assert_int_equal(plan.blocks, 512);
    /* out at phase 0, a at phase 1, b at phase 2 (of 4): shifted windows, no head */
    uintptr_t phases[3] = {0x1000, 0x2004, 0x3008};
    plan = ew_plan_make(1000, 3, phases, f32, 132, 2048);
    assert_int_equal(plan.pack, 4);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_SHIFTED);
    assert_int_equal(plan.shift[0], 1);
    assert_int_equal(plan.shift[1], 2);
    /* the windows would start 1 and 2 elements before a and b: one 128-byte line of head first */
    assert_int_equal(plan.head, 32);
    assert_int_equal(plan.packs, 241); /* the last window pack read ends at 32 - 2 + 242 * 4 = 998 <= 1000 */
    /* out 12 bytes into a line, a at phase 0: the head of 29 already covers a's shift of 1 */
    uintptr_t late_out[2] = {0x100c, 0x2000};
    plan = ew_plan_make(1000, 2, late_out, f32, 132, 2048);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_SHIFTED);
    assert_int_equal(plan.head, 29);
    assert_int_equal(plan.shift[0], 1);
    assert_int_equal(plan.packs, 242); /* the last window pack read ends at 29 - 1 + 243 * 4 = 1000 */
    /* cast f64 <- u8 at different phases: u8 packs of 2 bytes cannot shift, so P drops until they agree */
    uintptr_t cast[2] = {0x10000, 0x20001};
    size_t f64_u8[2] = {8, 1};
    plan = ew_plan_make(1000, 2, cast, f64_u8, 132, 2048);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_ALIGNED);
    assert_int_equal(plan.pack, 1);
    assert_int_equal(plan.unroll, 4);
    /* cast f16 -> f64: widest 8 bytes, so P = 2; aligned, a huge n gets a block per 1024 elements
     * up to the grid's limit, where the grid-stride loop takes over */
    uintptr_t wide[2] = {0x10000, 0x20000};
    size_t f64_f16[2] = {8, 2};
    plan = ew_plan_make((int64_t)1 << 40, 2, wide, f64_f16, 132, 2048);
    assert_int_equal(plan.pack, 2);
    assert_int_equal(plan.unroll, 2);
    assert_int_equal(plan.blocks, 1 << 30);
    plan = ew_plan_make((int64_t)1 << 42, 2, wide, f64_f16, 132, 2048);
    assert_int_equal(plan.blocks, INT32_MAX);
    /* shifted windows stop at 32 waves: 132 * 2048 / 256 * 32 blocks */
    uintptr_t wide_shifted[2] = {0x10000, 0x20002};
    plan = ew_plan_make((int64_t)1 << 40, 2, wide_shifted, f64_f16, 132, 2048);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_SHIFTED);
    assert_int_equal(plan.blocks, 132 * 8 * 32);
    /* f32 -> fp8 at other phases: the input aligned (to its 128-byte line), out written element by
     * element, the aligned kernel's two packs per thread and grid */
    uintptr_t narrow[2] = {0x10001, 0x20040};
    size_t u8_f32[2] = {1, 4};
    plan = ew_plan_make(1 << 20, 2, narrow, u8_f32, 132, 2048);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_OUT_SHIFTED);
    assert_int_equal(plan.pack, 4);
    assert_int_equal(plan.head, 16); /* (0x20080 - 0x20040) / 4 */
    assert_int_equal(plan.packs, ((1 << 20) - 16) / 4);
    assert_int_equal(plan.unroll, 2);
    assert_int_equal(plan.blocks, 512); /* ceil(ceil(262140 / 2) / 256) */
    /* the same phases modulo the pack: the plain plan */
    narrow[0] = 0x10040;
    plan = ew_plan_make(1 << 20, 2, narrow, u8_f32, 132, 2048);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_ALIGNED);
    /* bytes: P = 8 moves only 8 bytes, so two packs per step */
    uintptr_t bytes[2] = {0x10003, 0x20003};
    size_t u8[2] = {1, 1};
    plan = ew_plan_make(1000, 2, bytes, u8, 132, 2048);
    assert_int_equal(plan.pack, 8);
    assert_int_equal(plan.head, 125);
    assert_int_equal(plan.packs, 109); /* (1000 - 125) / 8 */
    assert_int_equal(plan.unroll, 4);
    assert_int_equal(plan.access_packs, 2); /* both at phase 3 of 16: the kernel moves 16 bytes an access */
    /* at phase 3 and 11: they agree at 8 bytes but not at 16, so one pack an access */
    uintptr_t half_apart[2] = {0x10003, 0x2000b};
    plan = ew_plan_make(1000, 2, half_apart, u8, 132, 2048);
    assert_int_equal(plan.pack, 8);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_ALIGNED);
    assert_int_equal(plan.access_packs, 1);
    /* wider types: one pack an access */
    plan = ew_plan_make((1 << 20) + 3, 3, aligned, f32, 132, 2048);
    assert_int_equal(plan.access_packs, 1);
    /* fewer elements than the head needs: all of them in the head */
    plan = ew_plan_make(3, 2, bytes, u8, 132, 2048);
    assert_int_equal(plan.head, 3);
    assert_int_equal(plan.packs, 0);
    assert_int_equal(plan.blocks, 1);
    /* a device too small for one block per wave still gets one block of shifted windows */
    plan = ew_plan_make(1 << 20, 3, phases, f32, 1, 128);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_SHIFTED);
    assert_int_equal(plan.blocks, 1);
}

/* The shared memory that caps a bulk-copy block's residency: with the kernel's own memory (at most the
 * 256-byte allowance) and the reserved kilobyte, EW_PLAN_BULK_CAPPED_BLOCKS blocks fit an SM of the
 * H200 (228 KiB) and one more does not, in whole 128-byte units; nothing where the device figures are
 * unknown (handles made without a device query) or too small. */
static void test_capped_shared_bytes(void **state)
{
    (void)state;
    const int per_sm = 228 * 1024, reserved = 1024;
    int bytes = ew_plan_capped_shared_bytes(per_sm, reserved);
    assert_int_equal(bytes % 128, 0);
    for (int own = 0; own <= 256; own += 128)
        assert_true(EW_PLAN_BULK_CAPPED_BLOCKS * (bytes + reserved + own) <= per_sm);
    assert_true((EW_PLAN_BULK_CAPPED_BLOCKS + 1) * (bytes + reserved) > per_sm);
    if (EW_PLAN_BULK_CAPPED_BLOCKS == 7)
        assert_int_equal(bytes, 32000); /* 33280 (the SM's seventh, in units) - 1024 - 256 */
    assert_true(bytes > 8192 + 2 * 2 * EW_PLAN_BULK_ALIGN); /* more than a default binary tile takes */
    assert_int_equal(ew_plan_capped_shared_bytes(0, 0), 0);
    assert_int_equal(ew_plan_capped_shared_bytes(1024, 1024), 0);
}

/* Bulk-copy plans: out's head peeled to a 128-byte line (EW_PLAN_OUT_ALIGN), one tile of 256
 * threads x tile_packs packs per block, tiles sized by input bytes (halved for f16 -> f32 shapes,
 * doubled for binary 1-byte ops and for 2-byte inputs at other phases than out, halved for inputs at
 * other phases where the grid is short of tiles), and the cases the direct kernel keeps. H200 figures: 132
 * SMs. */
static void test_bulk(void **state)
{
    (void)state;
    if (EW_PLAN_BULK_MIN_TILES != 24 || EW_PLAN_BULK_SHIFTED_MIN_TILES != 1 ||
        EW_PLAN_BULK_SPLICED_MIN_TILES != 192 || EW_PLAN_BULK_WAVE_TILES != 8 ||
        EW_PLAN_BULK_BYTE_ACCESS != 16 || OUT_ALIGN != 128 || EW_PLAN_BULK_CAP_MIN_TILES != 192) {
        printf("# hand-checked bulk plans assume the default EW_PLAN_BULK_* knobs\n");
        skip();
    }
    size_t f32[3] = {4, 4, 4}, u8[2] = {1, 1}, f64[3] = {8, 8, 8}, f64_u8[2] = {8, 1}, f32_f32[2] = {4, 4};
    uintptr_t aligned[3] = {0x1000, 0x2000, 0x3000}, phases[3] = {0x1004, 0x2008, 0x300c};
    ew_plan_t plan = {.pack = -1};

    /* add f32 aligned, 8 KiB of inputs a tile: 1024 elements, one 16-byte pack per thread */
    assert_true(ew_plan_make_bulk(1 << 24, 3, aligned, f32, 132, 8192, 0, &plan));
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_BULK);
    assert_int_equal(plan.pack, 4);
    assert_int_equal(plan.tile_packs, 1);
    assert_int_equal(plan.head, 0);
    assert_int_equal(plan.blocks, 1 << 14);
    /* aligned needs 24 tiles per SM: 3168 tiles of 1024 */
    assert_true(ew_plan_make_bulk(3168 * 1024, 3, aligned, f32, 132, 8192, 0, &plan));
    assert_int_equal(plan.blocks, 3168);
    plan = (ew_plan_t){.pack = -1};
    assert_false(ew_plan_make_bulk(3167 * 1024, 3, aligned, f32, 132, 8192, 0, &plan));
    assert_int_equal(plan.pack, -1); /* left alone */
    /* always: any n the grid holds */
    assert_true(ew_plan_make_bulk((1 << 20) + 3, 3, aligned, f32, 132, 8192, 1, &plan));
    assert_int_equal(plan.blocks, 1025);
    /* binary ops at one phase keep to EW_PLAN_BULK_CAPPED_BLOCKS blocks an SM from 192 tiles per SM
     * (25344 tiles of 1024); not below, not at other phases, not unary or 1-byte ops (below) */
    assert_true(ew_plan_make_bulk(25344 * 1024, 3, aligned, f32, 132, 8192, 0, &plan));
    assert_true(plan.capped);
    assert_true(ew_plan_make_bulk(25343 * 1024, 3, aligned, f32, 132, 8192, 0, &plan));
    assert_false(plan.capped);
    assert_true(ew_plan_make_bulk(1 << 28, 3, aligned, f64, 132, 8192, 0, &plan));
    assert_true(plan.capped);
    assert_true(ew_plan_make_bulk(1 << 28, 3, phases, f32, 132, 8192, 0, &plan));
    assert_false(plan.capped);

    /* inputs at other phases, 8 KiB of inputs a tile: 1024 elements, as aligned; binary 2- to 8-byte ops
     * need 192 tiles per SM there (25344 tiles after the head of 31) */
    assert_true(ew_plan_make_bulk(1 << 26, 3, phases, f32, 132, 8192, 0, &plan));
    assert_int_equal(plan.head, 31);
    assert_int_equal(plan.tile_packs, 1);
    assert_true(ew_plan_make_bulk(31 + 25344 * 1024, 3, phases, f32, 132, 8192, 0, &plan));
    assert_int_equal(plan.blocks, 25344);
    assert_false(ew_plan_make_bulk(31 + 25343 * 1024, 3, phases, f32, 132, 8192, 0, &plan));
    /* with 16 KiB: 2 packs a thread while 8 tiles per SM remain (1056 tiles of 2048 after the head of
     * 31), else half that */
    assert_true(ew_plan_make_bulk(31 + 25344 * 2048, 3, phases, f32, 132, 16384, 0, &plan));
    assert_int_equal(plan.tile_packs, 2);
    assert_true(ew_plan_make_bulk(31 + 1056 * 2048, 3, phases, f32, 132, 16384, EW_PLAN_BULK_FORCE, &plan));
    assert_int_equal(plan.head, 31);
    assert_int_equal(plan.tile_packs, 2);
    assert_int_equal(plan.blocks, 1056);
    assert_true(ew_plan_make_bulk(31 + 1055 * 2048, 3, phases, f32, 132, 16384, EW_PLAN_BULK_FORCE, &plan));
    assert_int_equal(plan.tile_packs, 1);
    assert_int_equal(plan.blocks, 2 * 1055);
    assert_false(ew_plan_make_bulk((1 << 20) + 3, 3, phases, f32, 132, 16384, 0, &plan));
    assert_true(ew_plan_make_bulk((1 << 20) + 3, 3, phases, f32, 132, 16384, EW_PLAN_BULK_FORCE, &plan));
    assert_int_equal(plan.tile_packs, 1); /* 512 tiles of 2048 would be under 8 per SM */
    assert_int_equal(plan.blocks, 1024);
    assert_int_equal(plan.packs, 262137); /* (2^20 + 3 - 31) / 4 */
    /* unary ops of one size take it at other phases from 192 tiles per SM (of 2048 f32), else stay
     * direct, unless always; at one phase they stay direct */
    uintptr_t pair[2] = {0x1000, 0x2004}, pair_aligned[2] = {0x1000, 0x2000};
    assert_true(ew_plan_make_bulk(1 << 26, 2, pair, f32_f32, 132, 8192, 0, &plan));
    assert_int_equal(plan.tile_packs, 2);
    assert_false(plan.capped);
    assert_true(ew_plan_make_bulk(132 * 192 * 2048, 2, pair, f32_f32, 132, 8192, 0, &plan));
    assert_int_equal(plan.blocks, 132 * 192);
    assert_false(ew_plan_make_bulk(132 * 192 * 2048 - 2048, 2, pair, f32_f32, 132, 8192, 0, &plan));
    assert_true(ew_plan_make_bulk(1 << 20, 2, pair, f32_f32, 132, 8192, 1, &plan));
    assert_false(ew_plan_make_bulk(1 << 28, 2, pair_aligned, f32_f32, 132, 8192, 0, &plan));
    /* but 2-byte inputs narrowed to 1 byte take it at other phases than out: i8 <- f16, i8 <- f32 */
    size_t i8_f16[2] = {1, 2}, i8_f32[2] = {1, 4};
    uintptr_t same_phase[2] = {0x1000, 0x2000}, other_phase[2] = {0x1001, 0x2000};
    assert_false(ew_plan_make_bulk(1 << 26, 2, same_phase, i8_f16, 132, 8192, 0, &plan));
    assert_true(ew_plan_make_bulk(1 << 26, 2, other_phase, i8_f16, 132, 8192, 0, &plan));
    /* with the aligned threshold, 24 tiles per SM (of 16 KiB of f16 at other phases: 2-byte inputs
     * take twice the tile there), not one */
    assert_true(ew_plan_make_bulk(132 * 24 * 8192, 2, other_phase, i8_f16, 132, 8192, 0, &plan));
    assert_int_equal(plan.blocks, 132 * 24);
    assert_false(ew_plan_make_bulk(132 * 24 * 8192 - 8192, 2, other_phase, i8_f16, 132, 8192, 0, &plan));
    /* binary f16 at other phases, as at one phase (§30): 8 KiB tiles (1 pack a thread, 2048 elements),
     * the bulk kernel from 24 tiles per SM (3168 tiles after the head of 63) */
    size_t f16_3[3] = {2, 2, 2};
    uintptr_t f16_phases[3] = {0x1002, 0x2004, 0x3000};
    assert_true(ew_plan_make_bulk(1 << 26, 3, f16_phases, f16_3, 132, 8192, 0, &plan));
    assert_int_equal(plan.tile_packs, 1);
    assert_int_equal(plan.blocks, 32768);
    assert_false(plan.capped);
    uintptr_t f16_aligned[3] = {0x1000, 0x2000, 0x3000};
    assert_true(ew_plan_make_bulk(1 << 26, 3, f16_aligned, f16_3, 132, 8192, 0, &plan));
    assert_true(plan.capped); /* 32768 tiles of 2048: 248 per SM */
    assert_true(ew_plan_make_bulk(63 + 3168 * 2048, 3, f16_phases, f16_3, 132, 8192, 0, &plan));
    assert_int_equal(plan.head, 63);
    assert_int_equal(plan.blocks, 3168);
    assert_false(ew_plan_make_bulk(63 + 3167 * 2048, 3, f16_phases, f16_3, 132, 8192, 0, &plan));
    assert_false(ew_plan_make_bulk(1 << 22, 3, f16_phases, f16_3, 132, 8192, 0, &plan));
    assert_true(ew_plan_make_bulk(1 << 22, 3, f16_phases, f16_3, 132, 8192, EW_PLAN_BULK_FORCE, &plan));
    assert_int_equal(plan.tile_packs, 1);
    assert_false(ew_plan_make_bulk(1 << 26, 2, other_phase, i8_f32, 132, 8192, 0, &plan));
    /* and 4- or 8-byte inputs narrowed to half their size (f16 <- f32, f32 <- f64), from 24 tiles per SM
     * of 8 KiB of inputs (aligned: direct) */
    size_t f16_f32[2] = {2, 4}, f32_f64[2] = {4, 8}, i16_f64[2] = {2, 8};
    uintptr_t wide_phases[2] = {0x1002, 0x2008};
    assert_true(ew_plan_make_bulk(1 << 26, 2, wide_phases, f16_f32, 132, 8192, 0, &plan));
    assert_int_equal(plan.tile_packs, 2); /* 2048 elements */
    assert_true(ew_plan_make_bulk(132 * 24 * 2048, 2, wide_phases, f16_f32, 132, 8192, 0, &plan));
    assert_false(ew_plan_make_bulk(132 * 24 * 2048 - 2048, 2, wide_phases, f16_f32, 132, 8192, 0, &plan));
    assert_false(ew_plan_make_bulk(1 << 26, 2, aligned, f16_f32, 132, 8192, 0, &plan));
    uintptr_t f64_phases[2] = {0x1004, 0x2000};
    assert_true(ew_plan_make_bulk(1 << 26, 2, f64_phases, f32_f64, 132, 8192, 0, &plan));
    assert_false(ew_plan_make_bulk(1 << 26, 2, f64_phases, i16_f64, 132, 8192, 0, &plan));
    /* relu u8 at other phases: 1-byte and shifted, 8 KiB of inputs a tile: 4 packs a thread; out
     * aligned to its 128-byte line */
    uintptr_t bytes[2] = {0x10003, 0x20000};
    assert_true(ew_plan_make_bulk(1 << 26, 2, bytes, u8, 132, 8192, 0, &plan));
    assert_int_equal(plan.pack, 8);
    assert_int_equal(plan.tile_packs, 4);
    assert_int_equal(plan.head, 125);
    assert_int_equal(plan.blocks, 8192); /* (2^26 - 125) / 8192 -> 8192 tiles */
    /* unary, so 8 tiles per SM keep the full size: 1056 tiles of 8192, not 1055 */
    assert_true(ew_plan_make_bulk(125 + 1056 * 8192, 2, bytes, u8, 132, 8192, 0, &plan));
    assert_int_equal(plan.tile_packs, 4);
    assert_true(ew_plan_make_bulk(125 + 1055 * 8192, 2, bytes, u8, 132, 8192, 0, &plan));
    assert_int_equal(plan.tile_packs, 2);
    /* the same at out's phase 8: one phase, so the direct kernel's; when forced, 8 KiB tiles (unary),
     * and the head is the rest of the line */
    uintptr_t half_access[2] = {0x10008, 0x20008};
    assert_false(ew_plan_make_bulk(1 << 26, 2, half_access, u8, 132, 8192, 0, &plan));
    assert_true(ew_plan_make_bulk(1 << 26, 2, half_access, u8, 132, 8192, EW_PLAN_BULK_FORCE, &plan));
    assert_int_equal(plan.head, 120);
    assert_int_equal(plan.tile_packs, 4);
    assert_int_equal(plan.access_packs, 2);
    /* ops with a table per block keep the bulk kernel there, from 24 tiles per SM (3168 of 8192) */
    ew_plan_t table = {.pack = -1};
    assert_true(ew_plan_make_bulk(1 << 26, 2, half_access, u8, 132, 8192, EW_PLAN_BULK_TABLE, &table));
    assert_memory_equal(&table, &plan, sizeof plan);
    assert_true(
        ew_plan_make_bulk(120 + 3168 * 8192, 2, half_access, u8, 132, 8192, EW_PLAN_BULK_TABLE, &plan));
    assert_false(
        ew_plan_make_bulk(120 + 3167 * 8192, 2, half_access, u8, 132, 8192, EW_PLAN_BULK_TABLE, &plan));
    /* at phases 8 apart the 16-byte accesses disagree: bulk, spliced */
    uintptr_t half_apart[2] = {0x10008, 0x20000};
    assert_true(ew_plan_make_bulk(1 << 26, 2, half_apart, u8, 132, 8192, 0, &plan));
    /* binary 1-byte ops, forced: 8 KiB of inputs a tile, 4 KiB each (one access a thread) */
    size_t u8_3[3] = {1, 1, 1};
    uintptr_t bytes_3[3] = {0x10000, 0x20000, 0x30000};
    assert_false(ew_plan_make_bulk(1 << 26, 3, bytes_3, u8_3, 132, 8192, 0, &plan));
    assert_true(ew_plan_make_bulk(1 << 26, 3, bytes_3, u8_3, 132, 8192, 1, &plan));
    assert_int_equal(plan.tile_packs, 2);
    assert_int_equal(plan.blocks, 16384);
    assert_true(ew_plan_make_bulk(1 << 28, 3, bytes_3, u8_3, 132, 8192, 1, &plan));
    assert_false(plan.capped); /* 496 tiles per SM, but a 1-byte op */
    /* and at other phases the same, 8 KiB of inputs, not the 16 KiB that §30 measured 1 to 3.6 % slower
     * from 2^24; at 2^22 one access a thread is the least a tile holds: 1024 tiles, under 8 per SM */
    uintptr_t bytes_3_phases[3] = {0x10000, 0x20001, 0x30002};
    assert_true(ew_plan_make_bulk(1 << 26, 3, bytes_3_phases, u8_3, 132, 8192, 0, &plan));
    assert_int_equal(plan.tile_packs, 2);
    assert_int_equal(plan.blocks, 16384);
    assert_true(ew_plan_make_bulk(1 << 22, 3, bytes_3_phases, u8_3, 132, 8192, 0, &plan));
    assert_int_equal(plan.tile_packs, 2);
    assert_int_equal(plan.blocks, 1024);
    /* f16 -> f32: half the tile, 4 KiB of f16 */
    size_t f32_f16[2] = {4, 2};
    assert_true(ew_plan_make_bulk(1 << 26, 2, aligned, f32_f16, 132, 8192, 0, &plan));
    assert_int_equal(plan.pack, 4);
    assert_int_equal(plan.tile_packs, 2);
    assert_int_equal(plan.blocks, 1 << 15);
    /* 1-byte tiles smaller than one access a thread: still one access (2 packs) a thread */
    assert_true(ew_plan_make_bulk(100000, 2, half_access, u8, 132, 1024, 1, &plan));
    assert_int_equal(plan.tile_packs, EW_PLAN_BULK_BYTE_ACCESS / 8);
    /* too small a call for the fewest tiles: no plan */
    assert_false(ew_plan_make_bulk(100000, 2, bytes, u8, 132, 8192, 0, &plan));
    /* f64 with tiles smaller than one pack a thread: still one pack a thread */
    assert_true(ew_plan_make_bulk(1000, 3, aligned, f64, 132, 1024, 1, &plan));
    assert_int_equal(plan.pack, 2);
    assert_int_equal(plan.tile_packs, 1);
    assert_int_equal(plan.blocks, 2);
    /* cast f64 <- u8: the 1-byte input would allow more, the f64 output caps it at 4 packs a thread */
    uintptr_t cast[2] = {0x10000, 0x20001};
    assert_true(ew_plan_make_bulk(5000, 2, cast, f64_u8, 132, 8192, 1, &plan));
    assert_int_equal(plan.pack, 2);
    assert_int_equal(plan.tile_packs, 4);
    assert_int_equal(plan.blocks, 3);
    /* fewer elements than out's head: all in the head, no tile (the kernel's head block alone) */
    uintptr_t late[2] = {0x1001, 0x2000};
    assert_true(ew_plan_make_bulk(3, 2, late, u8, 132, 8192, 1, &plan));
    assert_int_equal(plan.head, 3);
    assert_int_equal(plan.blocks, 0);
    /* more tiles than a grid holds: no plan even when always */
    assert_false(ew_plan_make_bulk((int64_t)1 << 45, 3, aligned, f32, 132, 8192, 1, &plan));
}

/* Every bulk plan over phases, sizes and tile sizes: the tiles cover the body exactly once, out is
 * aligned to its line after the head, tiles are whole accesses, and the tile keeps to its limits. */
static void test_bulk_all_phases(void **state)
{
    (void)state;
    static const size_t sizes[] = {1, 2, 4, 8};
    static const int64_t ns[] = {1, 7, 8, 9, 255, 4095, 4096, 4097, 65537, 1000003, 50000017};
    static const int tile_bytes[] = {1024, 8192, 32768};
    for (size_t so = 0; so < 4; ++so)
        for (size_t si = 0; si < 4; ++si)
            for (uintptr_t phase = 0; phase < 16; phase += sizes[so])
                for (size_t k = 0; k < sizeof ns / sizeof ns[0]; ++k)
                    for (size_t t = 0; t < 3; ++t)
                        for (int always = 0; always < 2; ++always) {
                            uintptr_t address[2] = {0x100000 + phase, 0x200000 + 3 * sizes[si]};
                            size_t elem[2] = {sizes[so], sizes[si]};
                            ew_plan_t plan;
                            int64_t n = ns[k];
                            if (!ew_plan_make_bulk(n, 2, address, elem, 132, tile_bytes[t], always, &plan)) {
                                assert_false(always);
                                continue;
                            }
                            size_t widest = sizes[so] > sizes[si] ? sizes[so] : sizes[si];
                            assert_int_equal(plan.kernel, EW_PLAN_KERNEL_BULK);
                            assert_int_equal(plan.pack, ew_plan_max_pack(widest));
                            int64_t tile = (int64_t)EW_PLAN_BLOCK_THREADS * plan.tile_packs * plan.pack;
                            assert_true(tile * (int64_t)widest <= EW_PLAN_BULK_MAX_TILE_BYTES);
                            int access = EW_PLAN_BULK_ACCESS_PACKS(widest);
                            assert_int_equal(plan.tile_packs % access, 0);
                            assert_true(plan.tile_packs == access ||
                                        tile * (int64_t)sizes[si] <= 4 * tile_bytes[t]);
                            /* out aligned to its access, and to EW_PLAN_OUT_ALIGN if more */
                            int64_t line = (int64_t)plan.pack * access * (int64_t)sizes[so];
                            line = line > OUT_ALIGN ? line : OUT_ALIGN;
                            assert_true(plan.head >= 0 && plan.head < line / (int64_t)sizes[so] &&
                                        plan.head <= n);
                            if (plan.head < n)
                                assert_int_equal((address[0] + plan.head * sizes[so]) % line, 0);
                            assert_true((int64_t)plan.blocks * tile >= n - plan.head);
                            /* one block per tile, none idle: none at all where the head is the whole call */
                            assert_true((int64_t)plan.blocks * tile < n - plan.head + tile);
                            if (!always) /* never fewer tiles than one per SM */
                                assert_true(plan.blocks >= 132);
                        }
}

/* The chooser: the direct plan when bulk copies are off or declined, the bulk plan otherwise. */
static void test_choose(void **state)
{
    (void)state;
    size_t f32[3] = {4, 4, 4}, f32_f32[2] = {4, 4};
    uintptr_t aligned[3] = {0x1000, 0x2000, 0x3000};
    static const int64_t ns[] = {1, 1000, 1 << 20, 1 << 26};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; ++k) {
        int64_t n = ns[k];
        ew_plan_t direct = ew_plan_make(n, 3, aligned, f32, 132, 2048);
        ew_plan_t off = ew_plan_choose(n, 3, aligned, f32, 132, 2048, EW_PLAN_BULK_OFF, 8192, 0);
        assert_memory_equal(&off, &direct, sizeof off);
        ew_plan_t bulk, always = ew_plan_choose(n, 3, aligned, f32, 132, 2048, EW_PLAN_BULK_ALWAYS, 8192, 0);
        assert_true(ew_plan_make_bulk(n, 3, aligned, f32, 132, 8192, 1, &bulk));
        assert_memory_equal(&always, &bulk, sizeof bulk);
        ew_plan_t automatic = ew_plan_choose(n, 3, aligned, f32, 132, 2048, EW_PLAN_BULK_AUTO, 8192, 0);
        int taken = ew_plan_make_bulk(n, 3, aligned, f32, 132, 8192, 0, &bulk);
        assert_int_equal(automatic.kernel == EW_PLAN_KERNEL_BULK, taken);
        assert_memory_equal(&automatic, taken ? &bulk : &direct, sizeof automatic);
    }
    /* 1-byte types at one phase: the direct kernel's 16-byte accesses, but the bulk kernel for ops
     * with a table per block */
    size_t u8[2] = {1, 1};
    ew_plan_t bytes = ew_plan_choose(1 << 26, 2, aligned, u8, 132, 2048, EW_PLAN_BULK_AUTO, 8192, 0);
    assert_int_equal(bytes.kernel, EW_PLAN_KERNEL_ALIGNED);
    assert_int_equal(bytes.access_packs, 2);
    bytes = ew_plan_choose(1 << 26, 2, aligned, u8, 132, 2048, EW_PLAN_BULK_AUTO, 8192, 1);
    assert_int_equal(bytes.kernel, EW_PLAN_KERNEL_BULK);
    /* a unary op the bulk kernel leaves to the direct one, even at the largest n */
    ew_plan_t relu = ew_plan_choose(1 << 26, 2, aligned, f32_f32, 132, 2048, EW_PLAN_BULK_AUTO, 8192, 0);
    assert_int_equal(relu.kernel, EW_PLAN_KERNEL_ALIGNED);
    assert_int_equal(relu.pack, 4);
}

static int report_cases(void **state)
{
    (void)state;
    printf("# %llu plans checked against the model, %llu of them shifted, %llu out-shifted\n",
           (unsigned long long)cases, (unsigned long long)shifted_cases,
           (unsigned long long)out_shifted_cases);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_max_pack_and_unroll),
        cmocka_unit_test(test_can_shift),
        cmocka_unit_test(test_hand_checked),
        cmocka_unit_test(test_all_phases),
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_bulk),
        cmocka_unit_test(test_capped_shared_bytes),
        cmocka_unit_test(test_bulk_all_phases),
        cmocka_unit_test(test_choose),
    };
    return cmocka_run_group_tests(tests, NULL, report_cases);
}
