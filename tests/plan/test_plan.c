/* SPDX-License-Identifier: Apache-2.0 */
/* The launch plan (src/plan/plan.c) as pure functions, checked against an independent brute-force model
 * written here and against the properties the kernels (src/device/direct.cuh, src/device/bulk.cuh) rely on; and the
 * tuning policy the plan reads (src/plan/policy.c). The model takes its tuning figures from the policy it is
 * given, as the plan does, so it checks the plan under other policies than sm_90's too:
 * - pack P: P * (widest element) <= 16, P <= 8. When one common head h < P brings every pointer to a
 *   multiple of P * its element size, P is the largest such (plain plan, EW_PLAN_KERNEL_ALIGNED). When
 *   the pointers' phases differ at the largest legal P and every input's pack is whole 32-bit words
 *   (ew_plan_can_shift), P is the largest legal one and the inputs are read through shifted windows
 *   (shifted plan, EW_PLAN_KERNEL_SHIFTED), but for unary ops that narrow to a quarter or less
 *   (EW_PLAN_SHIFTS_OUT), whose out is written element by element instead (out-shifted plan,
 *   EW_PLAN_KERNEL_OUT_SHIFTED). plan.kernel names the kind of plan.
 * - head: elements done one by one first; after them every pointer is P-aligned (shifted plans: out;
 *   out-shifted plans: the input), and that pointer is aligned to max(P * its size,
 *   the policy's out_align) bytes, so warps store (out-shifted: load) whole cache lines. In a shifted
 *   plan each input's window starts `shift` elements before the body and never before the input
 *   itself (head >= shift). Clamped to n.
 * - packs: whole packs of the body; a shifted input with shift > 0 reads one aligned pack past each
 *   body pack, which must still lie inside its n elements.
 * - unroll: packs per thread per step, EW_PLAN_THREAD_BYTES (shifted: EW_PLAN_SHIFTED_THREAD_BYTES) of
 *   the widest type in flight.
 * - blocks = max(1, min(ceil(ceil(packs / unroll) / 256), INT32_MAX, and when shifted
 *   sm * threads_per_sm / 256 * the policy's shifted_waves)):
 *   the head (at most 2 * 128 elements) and the tail (shorter than 2P) are done by one extra block
 *   after these (the kernels' edge_blocks).
 * - the bulk-copy plan, unforced: the forced one where that has at least the policy's bulk_min_tiles per
 *   SM for the call's shape and phase (and n reaches the fewest of any shape at one pack a thread), else
 *   none.
 * Spot checks with literal numbers hold the sm_90 policy (ew_policy_for(9, 0)): a change of its figures
 * fails them, and test_policy_sm90 names the figure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plan/plan.h"
#include "plan/policy.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

enum {
    MAX_BYTES = 16,
    BLOCK = 256,
    THREAD_BYTES = EW_PLAN_THREAD_BYTES,
    SHIFTED_THREAD_BYTES = EW_PLAN_SHIFTED_THREAD_BYTES
};

/* The H200's figures (132 SMs, 2048 threads each), which the spot checks and bulk plans run on. */
static const ew_device_t h200 = {.sm_count = 132, .max_threads_per_sm = 2048};

/* One call as the planner takes it: count pointers, out first; the arrays' other entries stay 0. */
static ew_call_t call_of(int64_t n, int count, const uintptr_t address[], const size_t size[],
                         int block_table)
{
    ew_call_t call = {.n = n, .count = count, .block_table = block_table};
    for (int i = 0; i < count; ++i) {
        call.address[i] = address[i];
        call.elem_size[i] = size[i];
    }
    return call;
}

/* ew_plan_make for one call on a device of sm SMs of tps threads each. */
static ew_plan_t make(const ew_policy_t *policy, int64_t n, int count, const uintptr_t address[],
                      const size_t size[], int sm, int tps)
{
    const ew_device_t device = {.sm_count = sm, .max_threads_per_sm = tps};
    const ew_call_t call = call_of(n, count, address, size, 0);
    return ew_plan_make(policy, &device, &call);
}

/* ew_plan_make_bulk for one call on the H200. */
static int make_bulk(const ew_policy_t *policy, int64_t n, int count, const uintptr_t address[],
                     const size_t size[], int block_table, int force, ew_plan_t *plan)
{
    const ew_call_t call = call_of(n, count, address, size, block_table);
    return ew_plan_make_bulk(policy, &h200, &call, force, plan);
}

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

/* Elements of out per alignment step of the head: a pack, or the policy's out_align bytes if more. */
static int out_step(const ew_policy_t *policy, int pack, size_t size)
{
    int step = (int)((size_t)policy->out_align / size);
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
static int64_t model_head(const ew_policy_t *policy, ew_plan_t *plan, int count, const uintptr_t address[],
                          const size_t size[], size_t widest)
{
    int64_t head = common_head(count, address, size, plan->pack);
    if (head < 0 && count == 2 && size[1] >= 4 * size[0]) {
        /* narrowing to a quarter or less: the head aligns the input to its pack and line instead */
        plan->kernel = EW_PLAN_KERNEL_OUT_SHIFTED;
        plan->access_packs = 1;
        return aligning_head(address[1], size[1], out_step(policy, plan->pack, size[1]));
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
    int access = EW_PLAN_ACCESS_PACKS(widest);
    plan->access_packs = !shifted && access > 1 && plan->pack == model_max_pack(widest) &&
                                 common_head(count, address, size, plan->pack * access) >= 0
                             ? access
                             : 1;
    /* the common head plus whole accesses, up to out's alignment; shifted: past every shift */
    int step = out_step(policy, plan->pack * plan->access_packs, size[0]);
    head = aligning_head(address[0], size[0], step);
    for (int i = 1; shifted && i < count; ++i)
        if (head < plan->shift[i - 1])
            head = aligning_head(address[0], size[0], step) + step;
    return head;
}

static ew_plan_t model_plan(const ew_policy_t *policy, int64_t n, int count, const uintptr_t address[],
                            const size_t size[], int sm, int threads_per_sm)
{
    size_t widest = 0;
    for (int i = 0; i < count; ++i)
        widest = size[i] > widest ? size[i] : widest;
    ew_plan_t plan = {.kernel = EW_PLAN_KERNEL_ALIGNED, .pack = model_max_pack(widest)};
    plan.head = min_of(model_head(policy, &plan, count, address, size, widest), n);
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
    int64_t cap = shifted ? (int64_t)sm * threads_per_sm / BLOCK * policy->shifted_waves : INT32_MAX;
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

static void print_case(const char *what, const ew_policy_t *policy, int64_t n, int count,
                       const uintptr_t address[], const size_t size[], int sm, int tps, const ew_plan_t *got,
                       const ew_plan_t *want)
{
    print_error("%s\n  n = %lld, sm = %d, threads/sm = %d, out_align = %d, shifted_waves = %d, pointers:",
                what, (long long)n, sm, tps, policy->out_align, policy->shifted_waves);
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

#define PROPERTY(condition)                                                                            \
    do {                                                                                               \
        if (!(condition)) {                                                                            \
            print_case("violated: " #condition, policy, n, count, address, size, sm, tps, &got, NULL); \
            fail();                                                                                    \
        }                                                                                              \
    } while (0)

static void check_case(const ew_policy_t *policy, int64_t n, int count, const uintptr_t address[],
                       const size_t size[], int sm, int tps)
{
    ew_plan_t got = make(policy, n, count, address, size, sm, tps);
    ew_plan_t want = model_plan(policy, n, count, address, size, sm, tps);
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
        print_case("the plan differs from the model", policy, n, count, address, size, sm, tps, &got, &want);
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
    PROPERTY(A == 1 || (A == EW_PLAN_ACCESS_PACKS(1) && !shifted && widest == 1));
    PROPERTY((size_t)(P * A) * widest <= MAX_BYTES);
    /* the pointer the head aligns: out, or for out-shifted plans the input */
    const int aligned = out_shifted ? 1 : 0;
    const int64_t step = out_step(policy, (int)(P * A), size[aligned]);
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
    int64_t cap = shifted ? (int64_t)sm * tps / BLOCK * policy->shifted_waves : INT32_MAX;
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

/* A policy with sm_90's figures but a random out_align (a power of two, 1-128) and shifted_waves: the
 * model reads both from the policy, so the plan must follow them too. */
static ew_policy_t random_grid_policy(void)
{
    static const int waves[] = {1, 2, 3, 8, 32, 100};
    ew_policy_t policy = ew_policy_for(9, 0);
    policy.out_align = 1 << (next_random() % 8);
    policy.shifted_waves = waves[next_random() % COUNT(waves)];
    return policy;
}

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
    /* 1-byte types' 8-byte packs go two to a 16-byte access; wider packs are one access already */
    assert_int_equal(EW_PLAN_ACCESS_PACKS(1), 2);
    assert_int_equal(EW_PLAN_ACCESS_PACKS(2), 1);
    assert_int_equal(EW_PLAN_ACCESS_PACKS(4), 1);
    assert_int_equal(EW_PLAN_ACCESS_PACKS(8), 1);
}

/* Every element phase within 16 bytes for each pointer, every size combination, the given n. */
static void check_all_phases(const ew_policy_t *policy, const int64_t ns[], size_t ns_count)
{
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
                for (size_t k = 0; k < ns_count; ++k)
                    check_case(policy, ns[k], count, address, size, h200.sm_count, h200.max_threads_per_sm);
            }
        }
    }
}

/* Same-size pointers (add, mul, relu, scale_add) and mixed sizes (casts), at random; on the given
 * policy, or where it is NULL on a random one of random_grid_policy's. */
static void check_random(const ew_policy_t *policy, int iterations)
{
    uintptr_t address[3];
    size_t size[3];
    for (int iteration = 0; iteration < iterations; ++iteration) {
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
        const ew_policy_t random_policy = random_grid_policy();
        check_case(policy ? policy : &random_policy, n, count, address, size, sm, tps);
    }
}

/* Every phase on the sm_90 policy, a few n. */
static void test_all_phases(void **state)
{
    (void)state;
    static const int64_t ns[] = {1, 2, 3, 7, 8, 9, 17, 1000, 123457, (int64_t)1 << 33};
    const ew_policy_t sm90 = ew_policy_for(9, 0);
    check_all_phases(&sm90, ns, COUNT(ns));
}

/* Random calls on the sm_90 policy. */
static void test_random(void **state)
{
    (void)state;
    const ew_policy_t sm90 = ew_policy_for(9, 0);
    check_random(&sm90, 300000);
}

/* Other grid figures than sm_90's, which a policy may hold: every out_align from 1 to 128 over every
 * phase at a few n (with 1 and 100 waves of shifted windows), and random calls on random ones. */
static void test_other_grid_policies(void **state)
{
    (void)state;
    static const int64_t ns[] = {9, 1000, (int64_t)1 << 33};
    ew_policy_t policy = ew_policy_for(9, 0);
    for (int out_align = 1; out_align <= 128; out_align *= 2) {
        policy.out_align = out_align;
        policy.shifted_waves = out_align % 2 ? 1 : 100;
        check_all_phases(&policy, ns, COUNT(ns));
    }
    check_random(NULL, 100000);
}

/* Edge n on every device shape: step boundaries of the grid and the cap. */
static void test_edges(void **state)
{
    (void)state;
    const ew_policy_t sm90 = ew_policy_for(9, 0);
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
                                        check_case(&sm90, base + delta, count, address, size, sm_counts[a],
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

/* A few plans written out by hand from the rules above, on the sm_90 policy (128-byte lines, 32 waves of
 * shifted windows) and the H200, so the model is checked too; and two of them again under other grid
 * figures, which the plan takes from the policy. */
static void test_hand_checked(void **state)
{
    (void)state;
    const ew_policy_t sm90 = ew_policy_for(9, 0);
    /* f32 add on an H200 (132 SMs, 2048 threads): all 16-byte aligned, n = 2^20 + 3 */
    uintptr_t aligned[3] = {0x1000, 0x2000, 0x3000};
    size_t f32[3] = {4, 4, 4};
    ew_plan_t plan = make(&sm90, (1 << 20) + 3, 3, aligned, f32, 132, 2048);
    assert_int_equal(plan.pack, 4);
    assert_int_equal(plan.head, 0);
    assert_int_equal(plan.packs, 1 << 18);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_ALIGNED);
    assert_int_equal(plan.unroll, 2);    /* 16-byte packs, 32 bytes per thread */
    assert_int_equal(plan.blocks, 512); /* 2^18 packs / 2 per thread / 256 threads */
    /* the same shifted by one element each: 31 head elements bring out to the next 128-byte line */
    uintptr_t one_more[3] = {0x1004, 0x2004, 0x3004};
    plan = make(&sm90, (1 << 20) + 3, 3, one_more, f32, 132, 2048);
    assert_int_equal(plan.pack, 4);
    assert_int_equal(plan.head, 31);
    assert_int_equal(plan.packs, 262137); /* (2^20 + 3 - 31) / 4 */
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_ALIGNED);
    assert_int_equal(plan.blocks, 512);
    /* a policy aligning out to 16 bytes only: 3 head elements, to the next pack */
    ew_policy_t short_lines = sm90;
    short_lines.out_align = 16;
    plan = make(&short_lines, (1 << 20) + 3, 3, one_more, f32, 132, 2048);
    assert_int_equal(plan.head, 3);
    assert_int_equal(plan.packs, 1 << 18);
    /* out at phase 0, a at phase 1, b at phase 2 (of 4): shifted windows, no head */
    uintptr_t phases[3] = {0x1000, 0x2004, 0x3008};
    plan = make(&sm90, 1000, 3, phases, f32, 132, 2048);
    assert_int_equal(plan.pack, 4);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_SHIFTED);
    assert_int_equal(plan.shift[0], 1);
    assert_int_equal(plan.shift[1], 2);
    /* the windows would start 1 and 2 elements before a and b: one 128-byte line of head first */
    assert_int_equal(plan.head, 32);
    assert_int_equal(plan.packs, 241); /* the last window pack read ends at 32 - 2 + 242 * 4 = 998 <= 1000 */
    /* out 12 bytes into a line, a at phase 0: the head of 29 already covers a's shift of 1 */
    uintptr_t late_out[2] = {0x100c, 0x2000};
    plan = make(&sm90, 1000, 2, late_out, f32, 132, 2048);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_SHIFTED);
    assert_int_equal(plan.head, 29);
    assert_int_equal(plan.shift[0], 1);
    assert_int_equal(plan.packs, 242); /* the last window pack read ends at 29 - 1 + 243 * 4 = 1000 */
    /* cast f64 <- u8 at different phases: u8 packs of 2 bytes cannot shift, so P drops until they agree */
    uintptr_t cast[2] = {0x10000, 0x20001};
    size_t f64_u8[2] = {8, 1};
    plan = make(&sm90, 1000, 2, cast, f64_u8, 132, 2048);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_ALIGNED);
    assert_int_equal(plan.pack, 1);
    assert_int_equal(plan.unroll, 4);
    /* cast f16 -> f64: widest 8 bytes, so P = 2; aligned, a huge n gets a block per 1024 elements
     * up to the grid's limit, where the grid-stride loop takes over */
    uintptr_t wide[2] = {0x10000, 0x20000};
    size_t f64_f16[2] = {8, 2};
    plan = make(&sm90, (int64_t)1 << 40, 2, wide, f64_f16, 132, 2048);
    assert_int_equal(plan.pack, 2);
    assert_int_equal(plan.unroll, 2);
    assert_int_equal(plan.blocks, 1 << 30);
    plan = make(&sm90, (int64_t)1 << 42, 2, wide, f64_f16, 132, 2048);
    assert_int_equal(plan.blocks, INT32_MAX);
    /* shifted windows stop at 32 waves: 132 * 2048 / 256 * 32 blocks */
    uintptr_t wide_shifted[2] = {0x10000, 0x20002};
    plan = make(&sm90, (int64_t)1 << 40, 2, wide_shifted, f64_f16, 132, 2048);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_SHIFTED);
    assert_int_equal(plan.blocks, 132 * 8 * 32);
    /* and at a policy's 4 waves, at 4 */
    ew_policy_t four_waves = sm90;
    four_waves.shifted_waves = 4;
    plan = make(&four_waves, (int64_t)1 << 40, 2, wide_shifted, f64_f16, 132, 2048);
    assert_int_equal(plan.blocks, 132 * 8 * 4);
    /* f32 -> fp8 at other phases: the input aligned (to its 128-byte line), out written element by
     * element, the aligned kernel's two packs per thread and grid */
    uintptr_t narrow[2] = {0x10001, 0x20040};
    size_t u8_f32[2] = {1, 4};
    plan = make(&sm90, 1 << 20, 2, narrow, u8_f32, 132, 2048);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_OUT_SHIFTED);
    assert_int_equal(plan.pack, 4);
    assert_int_equal(plan.head, 16); /* (0x20080 - 0x20040) / 4 */
    assert_int_equal(plan.packs, ((1 << 20) - 16) / 4);
    assert_int_equal(plan.unroll, 2);
    assert_int_equal(plan.blocks, 512); /* ceil(ceil(262140 / 2) / 256) */
    /* the same phases modulo the pack: the plain plan */
    narrow[0] = 0x10040;
    plan = make(&sm90, 1 << 20, 2, narrow, u8_f32, 132, 2048);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_ALIGNED);
    /* bytes: P = 8 moves only 8 bytes, so two packs per step */
    uintptr_t bytes[2] = {0x10003, 0x20003};
    size_t u8[2] = {1, 1};
    plan = make(&sm90, 1000, 2, bytes, u8, 132, 2048);
    assert_int_equal(plan.pack, 8);
    assert_int_equal(plan.head, 125);
    assert_int_equal(plan.packs, 109); /* (1000 - 125) / 8 */
    assert_int_equal(plan.unroll, 4);
    assert_int_equal(plan.access_packs, 2); /* both at phase 3 of 16: the kernel moves 16 bytes an access */
    /* at phase 3 and 11: they agree at 8 bytes but not at 16, so one pack an access */
    uintptr_t half_apart[2] = {0x10003, 0x2000b};
    plan = make(&sm90, 1000, 2, half_apart, u8, 132, 2048);
    assert_int_equal(plan.pack, 8);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_ALIGNED);
    assert_int_equal(plan.access_packs, 1);
    /* wider types: one pack an access */
    plan = make(&sm90, (1 << 20) + 3, 3, aligned, f32, 132, 2048);
    assert_int_equal(plan.access_packs, 1);
    /* fewer elements than the head needs: all of them in the head */
    plan = make(&sm90, 3, 2, bytes, u8, 132, 2048);
    assert_int_equal(plan.head, 3);
    assert_int_equal(plan.packs, 0);
    assert_int_equal(plan.blocks, 1);
    /* a device too small for one block per wave still gets one block of shifted windows */
    plan = make(&sm90, 1 << 20, 3, phases, f32, 1, 128);
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_SHIFTED);
    assert_int_equal(plan.blocks, 1);
    /* the direct plan reads no bulk figure: the same under other ones */
    ew_policy_t other_bulk = sm90;
    other_bulk.bulk = EW_BULK_OFF;
    other_bulk.bulk_tile_bytes = 1024;
    other_bulk.bulk_wave_tiles = 1;
    for (int shape = 0; shape < EW_SHAPE_COUNT; ++shape)
        for (int phase = EW_ONE_PHASE; phase <= EW_OTHER_PHASES; ++phase)
            other_bulk.bulk_min_tiles[shape][phase] = 0;
    for (int k = 0; k < 2; ++k) {
        const uintptr_t *address = k ? phases : aligned;
        ew_plan_t other = make(&other_bulk, 1 << 20, 3, address, f32, 132, 2048);
        plan = make(&sm90, 1 << 20, 3, address, f32, 132, 2048);
        assert_memory_equal(&other, &plan, sizeof plan);
    }
}

/* Tiles over the H200's 132 SMs from which a shape takes the bulk-copy kernel, by the policy. */
static int64_t bulk_from(const ew_policy_t *policy, ew_shape_t shape, int phase)
{
    return (int64_t)h200.sm_count * policy->bulk_min_tiles[shape][phase];
}

/* Bulk-copy plans on the sm_90 policy and the H200's 132 SMs: out's head peeled to its 128-byte line
 * (out_align), one tile of 256 threads x tile_packs packs per block, tiles sized by input bytes
 * (bulk_tile_bytes; halved for f16 -> f32 shapes, doubled for unary ops from 2-byte inputs to 2 bytes or
 * fewer at other phases than out, halved at other phases where the grid would hold fewer than
 * bulk_wave_tiles per SM), and the cases the direct kernel keeps (bulk_min_tiles). Tiles and heads are
 * written out for sm_90's 8 KiB tiles and 128-byte lines, as are a few of the tiles per SM; the others
 * are read from the policy. */
static void test_bulk(void **state)
{
    (void)state;
    const ew_policy_t sm90 = ew_policy_for(9, 0);
    ew_policy_t tile16k = sm90, tile1k = sm90;
    tile16k.bulk_tile_bytes = 16384;
    tile1k.bulk_tile_bytes = 1024;
    const int64_t wave = (int64_t)h200.sm_count * sm90.bulk_wave_tiles;
    size_t f32[3] = {4, 4, 4}, u8[2] = {1, 1}, f64[3] = {8, 8, 8}, f64_u8[2] = {8, 1}, f32_f32[2] = {4, 4};
    uintptr_t aligned[3] = {0x1000, 0x2000, 0x3000}, phases[3] = {0x1004, 0x2008, 0x300c};
    ew_plan_t plan = {.pack = -1};

    /* add f32 aligned, 8 KiB of inputs a tile: 1024 elements, one 16-byte pack per thread */
    assert_true(make_bulk(&sm90, 1 << 24, 3, aligned, f32, 0, 0, &plan));
    assert_int_equal(plan.kernel, EW_PLAN_KERNEL_BULK);
    assert_int_equal(plan.pack, 4);
    assert_int_equal(plan.tile_packs, 1);
    assert_int_equal(plan.head, 0);
    assert_int_equal(plan.blocks, 1 << 14);
    /* aligned needs 24 tiles per SM: 3168 tiles of 1024 */
    assert_true(make_bulk(&sm90, 3168 * 1024, 3, aligned, f32, 0, 0, &plan));
    assert_int_equal(plan.blocks, 3168);
    plan = (ew_plan_t){.pack = -1};
    assert_false(make_bulk(&sm90, 3167 * 1024, 3, aligned, f32, 0, 0, &plan));
    assert_int_equal(plan.pack, -1); /* left alone */
    /* always: any n the grid holds */
    assert_true(make_bulk(&sm90, (1 << 20) + 3, 3, aligned, f32, 0, 1, &plan));
    assert_int_equal(plan.blocks, 1025);

    /* inputs at other phases, 8 KiB of inputs a tile: 1024 elements, as aligned; binary 2- to 8-byte ops
     * need 192 tiles per SM there (25344 tiles after the head of 31) */
    const int64_t wide_other = bulk_from(&sm90, EW_SHAPE_BINARY_WIDE, EW_OTHER_PHASES);
    assert_true(make_bulk(&sm90, 1 << 26, 3, phases, f32, 0, 0, &plan));
    assert_int_equal(plan.head, 31);
    assert_int_equal(plan.tile_packs, 1);
    assert_true(make_bulk(&sm90, 31 + 25344 * 1024, 3, phases, f32, 0, 0, &plan));
    assert_int_equal(plan.blocks, 25344);
    assert_false(make_bulk(&sm90, 31 + 25343 * 1024, 3, phases, f32, 0, 0, &plan));
    /* with 16 KiB: 2 packs a thread while 8 tiles per SM remain (1056 tiles of 2048 after the head of
     * 31), else half that */
    assert_true(make_bulk(&tile16k, 31 + wide_other * 2048, 3, phases, f32, 0, 0, &plan));
    assert_int_equal(plan.tile_packs, 2);
    assert_true(make_bulk(&tile16k, 31 + 1056 * 2048, 3, phases, f32, 0, 1, &plan));
    assert_int_equal(plan.head, 31);
    assert_int_equal(plan.tile_packs, 2);
    assert_int_equal(plan.blocks, 1056);
    assert_true(make_bulk(&tile16k, 31 + 1055 * 2048, 3, phases, f32, 0, 1, &plan));
    assert_int_equal(plan.tile_packs, 1);
    assert_int_equal(plan.blocks, 2 * 1055);
    assert_false(make_bulk(&tile16k, (1 << 20) + 3, 3, phases, f32, 0, 0, &plan));
    assert_true(make_bulk(&tile16k, (1 << 20) + 3, 3, phases, f32, 0, 1, &plan));
    assert_int_equal(plan.tile_packs, 1); /* 512 tiles of 2048 would be under 8 per SM */
    assert_int_equal(plan.blocks, 1024);
    assert_int_equal(plan.packs, 262137); /* (2^20 + 3 - 31) / 4 */
    /* a policy wanting 16 tiles per SM before it halves them: the same from 2112 tiles of 2048 */
    ew_policy_t sixteen = tile16k;
    sixteen.bulk_wave_tiles = 16;
    assert_true(make_bulk(&sixteen, 31 + 2112 * 2048, 3, phases, f32, 0, 1, &plan));
    assert_int_equal(plan.tile_packs, 2);
    assert_int_equal(plan.blocks, 2112);
    assert_true(make_bulk(&sixteen, 31 + 2111 * 2048, 3, phases, f32, 0, 1, &plan));
    assert_int_equal(plan.tile_packs, 1);
    assert_int_equal(plan.blocks, 2 * 2111);
    /* unary ops of one size take it at other phases from 192 tiles per SM (of 2048 f32), else stay
     * direct, unless always; at one phase they stay direct */
    const int64_t same_other = bulk_from(&sm90, EW_SHAPE_UNARY_SAME, EW_OTHER_PHASES);
    uintptr_t pair[2] = {0x1000, 0x2004}, pair_aligned[2] = {0x1000, 0x2000};
    assert_true(make_bulk(&sm90, 1 << 26, 2, pair, f32_f32, 0, 0, &plan));
    assert_int_equal(plan.tile_packs, 2);
    assert_true(make_bulk(&sm90, same_other * 2048, 2, pair, f32_f32, 0, 0, &plan));
    assert_int_equal(plan.blocks, same_other);
    assert_false(make_bulk(&sm90, same_other * 2048 - 2048, 2, pair, f32_f32, 0, 0, &plan));
    assert_true(make_bulk(&sm90, 1 << 20, 2, pair, f32_f32, 0, 1, &plan));
    assert_false(make_bulk(&sm90, 1 << 28, 2, pair_aligned, f32_f32, 0, 0, &plan));
    /* but 2-byte inputs narrowed to 1 byte take it at other phases than out: i8 <- f16, i8 <- f32 */
    const int64_t halving_other = bulk_from(&sm90, EW_SHAPE_UNARY_HALVING, EW_OTHER_PHASES);
    size_t i8_f16[2] = {1, 2}, i8_f32[2] = {1, 4};
    uintptr_t same_phase[2] = {0x1000, 0x2000}, other_phase[2] = {0x1001, 0x2000};
    assert_false(make_bulk(&sm90, 1 << 26, 2, same_phase, i8_f16, 0, 0, &plan));
    assert_true(make_bulk(&sm90, 1 << 26, 2, other_phase, i8_f16, 0, 0, &plan));
    /* with the halving shape's tiles per SM (of 16 KiB of f16 at other phases: 2-byte inputs take twice
     * the tile there), not one */
    assert_true(make_bulk(&sm90, halving_other * 8192, 2, other_phase, i8_f16, 0, 0, &plan));
    assert_int_equal(plan.blocks, halving_other);
    assert_false(make_bulk(&sm90, halving_other * 8192 - 8192, 2, other_phase, i8_f16, 0, 0, &plan));
    /* binary f16 at other phases, as at one phase: 8 KiB tiles (1 pack a thread, 2048 elements), the
     * bulk kernel from 24 tiles per SM (3168 tiles after the head of 63) */
    size_t f16_3[3] = {2, 2, 2};
    uintptr_t f16_phases[3] = {0x1002, 0x2004, 0x3000};
    assert_true(make_bulk(&sm90, 1 << 26, 3, f16_phases, f16_3, 0, 0, &plan));
    assert_int_equal(plan.tile_packs, 1);
    assert_int_equal(plan.blocks, 32768);
    uintptr_t f16_aligned[3] = {0x1000, 0x2000, 0x3000};
    assert_true(make_bulk(&sm90, 1 << 26, 3, f16_aligned, f16_3, 0, 0, &plan));
    assert_true(make_bulk(&sm90, 63 + 3168 * 2048, 3, f16_phases, f16_3, 0, 0, &plan));
    assert_int_equal(plan.head, 63);
    assert_int_equal(plan.blocks, 3168);
    assert_false(make_bulk(&sm90, 63 + 3167 * 2048, 3, f16_phases, f16_3, 0, 0, &plan));
    assert_false(make_bulk(&sm90, 1 << 22, 3, f16_phases, f16_3, 0, 0, &plan));
    assert_true(make_bulk(&sm90, 1 << 22, 3, f16_phases, f16_3, 0, 1, &plan));
    assert_int_equal(plan.tile_packs, 1);
    assert_false(make_bulk(&sm90, 1 << 26, 2, other_phase, i8_f32, 0, 0, &plan));
    /* and 4- or 8-byte inputs narrowed to half their size (f16 <- f32, f32 <- f64), from the halving
     * shape's tiles per SM of 8 KiB of inputs (aligned: direct) */
    size_t f16_f32[2] = {2, 4}, f32_f64[2] = {4, 8}, i16_f64[2] = {2, 8};
    uintptr_t wide_phases[2] = {0x1002, 0x2008};
    assert_true(make_bulk(&sm90, 1 << 26, 2, wide_phases, f16_f32, 0, 0, &plan));
    assert_int_equal(plan.tile_packs, 2); /* 2048 elements */
    assert_true(make_bulk(&sm90, halving_other * 2048, 2, wide_phases, f16_f32, 0, 0, &plan));
    assert_false(make_bulk(&sm90, halving_other * 2048 - 2048, 2, wide_phases, f16_f32, 0, 0, &plan));
    assert_false(make_bulk(&sm90, 1 << 26, 2, aligned, f16_f32, 0, 0, &plan));
    uintptr_t f64_phases[2] = {0x1004, 0x2000};
    assert_true(make_bulk(&sm90, 1 << 26, 2, f64_phases, f32_f64, 0, 0, &plan));
    assert_false(make_bulk(&sm90, 1 << 26, 2, f64_phases, i16_f64, 0, 0, &plan));
    /* relu u8 at other phases: 1-byte and shifted, 8 KiB of inputs a tile: 4 packs a thread; out
     * aligned to its 128-byte line */
    uintptr_t bytes[2] = {0x10003, 0x20000};
    assert_true(make_bulk(&sm90, 1 << 26, 2, bytes, u8, 0, 0, &plan));
    assert_int_equal(plan.pack, 8);
    assert_int_equal(plan.tile_packs, 4);
    assert_int_equal(plan.head, 125);
    assert_int_equal(plan.blocks, 8192); /* (2^26 - 125) / 8192 -> 8192 tiles */
    /* unary, so the wave tiles per SM keep the full size: 1056 tiles of 8192, not 1055 */
    assert_true(make_bulk(&sm90, 125 + wave * 8192, 2, bytes, u8, 0, 0, &plan));
    assert_int_equal(plan.tile_packs, 4);
    assert_true(make_bulk(&sm90, 125 + (wave - 1) * 8192, 2, bytes, u8, 0, 0, &plan));
    assert_int_equal(plan.tile_packs, 2);
    /* the same at out's phase 8: one phase, so the direct kernel's; when forced, 8 KiB tiles (unary),
     * and the head is the rest of the line */
    uintptr_t half_access[2] = {0x10008, 0x20008};
    assert_false(make_bulk(&sm90, 1 << 26, 2, half_access, u8, 0, 0, &plan));
    assert_true(make_bulk(&sm90, 1 << 26, 2, half_access, u8, 0, 1, &plan));
    assert_int_equal(plan.head, 120);
    assert_int_equal(plan.tile_packs, 4);
    assert_int_equal(plan.access_packs, 2);
    /* ops with a table per block keep the bulk kernel there, from the table shape's tiles per SM (3168
     * of 8192) */
    const int64_t table_one = bulk_from(&sm90, EW_SHAPE_BYTES_TABLE, EW_ONE_PHASE);
    ew_plan_t table = {.pack = -1};
    assert_true(make_bulk(&sm90, 1 << 26, 2, half_access, u8, 1, 0, &table));
    assert_memory_equal(&table, &plan, sizeof plan);
    assert_true(make_bulk(&sm90, 120 + table_one * 8192, 2, half_access, u8, 1, 0, &plan));
    assert_false(make_bulk(&sm90, 120 + (table_one - 1) * 8192, 2, half_access, u8, 1, 0, &plan));
    /* at phases 8 apart the 16-byte accesses disagree: bulk, spliced */
    uintptr_t half_apart[2] = {0x10008, 0x20000};
    assert_true(make_bulk(&sm90, 1 << 26, 2, half_apart, u8, 0, 0, &plan));
    /* binary 1-byte ops, forced: 8 KiB of inputs a tile, 4 KiB each (one access a thread) */
    size_t u8_3[3] = {1, 1, 1};
    uintptr_t bytes_3[3] = {0x10000, 0x20000, 0x30000};
    assert_false(make_bulk(&sm90, 1 << 26, 3, bytes_3, u8_3, 0, 0, &plan));
    assert_true(make_bulk(&sm90, 1 << 26, 3, bytes_3, u8_3, 0, 1, &plan));
    assert_int_equal(plan.tile_packs, 2);
    assert_int_equal(plan.blocks, 16384);
    /* and at other phases the same, 8 KiB of inputs, not 16 KiB, which measured slower for 1-byte ops
     * (docs/design.md); at 2^22 one access a thread is the least a tile holds: 1024 tiles, under 8 per
     * SM */
    uintptr_t bytes_3_phases[3] = {0x10000, 0x20001, 0x30002};
    assert_true(make_bulk(&sm90, 1 << 26, 3, bytes_3_phases, u8_3, 0, 0, &plan));
    assert_int_equal(plan.tile_packs, 2);
    assert_int_equal(plan.blocks, 16384);
    assert_true(make_bulk(&sm90, 1 << 22, 3, bytes_3_phases, u8_3, 0, 0, &plan));
    assert_int_equal(plan.tile_packs, 2);
    assert_int_equal(plan.blocks, 1024);
    /* a kernel an SM holds 6 blocks of (a run-time compiled i8 op of 39 registers): tiles of 16 KiB of
     * inputs, the bytes in flight of 8 blocks' 8 KiB and more; 3 blocks: 32 KiB; 1 block: 32 KiB, the
     * most a tile's inputs take; 8 or unknown (0): 8 KiB */
    const int blocks_per_sm[] = {6, 3, 1, 8, 0}, tile_packs[] = {4, 8, 8, 2, 2};
    for (int i = 0; i < 5; ++i) {
        ew_call_t call = call_of(1 << 26, 3, bytes_3_phases, u8_3, 0);
        call.bulk_blocks_per_sm = blocks_per_sm[i];
        assert_true(ew_plan_make_bulk(&sm90, &h200, &call, 0, &plan));
        assert_int_equal(plan.tile_packs, tile_packs[i]);
        assert_int_equal(plan.blocks, (1 << 26) / (256 * 8 * tile_packs[i]));
    }
    /* four 1-byte inputs under the largest tile the policy allows, 6 blocks an SM: still 32 KiB of
     * inputs, whose four slots fit 48 KiB */
    ew_policy_t large = sm90;
    large.bulk_tile_bytes = 32768;
    const size_t u8_5[5] = {1, 1, 1, 1, 1};
    const uintptr_t bytes_5[5] = {0x10000, 0x20001, 0x30002, 0x40003, 0x50004};
    ew_call_t four = call_of(1 << 26, 5, bytes_5, u8_5, 0);
    four.bulk_blocks_per_sm = 6;
    assert_true(ew_plan_make_bulk(&large, &h200, &four, 0, &plan));
    const int tile = 256 * plan.tile_packs * plan.pack;
    assert_int_equal(tile * 4, 32768);
    assert_true(4 * EW_PLAN_BULK_SLOT_BYTES(tile, 1) <= 49152);
    /* f16 -> f32: half the tile, 4 KiB of f16 */
    size_t f32_f16[2] = {4, 2};
    assert_true(make_bulk(&sm90, 1 << 26, 2, aligned, f32_f16, 0, 0, &plan));
    assert_int_equal(plan.pack, 4);
    assert_int_equal(plan.tile_packs, 2);
    assert_int_equal(plan.blocks, 1 << 15);
    /* 1-byte tiles smaller than one access a thread: still one access (2 packs) a thread */
    assert_true(make_bulk(&tile1k, 100000, 2, half_access, u8, 0, 1, &plan));
    assert_int_equal(plan.tile_packs, EW_PLAN_ACCESS_PACKS(1));
    /* too small a call for the fewest tiles: no plan */
    assert_false(make_bulk(&sm90, 100000, 2, bytes, u8, 0, 0, &plan));
    /* f64 with tiles smaller than one pack a thread: still one pack a thread */
    assert_true(make_bulk(&tile1k, 1000, 3, aligned, f64, 0, 1, &plan));
    assert_int_equal(plan.pack, 2);
    assert_int_equal(plan.tile_packs, 1);
    assert_int_equal(plan.blocks, 2);
    /* cast f64 <- u8: the 1-byte input would allow more, the f64 output caps it at 4 packs a thread */
    uintptr_t cast[2] = {0x10000, 0x20001};
    assert_true(make_bulk(&sm90, 5000, 2, cast, f64_u8, 0, 1, &plan));
    assert_int_equal(plan.pack, 2);
    assert_int_equal(plan.tile_packs, 4);
    assert_int_equal(plan.blocks, 3);
    /* fewer elements than out's head: all in the head, no tile (the kernel's head block alone) */
    uintptr_t late[2] = {0x1001, 0x2000};
    assert_true(make_bulk(&sm90, 3, 2, late, u8, 0, 1, &plan));
    assert_int_equal(plan.head, 3);
    assert_int_equal(plan.blocks, 0);
    /* more tiles than a grid holds: no plan even when always */
    assert_false(make_bulk(&sm90, (int64_t)1 << 45, 3, aligned, f32, 0, 1, &plan));
    /* a policy that never takes the bulk kernel for any shape: no plan, even at the largest n, but
     * still when forced */
    ew_policy_t never = sm90;
    for (int shape = 0; shape < EW_SHAPE_COUNT; ++shape)
        for (int phase = EW_ONE_PHASE; phase <= EW_OTHER_PHASES; ++phase)
            never.bulk_min_tiles[shape][phase] = EW_NEVER;
    assert_false(make_bulk(&never, (int64_t)1 << 34, 2, bytes, u8, 0, 0, &plan));
    assert_true(make_bulk(&never, (int64_t)1 << 34, 2, bytes, u8, 0, 1, &plan));
}

/* Every bulk plan over phases, sizes, tile sizes and out_align: the tiles cover the body exactly once,
 * out is aligned to its line after the head, tiles are whole accesses, and the tile keeps to its
 * limits. */
static void test_bulk_all_phases(void **state)
{
    (void)state;
    static const size_t sizes[] = {1, 2, 4, 8};
    static const int64_t ns[] = {1, 7, 8, 9, 255, 4095, 4096, 4097, 65537, 1000003, 50000017};
    static const int tile_bytes[] = {1024, 8192, 32768};
    static const int out_aligns[] = {128, 16, 1};
    ew_policy_t policy = ew_policy_for(9, 0);
    for (size_t a = 0; a < COUNT(out_aligns); ++a)
        for (size_t so = 0; so < 4; ++so)
            for (size_t si = 0; si < 4; ++si)
                for (uintptr_t phase = 0; phase < 16; phase += sizes[so])
                    for (size_t k = 0; k < COUNT(ns); ++k)
                        for (size_t t = 0; t < COUNT(tile_bytes); ++t)
                            for (int always = 0; always < 2; ++always) {
                                uintptr_t address[2] = {0x100000 + phase, 0x200000 + 3 * sizes[si]};
                                size_t elem[2] = {sizes[so], sizes[si]};
                                ew_plan_t plan;
                                int64_t n = ns[k];
                                policy.out_align = out_aligns[a];
                                policy.bulk_tile_bytes = tile_bytes[t];
                                if (!make_bulk(&policy, n, 2, address, elem, 0, always, &plan)) {
                                    assert_false(always);
                                    continue;
                                }
                                size_t widest = sizes[so] > sizes[si] ? sizes[so] : sizes[si];
                                assert_int_equal(plan.kernel, EW_PLAN_KERNEL_BULK);
                                assert_int_equal(plan.pack, ew_plan_max_pack(widest));
                                int64_t tile = (int64_t)EW_PLAN_BLOCK_THREADS * plan.tile_packs * plan.pack;
                                assert_true(tile * (int64_t)widest <= EW_PLAN_BULK_MAX_TILE_BYTES);
                                int access = EW_PLAN_ACCESS_PACKS(widest);
                                assert_int_equal(plan.access_packs, access);
                                assert_int_equal(plan.tile_packs % access, 0);
                                assert_true(plan.tile_packs == access ||
                                            tile * (int64_t)sizes[si] <= 4 * tile_bytes[t]);
                                /* out aligned to its access, and to the policy's out_align if more */
                                int64_t line = (int64_t)plan.pack * access * (int64_t)sizes[so];
                                line = line > policy.out_align ? line : policy.out_align;
                                assert_true(plan.head >= 0 && plan.head < line / (int64_t)sizes[so] &&
                                            plan.head <= n);
                                if (plan.head < n)
                                    assert_int_equal((address[0] + plan.head * sizes[so]) % line, 0);
                                assert_true((int64_t)plan.blocks * tile >= n - plan.head);
                                /* one block per tile, none idle: none at all where the head is the whole
                                 * call */
                                assert_true((int64_t)plan.blocks * tile < n - plan.head + tile);
                                if (!always) /* never fewer tiles than one per SM */
                                    assert_true(plan.blocks >= 132);
                            }
}

/* The shapes of src/plan/policy.h, stated on their own: 1-byte types by whether the op fills a table per
 * block, ops of two or more inputs (run-time compiled ones take up to four) by their widest type,
 * unary ops by out's width against the input's. */
static ew_shape_t model_shape(int count, const size_t size[], int block_table)
{
    size_t widest = 0;
    for (int i = 0; i < count; ++i)
        widest = size[i] > widest ? size[i] : widest;
    if (widest == 1)
        return block_table ? EW_SHAPE_BYTES_TABLE : EW_SHAPE_BYTES;
    if (count > 2)
        return widest == 2 ? EW_SHAPE_BINARY_2BYTE : EW_SHAPE_BINARY_WIDE;
    if (size[0] > size[1])
        return EW_SHAPE_UNARY_WIDENING;
    if (size[0] == size[1])
        return EW_SHAPE_UNARY_SAME;
    return size[1] == 2 * size[0] ? EW_SHAPE_UNARY_HALVING : EW_SHAPE_UNARY_NARROWER;
}

/* Bulk plans of one to four inputs (run-time compiled ops) at every size mix, tile size and phase: the
 * inputs' slots of shared memory (EW_PLAN_BULK_SLOT_BYTES each, as the launches count them) fit the
 * 48 KiB a block gets without opting in, and the tiles cover the body. */
static void test_bulk_many_inputs(void **state)
{
    (void)state;
    static const size_t sizes[] = {1, 2, 4, 8};
    static const int tile_bytes[] = {1024, 8192, 32768};
    ew_policy_t policy = ew_policy_for(9, 0);
    int64_t plans = 0;
    for (int count = 2; count <= EW_PLAN_MAX_POINTERS; ++count)
        for (int mix = 0; mix < 1 << (2 * count); ++mix)
            for (size_t t = 0; t < COUNT(tile_bytes); ++t)
                for (int shifted = 0; shifted < 2; ++shifted) {
                    uintptr_t address[EW_PLAN_MAX_POINTERS];
                    size_t size[EW_PLAN_MAX_POINTERS] = {0}, widest = 0;
                    for (int i = 0; i < count; ++i) {
                        size[i] = sizes[(mix >> (2 * i)) & 3];
                        widest = size[i] > widest ? size[i] : widest;
                        address[i] = ((uintptr_t)(i + 1) << 32) + (shifted ? (uintptr_t)i * size[i] : 0);
                    }
                    policy.bulk_tile_bytes = tile_bytes[t];
                    const int64_t n = 50000017;
                    ew_plan_t plan;
                    assert_true(make_bulk(&policy, n, count, address, size, 0, 1, &plan));
                    const int64_t tile = (int64_t)EW_PLAN_BLOCK_THREADS * plan.tile_packs * plan.pack;
                    int64_t shared = 0;
                    for (int i = 1; i < count; ++i)
                        shared += EW_PLAN_BULK_SLOT_BYTES(tile, (int64_t)size[i]);
                    if (shared > 48 * 1024)
                        fail_msg("%d pointers, sizes %zu %zu %zu %zu %zu, tile bytes %d: %lld bytes of shared memory",
                                 count, size[0], size[1], size[2], size[3], size[4], tile_bytes[t], (long long)shared);
                    assert_true(tile * (int64_t)widest <= EW_PLAN_BULK_MAX_TILE_BYTES);
                    assert_int_equal(plan.pack, ew_plan_max_pack(widest));
                    assert_true((int64_t)plan.blocks * tile >= n - plan.head);
                    assert_true((int64_t)plan.blocks * tile < n - plan.head + tile);
                    ++plans;
                }
    printf("# %lld bulk plans of one to four inputs\n", (long long)plans);
}

/* Whether the first count pointers sit at one element phase modulo pack (by division, not masks). */
static int model_agree(int count, const uintptr_t address[], const size_t size[], int pack)
{
    for (int i = 1; i < count; ++i)
        if (address[i] % (pack * size[i]) / size[i] != address[0] % (pack * size[0]) / size[0])
            return 0;
    return 1;
}

/* Calls of two to four outputs and one to four inputs, random sizes and phases, against a model of the
 * rule: the widest pack where every pointer agrees or where the outputs agree and the inputs can be read
 * shifted (never out-shifted), else the largest pack at which all agree; after the head every output is
 * aligned to its whole access, each shifted input's phase is its own; the bulk plan is taken only where
 * the outputs agree at one access, and aligns each. */
static void test_several_outputs(void **state)
{
    (void)state;
    static const size_t sizes[] = {1, 2, 4, 8};
    const ew_policy_t policy = ew_policy_for(9, 0);
    uint64_t r = 0x5EEDu;
    int64_t shifted_plans = 0, narrowed = 0, bulk_plans = 0;
    for (int trial = 0; trial < 200000; ++trial) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        const int outputs = 2 + (int)(r >> 60) % 3, inputs = 1 + (int)(r >> 56) % 4;
        ew_call_t call = {
            .n = 1 + (int64_t)(r >> 40) % 100000, .count = outputs + inputs, .outputs = outputs};
        size_t widest = 1;
        for (int i = 0; i < call.count; ++i) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            call.elem_size[i] = sizes[(r >> 62) & 3];
            /* mostly at one phase, so that every rule is reached */
            const uintptr_t phase = (r >> 61 & 1) ? (uintptr_t)((r >> 32) % 16) : (uintptr_t)(trial % 16);
            call.address[i] = ((uintptr_t)(i + 1) << 36) + phase * call.elem_size[i];
            widest = call.elem_size[i] > widest ? call.elem_size[i] : widest;
        }
        const int max_pack = model_max_pack(widest);
        int pack = max_pack, kernel = EW_PLAN_KERNEL_ALIGNED;
        const size_t *input_sizes = call.elem_size + outputs - 1; /* model_can_shift skips its first */
        if (!model_agree(call.count, call.address, call.elem_size, pack)) {
            if (model_agree(outputs, call.address, call.elem_size, pack) &&
                model_can_shift(pack, inputs + 1, input_sizes))
                kernel = EW_PLAN_KERNEL_SHIFTED;
            else
                while (!model_agree(call.count, call.address, call.elem_size, pack))
                    pack /= 2;
        }
        const ew_plan_t plan = ew_plan_make(&policy, &h200, &call);
        if ((int)plan.kernel != kernel || plan.pack != pack)
            fail_msg("trial %d, %d outputs, %d inputs: kernel %d pack %d, expected kernel %d pack %d", trial,
                     outputs, inputs, (int)plan.kernel, plan.pack, kernel, pack);
        shifted_plans += kernel == EW_PLAN_KERNEL_SHIFTED;
        narrowed += pack < max_pack;
        const int64_t access = (int64_t)pack * plan.access_packs;
        assert_true(plan.head + plan.packs * pack <= call.n);
        for (int k = 0; k < outputs && plan.head < call.n; ++k)
            assert_int_equal((call.address[k] + (uintptr_t)plan.head * call.elem_size[k]) %
                                 ((uintptr_t)access * call.elem_size[k]),
                             0);
        for (int i = 0; i < inputs && kernel == EW_PLAN_KERNEL_SHIFTED && plan.head < call.n; ++i) {
            const uintptr_t address = call.address[outputs + i];
            const size_t size = call.elem_size[outputs + i];
            const int want = (int)((address % (pack * size) / size + (uintptr_t)plan.head) % pack);
            if (plan.shift[i] != want)
                fail_msg("trial %d: input %d (size %zu, address %% 16 = %d) shift %d, expected %d; head %lld "
                         "pack %d",
                         trial, i, size, (int)(address % 16), plan.shift[i], want, (long long)plan.head,
                         pack);
        }
        ew_plan_t bulk;
        const int bulk_access = max_pack * EW_PLAN_ACCESS_PACKS(widest);
        const int takes = ew_plan_make_bulk(&policy, &h200, &call, 1, &bulk);
        assert_int_equal(takes, model_agree(outputs, call.address, call.elem_size, bulk_access));
        for (int k = 0; k < outputs && takes && bulk.head < call.n; ++k)
            assert_int_equal((call.address[k] + (uintptr_t)bulk.head * call.elem_size[k]) %
                                 ((uintptr_t)bulk_access * call.elem_size[k]),
                             0);
        bulk_plans += takes;
    }
    printf("# several outputs: %lld shifted, %lld narrowed, %lld bulk of 200000 calls\n",
           (long long)shifted_plans, (long long)narrowed, (long long)bulk_plans);
    assert_true(shifted_plans > 1000 && narrowed > 1000 && bulk_plans > 1000);
}

/* ew_plan_shape: each shape by the calls of the catalogue that have it, then every size combination
 * against the model. */
static void test_plan_shape(void **state)
{
    (void)state;
    static const struct {
        int count;
        size_t size[5];
        int block_table;
        ew_shape_t shape;
    } cases[] = {
        {3, {1, 1, 1}, 0, EW_SHAPE_BYTES},        /* add i8, u8, bool */
        {2, {1, 1}, 0, EW_SHAPE_BYTES},           /* relu i8, i8 -> u8 */
        {2, {1, 1}, 1, EW_SHAPE_BYTES_TABLE},     /* f8e4m3 -> f8e5m2, fp8 -> i8 */
        {2, {4, 4}, 0, EW_SHAPE_UNARY_SAME},      /* relu f32, i32 -> f32 */
        {2, {2, 2}, 0, EW_SHAPE_UNARY_SAME},      /* f16 -> bf16 */
        {2, {8, 8}, 0, EW_SHAPE_UNARY_SAME},      /* relu f64 */
        {2, {2, 4}, 0, EW_SHAPE_UNARY_HALVING},   /* f32 -> f16 */
        {2, {1, 2}, 0, EW_SHAPE_UNARY_HALVING},   /* f16 -> i8 */
        {2, {4, 8}, 0, EW_SHAPE_UNARY_HALVING},   /* f64 -> f32 */
        {2, {1, 4}, 0, EW_SHAPE_UNARY_NARROWER},  /* f32 -> fp8 */
        {2, {1, 8}, 0, EW_SHAPE_UNARY_NARROWER},  /* f64 -> u8 */
        {2, {2, 8}, 0, EW_SHAPE_UNARY_NARROWER},  /* f64 -> f16 */
        {2, {4, 2}, 0, EW_SHAPE_UNARY_WIDENING},  /* f16 -> f32 */
        {2, {4, 1}, 0, EW_SHAPE_UNARY_WIDENING},  /* u8 -> f32 */
        {2, {8, 1}, 0, EW_SHAPE_UNARY_WIDENING},  /* u8 -> f64 */
        {2, {2, 1}, 0, EW_SHAPE_UNARY_WIDENING},  /* fp8 -> f16 */
        {3, {2, 2, 2}, 0, EW_SHAPE_BINARY_2BYTE}, /* add f16, bf16, i16 */
        {3, {4, 4, 4}, 0, EW_SHAPE_BINARY_WIDE},  /* add f32, i32 */
        {3, {8, 8, 8}, 0, EW_SHAPE_BINARY_WIDE},  /* add f64, i64 */
        {2, {4, 4}, 1, EW_SHAPE_UNARY_SAME},      /* a table per block counts for 1-byte types only */
        {3, {2, 2, 2}, 1, EW_SHAPE_BINARY_2BYTE},
        {4, {2, 2, 2, 2}, 0, EW_SHAPE_BINARY_2BYTE},   /* run-time compiled: add(mul(a, b), c) f16 */
        {5, {1, 1, 1, 1, 1}, 0, EW_SHAPE_BYTES},       /* four i8 inputs */
        {5, {8, 1, 1, 8, 4}, 0, EW_SHAPE_BINARY_WIDE}, /* mixed, the widest 8 bytes */
        {4, {2, 4, 1, 1}, 0, EW_SHAPE_BINARY_WIDE},    /* out narrower than an input: no unary rule */
    };
    uintptr_t address[5] = {0x1000, 0x2000, 0x3000, 0x4000, 0x5000};
    for (size_t k = 0; k < COUNT(cases); ++k) {
        const ew_call_t call = call_of(1000, cases[k].count, address, cases[k].size, cases[k].block_table);
        if (ew_plan_shape(&call) != cases[k].shape) {
            print_error("case %zu: shape %d, want %d\n", k, (int)ew_plan_shape(&call), (int)cases[k].shape);
            fail();
        }
    }
    /* every shape is some call's */
    int seen[EW_SHAPE_COUNT] = {0};
    size_t size[5];
    for (int count = 2; count <= 5; ++count)
        for (int sc = 0; sc < 1 << (2 * count); ++sc)
            for (int table = 0; table <= 1; ++table) {
                for (int i = 0; i < count; ++i)
                    size[i] = sizes[(sc >> (2 * i)) & 3];
                const ew_call_t call = call_of(1000, count, address, size, table);
                const ew_shape_t shape = ew_plan_shape(&call);
                assert_int_equal(shape, model_shape(count, size, table));
                ++seen[shape];
            }
    for (int shape = 0; shape < EW_SHAPE_COUNT; ++shape)
        assert_true(seen[shape] > 0);
}

static int64_t bulk_rule_cases;

/* One call, every pointer at one phase of the access or not: the unforced bulk plan is the forced one
 * where the forced plan has at least the policy's tiles per SM for the call's shape and phase, and n
 * reaches the fewest tiles per SM of any shape at one pack a thread (the planner's early way out); else
 * there is none, and *plan is left alone. */
static void check_bulk_rule(const ew_policy_t *policy, const ew_call_t *call, int other_phases)
{
    ew_plan_t forced = {.pack = -1}, plan = {.pack = -1};
    const int forced_taken = ew_plan_make_bulk(policy, &h200, call, 1, &forced);
    const int taken = ew_plan_make_bulk(policy, &h200, call, 0, &plan);
    size_t widest = 0;
    for (int i = 0; i < call->count; ++i)
        widest = call->elem_size[i] > widest ? call->elem_size[i] : widest;
    const int min = policy->bulk_min_tiles[model_shape(call->count, call->elem_size, call->block_table)]
                                          [other_phases ? EW_OTHER_PHASES : EW_ONE_PHASE];
    int fewest = EW_NEVER;
    for (int shape = 0; shape < EW_SHAPE_COUNT; ++shape)
        for (int phase = EW_ONE_PHASE; phase <= EW_OTHER_PHASES; ++phase) {
            const int tiles = policy->bulk_min_tiles[shape][phase];
            if (tiles != EW_NEVER && (fewest == EW_NEVER || tiles < fewest))
                fewest = tiles;
        }
    const int64_t sm = h200.sm_count;
    const int want = forced_taken && min != EW_NEVER &&
                     call->n >= (int64_t)fewest * sm * EW_PLAN_BLOCK_THREADS * model_max_pack(widest) &&
                     (int64_t)forced.blocks >= (int64_t)min * sm;
    ++bulk_rule_cases;
    if (taken != want) {
        print_error("n = %lld, sizes %zu %zu %zu, table %d, %s: bulk plan %s, want %s (%d tiles per SM, "
                    "the fewest %d; forced: %s, %u tiles)\n",
                    (long long)call->n, call->elem_size[0], call->elem_size[1],
                    call->count == 3 ? call->elem_size[2] : 0, call->block_table,
                    other_phases ? "other phases" : "one phase", taken ? "taken" : "declined",
                    want ? "taken" : "declined", min, fewest, forced_taken ? "taken" : "declined",
                    forced.blocks);
        fail();
    }
    if (taken)
        assert_memory_equal(&plan, &forced, sizeof plan);
    else
        assert_int_equal(plan.pack, -1);
}

/* The bulk rules follow the policy's table: every shape at one phase and at other phases, at random n
 * and at n around the tiles per SM the table gives, on sm_90's table and on random ones (with random
 * tile bytes and wave tiles, which the forced plan follows as well). */
static void test_bulk_follows_policy(void **state)
{
    (void)state;
    static const int min_tiles[] = {EW_NEVER, 0, 1, 2, 8, 24, 100, 192, 1000};
    static const int tile_bytes[] = {1024, 4096, 8192, 16384, 32768};
    static const int wave_tiles[] = {1, 8, 16, 64};
    for (int p = 0; p < 40; ++p) {
        ew_policy_t policy = ew_policy_for(9, 0);
        if (p > 0) {
            for (int shape = 0; shape < EW_SHAPE_COUNT; ++shape)
                for (int phase = EW_ONE_PHASE; phase <= EW_OTHER_PHASES; ++phase)
                    policy.bulk_min_tiles[shape][phase] = min_tiles[next_random() % COUNT(min_tiles)];
            policy.bulk_tile_bytes = tile_bytes[next_random() % COUNT(tile_bytes)];
            policy.bulk_wave_tiles = wave_tiles[next_random() % COUNT(wave_tiles)];
        }
        for (int count = 2; count <= 3; ++count)
            for (int sc = 0; sc < 16; ++sc)
                for (int table = 0; table <= 1; ++table)
                    for (int other_phases = 0; other_phases <= 1; ++other_phases) {
                        /* unary: every pair of sizes; binary: both inputs of out's size */
                        size_t size[3] = {sizes[sc & 3], sizes[sc >> 2], sizes[sc >> 2]};
                        if ((count == 3 && size[0] != size[1]) || (table && (size[0] != 1 || size[1] != 1)))
                            continue;
                        /* out 3 elements into its line; the inputs at its phase, or the first one
                         * element on */
                        uintptr_t address[3];
                        for (int i = 0; i < count; ++i)
                            address[i] = (uintptr_t)(i + 1) * 0x1000000 + 3 * size[i];
                        address[1] += other_phases ? size[1] : 0;
                        const int min = policy.bulk_min_tiles[model_shape(count, size, table)][other_phases];
                        /* the tile at large n and halved: n around the table's tiles of either */
                        ew_plan_t large;
                        ew_call_t call = call_of((int64_t)1 << 34, count, address, size, table);
                        assert_true(ew_plan_make_bulk(&policy, &h200, &call, 1, &large));
                        const int64_t tile = (int64_t)EW_PLAN_BLOCK_THREADS * large.tile_packs * large.pack;
                        int64_t ns[16], *end = ns;
                        for (int halved = 0; halved <= 1 && min > 0; ++halved) {
                            const int64_t t = halved ? tile / 2 : tile, at = large.head + min * 132 * t;
                            *end++ = at - t;
                            *end++ = at - 1;
                            *end++ = at;
                            *end++ = at + 1;
                        }
                        for (int r = 0; r < 6; ++r)
                            *end++ = random_n() % ((int64_t)1 << 36) + 1;
                        for (int64_t *n = ns; n < end; ++n)
                            if (*n >= 1) {
                                call.n = *n;
                                check_bulk_rule(&policy, &call, other_phases);
                            }
                    }
    }
}

/* The chooser: the direct plan when bulk copies are off or declined, the bulk plan otherwise; and on
 * GPUs before sm_90 (no cp.async.bulk) always the direct one. */
static void test_choose(void **state)
{
    (void)state;
    const ew_policy_t sm90 = ew_policy_for(9, 0);
    const ew_policy_t sm80 = ew_policy_for(8, 0);
    ew_policy_t off = sm90, always = sm90, automatic = sm90;
    off.bulk = EW_BULK_OFF;
    always.bulk = EW_BULK_ALWAYS;
    automatic.bulk = EW_BULK_AUTO;
    size_t f32[3] = {4, 4, 4}, f32_f32[2] = {4, 4}, u8[2] = {1, 1};
    uintptr_t aligned[3] = {0x1000, 0x2000, 0x3000}, phases[3] = {0x1000, 0x2001, 0x3000};
    static const int64_t ns[] = {1, 1000, 1 << 20, 1 << 26};
    for (size_t k = 0; k < COUNT(ns); ++k) {
        const ew_call_t call = call_of(ns[k], 3, aligned, f32, 0);
        const ew_plan_t direct = ew_plan_make(&sm90, &h200, &call);
        ew_plan_t plan = ew_plan_choose(&off, &h200, &call);
        assert_memory_equal(&plan, &direct, sizeof plan);
        ew_plan_t bulk;
        plan = ew_plan_choose(&always, &h200, &call);
        assert_true(ew_plan_make_bulk(&sm90, &h200, &call, 1, &bulk));
        assert_memory_equal(&plan, &bulk, sizeof bulk);
        plan = ew_plan_choose(&automatic, &h200, &call);
        int taken = ew_plan_make_bulk(&sm90, &h200, &call, 0, &bulk);
        assert_int_equal(plan.kernel == EW_PLAN_KERNEL_BULK, taken);
        assert_memory_equal(&plan, taken ? &bulk : &direct, sizeof plan);
        /* before sm_90: the direct plan, also for the 1-byte calls that take the bulk one on sm_90 */
        for (int table = 0; table <= 1; ++table) {
            const ew_call_t bytes = call_of(ns[k], 2, phases, u8, table);
            const ew_call_t *calls[2] = {&call, &bytes};
            for (int c = 0; c < 2; ++c) {
                const ew_plan_t sm80_direct = ew_plan_make(&sm80, &h200, calls[c]);
                plan = ew_plan_choose(&sm80, &h200, calls[c]);
                assert_memory_equal(&plan, &sm80_direct, sizeof plan);
            }
        }
        if (ns[k] == 1 << 26) { /* which sm_90 runs in bulk */
            const ew_call_t bytes = call_of(ns[k], 2, phases, u8, 0);
            assert_int_equal(ew_plan_choose(&sm90, &h200, &bytes).kernel, EW_PLAN_KERNEL_BULK);
        }
    }
    /* 1-byte types at one phase: the direct kernel's 16-byte accesses, but the bulk kernel for ops
     * with a table per block */
    ew_call_t call = call_of(1 << 26, 2, aligned, u8, 0);
    ew_plan_t bytes = ew_plan_choose(&sm90, &h200, &call);
    assert_int_equal(bytes.kernel, EW_PLAN_KERNEL_ALIGNED);
    assert_int_equal(bytes.access_packs, 2);
    call.block_table = 1;
    bytes = ew_plan_choose(&sm90, &h200, &call);
    assert_int_equal(bytes.kernel, EW_PLAN_KERNEL_BULK);
    /* a unary op the bulk kernel leaves to the direct one, even at the largest n */
    call = call_of(1 << 26, 2, aligned, f32_f32, 0);
    ew_plan_t relu = ew_plan_choose(&sm90, &h200, &call);
    assert_int_equal(relu.kernel, EW_PLAN_KERNEL_ALIGNED);
    assert_int_equal(relu.pack, 4);
}

/* ---- the policy ---- */

/* sm_90's bulk_min_tiles, written out: tiles per SM from which each shape takes the bulk-copy kernel,
 * at one phase and at other phases (docs/design.md has the measurements). */
static const int sm90_min_tiles[EW_SHAPE_COUNT][2] = {
    [EW_SHAPE_BYTES] = {EW_NEVER, 1},
    [EW_SHAPE_BYTES_TABLE] = {24, 1},
    [EW_SHAPE_UNARY_SAME] = {EW_NEVER, 192},
    [EW_SHAPE_UNARY_HALVING] = {EW_NEVER, 24},
    [EW_SHAPE_UNARY_NARROWER] = {EW_NEVER, EW_NEVER},
    [EW_SHAPE_UNARY_WIDENING] = {24, 1},
    [EW_SHAPE_BINARY_2BYTE] = {24, 24},
    [EW_SHAPE_BINARY_WIDE] = {24, 192},
};

/* Every figure of two policies the same (their names aside). */
static void assert_same_figures(const ew_policy_t *a, const ew_policy_t *b)
{
    assert_int_equal(a->out_align, b->out_align);
    assert_int_equal(a->shifted_waves, b->shifted_waves);
    assert_int_equal(a->blocks_waves, b->blocks_waves);
    assert_int_equal(a->dependent_launch, b->dependent_launch);
    assert_int_equal(a->bulk, b->bulk);
    assert_int_equal(a->bulk_tile_bytes, b->bulk_tile_bytes);
    assert_int_equal(a->bulk_wave_tiles, b->bulk_wave_tiles);
    assert_int_equal(a->rows_tile_packs, b->rows_tile_packs);
    for (int shape = 0; shape < EW_SHAPE_COUNT; ++shape)
        for (int phase = EW_ONE_PHASE; phase <= EW_OTHER_PHASES; ++phase)
            assert_int_equal(a->bulk_min_tiles[shape][phase], b->bulk_min_tiles[shape][phase]);
}

/* A built-in policy's figures within the ranges src/plan/policy.h gives them, as the plan assumes (the head
 * fits one block of 256 threads only for out_align <= 128). EW_BULK_ALWAYS comes from the environment
 * alone. */
static void assert_valid_policy(const ew_policy_t *policy)
{
    assert_non_null(policy->name);
    assert_true(policy->out_align >= 1 && policy->out_align <= 128);
    assert_int_equal(policy->out_align & (policy->out_align - 1), 0);
    assert_true(policy->shifted_waves >= 1);
    assert_true(policy->blocks_waves >= 1);
    assert_true(policy->dependent_launch == 0 || policy->dependent_launch == 1);
    assert_true(policy->bulk == EW_BULK_OFF || policy->bulk == EW_BULK_AUTO);
    assert_true(policy->bulk_tile_bytes >= 1024 && policy->bulk_tile_bytes <= 32768);
    assert_true(policy->bulk_wave_tiles >= 1);
    assert_true(policy->rows_tile_packs >= 512 && policy->rows_tile_packs <= 4096);
    assert_int_equal(policy->rows_tile_packs & (policy->rows_tile_packs - 1), 0);
    for (int shape = 0; shape < EW_SHAPE_COUNT; ++shape)
        for (int phase = EW_ONE_PHASE; phase <= EW_OTHER_PHASES; ++phase)
            assert_true(policy->bulk_min_tiles[shape][phase] == EW_NEVER ||
                        policy->bulk_min_tiles[shape][phase] >= 0);
}

/* Hopper's policy, the one measured, figure by figure: a change of any of them fails here, where the
 * spot checks above would only fail on the plans it changes. */
static void test_policy_sm90(void **state)
{
    (void)state;
    const ew_policy_t sm90 = ew_policy_for(9, 0);
    assert_valid_policy(&sm90);
    assert_non_null(strstr(sm90.name, "sm_90"));
    assert_null(strstr(sm90.name, "untuned"));
    assert_int_equal(sm90.out_align, 128);
    assert_int_equal(sm90.shifted_waves, 32);
    assert_int_equal(sm90.blocks_waves, 4);
    assert_int_equal(sm90.dependent_launch, 1);
    assert_int_equal(sm90.bulk, EW_BULK_AUTO);
    assert_int_equal(sm90.bulk_tile_bytes, 8192);
    assert_int_equal(sm90.bulk_wave_tiles, 8);
    assert_int_equal(sm90.rows_tile_packs, 1024);
    for (int shape = 0; shape < EW_SHAPE_COUNT; ++shape)
        for (int phase = EW_ONE_PHASE; phase <= EW_OTHER_PHASES; ++phase)
            if (sm90.bulk_min_tiles[shape][phase] != sm90_min_tiles[shape][phase]) {
                print_error("shape %d, phase %d: %d tiles per SM, want %d\n", shape, phase,
                            sm90.bulk_min_tiles[shape][phase], sm90_min_tiles[shape][phase]);
                fail();
            }
}

/* Turing, Ampere and Ada (cc 7.5 to 8.9), untuned: no cp.async.bulk and no programmatic dependent
 * launch, so bulk copies off and plain stream order, with sm_90's grid figures; the minor version
 * does not matter. */
static void test_policy_before_sm90(void **state)
{
    (void)state;
    static const int cc[][2] = {{7, 5}, {8, 0}, {8, 6}, {8, 7}, {8, 9}};
    const ew_policy_t sm90 = ew_policy_for(9, 0);
    for (size_t k = 0; k < COUNT(cc); ++k) {
        const ew_policy_t policy = ew_policy_for(cc[k][0], cc[k][1]);
        assert_valid_policy(&policy);
        assert_int_equal(policy.bulk, EW_BULK_OFF);
        assert_int_equal(policy.dependent_launch, 0);
        assert_non_null(strstr(policy.name, "untuned"));
        assert_int_equal(policy.out_align, sm90.out_align);
        assert_int_equal(policy.shifted_waves, sm90.shifted_waves);
    }
}

/* Blackwell and later (cc 10.0, 12.0), untuned: sm_90's figures as they are, bulk copies and dependent
 * launches included (these GPUs have both), under a name that says so. */
static void test_policy_after_sm90(void **state)
{
    (void)state;
    static const int cc[][2] = {{10, 0}, {10, 3}, {12, 0}};
    const ew_policy_t sm90 = ew_policy_for(9, 0);
    for (size_t k = 0; k < COUNT(cc); ++k) {
        const ew_policy_t policy = ew_policy_for(cc[k][0], cc[k][1]);
        assert_valid_policy(&policy);
        assert_same_figures(&policy, &sm90);
        assert_int_equal(policy.bulk, EW_BULK_AUTO);
        assert_int_equal(policy.dependent_launch, 1);
        assert_non_null(strstr(policy.name, "untuned"));
        assert_string_not_equal(policy.name, sm90.name);
    }
}

static const char *const environment[] = {"EW_BULK_COPY", "EW_BULK_TILE_BYTES", "EW_ROWS_TILE_PACKS",
                                          "EW_DEPENDENT_LAUNCH"};

static void clear_environment(void)
{
    for (size_t i = 0; i < COUNT(environment); ++i)
        assert_int_equal(unsetenv(environment[i]), 0);
}

/* The policy of cc major.0 after ew_policy_apply_environment with one variable set (name NULL: none);
 * the environment cleared before and after. */
static ew_policy_t with_environment(int major, const char *name, const char *value)
{
    clear_environment();
    if (name != NULL)
        assert_int_equal(setenv(name, value, 1), 0);
    ew_policy_t policy = ew_policy_for(major, 0);
    ew_policy_apply_environment(&policy);
    clear_environment();
    return policy;
}

/* An integer override of sm_90's policy: each value in range sets the int field at `field` (its offset
 * in ew_policy_t) and nothing else; each value out of range leaves the policy as built. */
static void check_int_override(const char *name, size_t field, const int in_range[], size_t in_count,
                               const char *const out_of_range[], size_t out_count)
{
    const ew_policy_t sm90 = ew_policy_for(9, 0);
    for (size_t k = 0; k < in_count; ++k) {
        char value[16];
        snprintf(value, sizeof value, "%d", in_range[k]);
        ew_policy_t want = sm90;
        memcpy((char *)&want + field, &in_range[k], sizeof in_range[k]);
        const ew_policy_t got = with_environment(9, name, value);
        assert_same_figures(&got, &want);
    }
    for (size_t k = 0; k < out_count; ++k) {
        const ew_policy_t got = with_environment(9, name, out_of_range[k]);
        assert_same_figures(&got, &sm90);
    }
}

/* The environment's overrides: each changes its own figure, and only within its range; bulk copies and
 * dependent launches are never turned on where the policy has them off (the GPU lacks them). */
static void test_policy_environment(void **state)
{
    (void)state;
    const ew_policy_t sm90 = ew_policy_for(9, 0), sm80 = ew_policy_for(8, 0);
    ew_policy_t got, want;

    /* nothing set: the policy as built */
    got = with_environment(9, NULL, NULL);
    assert_same_figures(&got, &sm90);
    assert_ptr_equal(got.name, sm90.name);
    got = with_environment(8, NULL, NULL);
    assert_same_figures(&got, &sm80);

    /* EW_BULK_COPY: 0 turns bulk copies off, always on at every n; other values leave the policy's */
    want = sm90;
    want.bulk = EW_BULK_OFF;
    got = with_environment(9, "EW_BULK_COPY", "0");
    assert_same_figures(&got, &want);
    want.bulk = EW_BULK_ALWAYS;
    got = with_environment(9, "EW_BULK_COPY", "always");
    assert_same_figures(&got, &want);
    static const char *const not_a_mode[] = {"garbage", ""};
    for (size_t k = 0; k < COUNT(not_a_mode); ++k) {
        got = with_environment(9, "EW_BULK_COPY", not_a_mode[k]);
        assert_same_figures(&got, &sm90);
    }
    /* before sm_90, always does not turn them on, and 0 leaves them off */
    got = with_environment(8, "EW_BULK_COPY", "always");
    assert_same_figures(&got, &sm80);
    got = with_environment(8, "EW_BULK_COPY", "0");
    assert_same_figures(&got, &sm80);

    /* EW_BULK_TILE_BYTES: from 1024 to 32768 bytes, else the policy's */
    static const int tiles_in_range[] = {1024, 4096, 16384, 32768};
    static const char *const tiles_out_of_range[] = {"1023", "32769", "65536", "0", "-8192", "garbage", ""};
    check_int_override("EW_BULK_TILE_BYTES", offsetof(ew_policy_t, bulk_tile_bytes), tiles_in_range,
                       COUNT(tiles_in_range), tiles_out_of_range, COUNT(tiles_out_of_range));

    /* EW_ROWS_TILE_PACKS: a power of two from 512 to 4096, else the policy's */
    static const int rows_in_range[] = {512, 1024, 2048, 4096};
    static const char *const rows_out_of_range[] = {"256", "768", "1536", "8192", "0", "-1024", "garbage", ""};
    check_int_override("EW_ROWS_TILE_PACKS", offsetof(ew_policy_t, rows_tile_packs), rows_in_range,
                       COUNT(rows_in_range), rows_out_of_range, COUNT(rows_out_of_range));

    /* EW_DEPENDENT_LAUNCH=0 turns dependent launches off; nothing turns them on before sm_90 */
    want = sm90;
    want.dependent_launch = 0;
    got = with_environment(9, "EW_DEPENDENT_LAUNCH", "0");
    assert_same_figures(&got, &want);
    static const char *const not_off[] = {"1", "garbage", ""};
    for (size_t k = 0; k < COUNT(not_off); ++k) {
        got = with_environment(9, "EW_DEPENDENT_LAUNCH", not_off[k]);
        assert_same_figures(&got, &sm90);
        got = with_environment(8, "EW_DEPENDENT_LAUNCH", not_off[k]);
        assert_same_figures(&got, &sm80);
    }

    /* all three at once, on sm_100: each its own */
    clear_environment();
    assert_int_equal(setenv("EW_BULK_COPY", "always", 1), 0);
    assert_int_equal(setenv("EW_BULK_TILE_BYTES", "16384", 1), 0);
    assert_int_equal(setenv("EW_DEPENDENT_LAUNCH", "0", 1), 0);
    got = ew_policy_for(10, 0);
    const char *name = got.name;
    ew_policy_apply_environment(&got);
    clear_environment();
    want = ew_policy_for(10, 0);
    want.bulk = EW_BULK_ALWAYS;
    want.bulk_tile_bytes = 16384;
    want.dependent_launch = 0;
    assert_same_figures(&got, &want);
    assert_ptr_equal(got.name, name);
}

static int report_cases(void **state)
{
    (void)state;
    printf("# %llu plans checked against the model, %llu of them shifted, %llu out-shifted; %lld bulk plans "
           "checked against the policy's rules\n",
           (unsigned long long)cases, (unsigned long long)shifted_cases,
           (unsigned long long)out_shifted_cases, (long long)bulk_rule_cases);
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
        cmocka_unit_test(test_other_grid_policies),
        cmocka_unit_test(test_bulk),
        cmocka_unit_test(test_bulk_all_phases),
        cmocka_unit_test(test_bulk_many_inputs),
        cmocka_unit_test(test_several_outputs),
        cmocka_unit_test(test_plan_shape),
        cmocka_unit_test(test_bulk_follows_policy),
        cmocka_unit_test(test_choose),
        cmocka_unit_test(test_policy_sm90),
        cmocka_unit_test(test_policy_before_sm90),
        cmocka_unit_test(test_policy_after_sm90),
        cmocka_unit_test(test_policy_environment),
    };
    return cmocka_run_group_tests(tests, NULL, report_cases);
}
