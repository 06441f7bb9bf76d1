/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every catalogue entry on the GPU against the independent CPU reference (tests/ref), bit for bit,
 * as docs/semantics.md defines the results:
 *   - n swept over {1, 2, 3, 7, 8, 9, 15, 16, 17, 255, 256, 257, 4095, 65537, 2^20 + 3} at offset 0,
 *     each n in its own exactly sized allocation (guards right after the last element);
 *   - every pointer independently at every element offset within 16 bytes, at n = 257, 4095 and 12289
 *     (all combinations, or for three 1-byte pointers a pairwise-covering subset plus all equal ones);
 *   - in place (out == an input) for every non-cast entry and every cast between equal sizes;
 *   - scale_add with several alphas, one of which makes fma differ from multiply-then-add;
 *   - n = 0 with NULL pointers: EW_SUCCESS and nothing enqueued;
 *   - add f16, mul f32 and scale_add f64: one call of 128 MiB an operand (a plan of its own, below);
 *   - fixed inputs at every position of calls of several n and pointer offsets (patterns, below): every
 *     row of the edge-value table of docs/semantics.md, read from the document, against its stated
 *     output; float scale_add with NaN, +-0, +-inf, huge and tiny alphas on every pair of special
 *     inputs (NaN alphas also against the rule of docs/semantics.md); bool inputs with bytes other than
 *     0 and 1 (2, 0x40, 0x80, 0xFF) for every op and cast that reads bool.
 * Outputs start poisoned (0xA5, and 0x5A where an expected element is 0xA5...), guard bytes around every
 * buffer are checked, inputs must come back unchanged.
 * EW_TEST_SCALE=small does about a tenth of the work (for compute-sanitizer); EW_TEST_SEED changes the
 * inputs. An argument runs only the test of that name (e.g. "edge table: cast").
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>
#include <unistd.h>

#include "gpu_util.h"
#include "ref/ref.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

enum { MAX_ALPHAS = 8, DTYPE_FIRST = EW_BOOL, DTYPE_LAST = EW_F8E8M0 }; /* the catalogue's dtypes */

static const int64_t sweep_n_full[] = {1,  2,   3,   7,   8,    9,     15,           16,
                                       17, 255, 256, 257, 4095, 65537, (1 << 20) + 3};
static const int64_t sweep_n_small[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 255, 256, 257, 4095};
static const int64_t offset_n_full[] = {257, 4095, 12289};
static const int64_t offset_n_small[] = {257};
/* 5: all head at misaligned offsets (the bulk kernel forced: one block, no tile) */
static const int64_t in_place_n_full[] = {5, 4095, 65537};
static const int64_t in_place_n_small[] = {5, 4095};

typedef struct {
    ew_op_t op;
    ew_dtype_t out, in; /* both the op's dtype except for casts */
    char name[40];
} entry_t;

static entry_t entries[5 * (DTYPE_LAST - DTYPE_FIRST + 1) * (DTYPE_LAST - DTYPE_FIRST + 1)];
static size_t entry_count;

static int arity(const entry_t *e) { return e->op == EW_OP_RELU || e->op == EW_OP_CAST ? 1 : 2; }

static int is_float(ew_dtype_t d)
{
    return d == EW_F16 || d == EW_BF16 || d == EW_F32 || d == EW_F64 || d == EW_F8E4M3 || d == EW_F8E5M2;
}

/* The catalogue as the library reports it. */
static void collect_entries(void)
{
    static const ew_op_t ops[] = {EW_OP_ADD, EW_OP_MUL, EW_OP_RELU, EW_OP_SCALE_ADD};
    for (size_t k = 0; k < COUNT(ops); ++k)
        for (int d = DTYPE_FIRST; d <= DTYPE_LAST; ++d)
            if (ew_is_supported(ops[k], (ew_dtype_t)d, (ew_dtype_t)d)) {
                entry_t *e = &entries[entry_count++];
                *e = (entry_t){ops[k], (ew_dtype_t)d, (ew_dtype_t)d, ""};
                snprintf(e->name, sizeof e->name, "%s %s", ref_op_name(ops[k]), ew_dtype_name((ew_dtype_t)d));
            }
    for (int in = DTYPE_FIRST; in <= DTYPE_LAST; ++in)
        for (int out = DTYPE_FIRST; out <= DTYPE_LAST; ++out)
            if (ew_is_supported(EW_OP_CAST, (ew_dtype_t)out, (ew_dtype_t)in)) {
                entry_t *e = &entries[entry_count++];
                *e = (entry_t){EW_OP_CAST, (ew_dtype_t)out, (ew_dtype_t)in, ""};
                snprintf(e->name, sizeof e->name, "cast %s->%s", ew_dtype_name((ew_dtype_t)in),
                         ew_dtype_name((ew_dtype_t)out));
            }
}

/* Integer alpha fits the dtype (the library's rule; bool: 0 or 1). */
static int alpha_fits(ew_dtype_t d, double alpha)
{
    double lo, hi_exclusive;
    switch (d) {
    case EW_BOOL:
        lo = 0;
        hi_exclusive = 2;
        break;
    case EW_I8:
        lo = -128;
        hi_exclusive = 128;
        break;
    case EW_U8:
        lo = 0;
        hi_exclusive = 256;
        break;
    case EW_I16:
        lo = -32768;
        hi_exclusive = 32768;
        break;
    case EW_I32:
        lo = -2147483648.0;
        hi_exclusive = 2147483648.0;
        break;
    default:
        lo = -9223372036854775808.0;
        hi_exclusive = 9223372036854775808.0;
        break;
    }
    return alpha >= lo && alpha < hi_exclusive && alpha == floor(alpha);
}

/* scale_add alphas, the most telling first (small scale keeps two); one (unused) for other ops.
 * Floats: 1/3 makes fma differ from multiply-then-add; 1e300 is +inf as a float alpha.
 * Integers: the dtype's extreme alpha wraps hardest. */
static int alphas_for(const entry_t *e, double alphas[MAX_ALPHAS])
{
    int count = 0;
    if (e->op != EW_OP_SCALE_ADD) {
        alphas[count++] = 0.0;
        return count;
    }
    if (e->out == EW_BOOL) {
        alphas[count++] = 1.0;
        alphas[count++] = 0.0;
    } else if (is_float(e->out)) {
        static const double list[] = {1.0 / 3.0, -3.25, 0.5, 1e30, 1e300};
        for (size_t k = 0; k < COUNT(list); ++k)
            alphas[count++] = list[k];
    } else {
        double extreme = e->out == EW_U8    ? 255.0
                         : e->out == EW_I8  ? -128.0
                         : e->out == EW_I16 ? -32768.0
                         : e->out == EW_I32 ? -2147483648.0
                                            : -9223372036854775808.0;
        const double list[] = {-3.0, 127.0, 0.0, 1.0, extreme};
        for (size_t k = 0; k < COUNT(list); ++k)
            if (alpha_fits(e->out, list[k]))
                alphas[count++] = list[k];
    }
    if (gu_small_scale() && count > 2)
        count = 2;
    return count;
}

static ew_status_t call_entry(const entry_t *e, double alpha, int64_t n, void *out, const void *a,
                              const void *b, cudaStream_t stream)
{
    ew_handle_t h = gu_handle();
    switch (e->op) {
    case EW_OP_ADD:
    case EW_OP_MUL: return ew_binary(h, e->op, e->out, n, out, a, b, stream);
    case EW_OP_RELU: return ew_unary(h, e->op, e->out, n, out, a, stream);
    case EW_OP_CAST: return ew_cast(h, e->out, e->in, n, out, a, stream);
    case EW_OP_SCALE_ADD: return ew_scale_add(h, e->out, alpha, n, out, a, b, stream);
    default: break; /* the scaled casts: tests/device/test_scaled_gpu.c */
    }
    return EW_ERROR_NOT_SUPPORTED;
}

static void reference(const entry_t *e, double alpha, int64_t n, void *out, const void *a, const void *b)
{
    switch (e->op) {
    case EW_OP_ADD:
    case EW_OP_MUL: ref_binary(e->op, e->out, n, out, a, b); break;
    case EW_OP_RELU: ref_unary(e->op, e->out, n, out, a); break;
    case EW_OP_CAST: ref_cast(e->out, e->in, n, out, a); break;
    case EW_OP_SCALE_ADD: ref_scale_add(e->out, alpha, n, out, a, b); break;
    default: break; /* the scaled casts: tests/device/test_scaled_gpu.c */
    }
}

static const unsigned char *element(const void *base, ew_dtype_t dtype, int64_t index)
{
    return base == NULL ? NULL : (const unsigned char *)base + (size_t)index * ew_dtype_size(dtype);
}

/* Poison the output, run the call on the default stream, check it; once more with the other poison
 * when some expected element equals the poison (it could then pass without having been written). */
static void run_and_check(const entry_t *e, double alpha, int64_t n, gu_buffer_t *out, int out_offset,
                          const gu_buffer_t *a, int a_offset, const gu_buffer_t *b, int b_offset,
                          const void *expected, const void *a_host, const void *b_host, const char *what)
{
    static const uint8_t poisons[] = {GU_POISON, GU_POISON_ALT};
    gu_inputs_t inputs = {arity(e), {e->in, e->in}, {a_host, b_host}};
    for (size_t p = 0; p < COUNT(poisons); ++p) {
        gu_buffer_poison(out, poisons[p]);
        ew_status_t status = call_entry(e, alpha, n, gu_at(out, out_offset), gu_at(a, a_offset),
                                        b != NULL ? gu_at(b, b_offset) : NULL, NULL);
        if (status != EW_SUCCESS)
            GU_FAIL("%s: returned %s: %s", what, ew_status_string(status), ew_get_last_error_message());
        if (GU_CHECK_OUTPUT(out, out_offset, n, expected, &inputs, what) == 0)
            break;
    }
}

static void describe(char *text, size_t size, const entry_t *e, double alpha, int64_t n, int out_offset,
                     int a_offset, int b_offset, const char *extra)
{
    int used = snprintf(text, size, "%s n=%" PRId64 " offsets out+%d %s+%d", e->name, n, out_offset,
                        arity(e) == 1 ? "x" : "a", a_offset);
    if (arity(e) == 2 && used > 0 && (size_t)used < size)
        used += snprintf(text + used, size - (size_t)used, " b+%d", b_offset);
    if (e->op == EW_OP_SCALE_ADD && used > 0 && (size_t)used < size)
        used += snprintf(text + used, size - (size_t)used, " alpha=%.17g", alpha);
    if (extra != NULL && used > 0 && (size_t)used < size)
        snprintf(text + used, size - (size_t)used, " %s", extra);
}

/* What one entry's test works on: random inputs over the largest n plus 16 bytes, and the reference
 * for each alpha over all of them (element i depends on input element i only, so any n at offset 0
 * uses a prefix, and a unary call at input offset k uses the expected array from k on). */
typedef struct {
    const entry_t *e;
    int small;
    double alphas[MAX_ALPHAS];
    int alpha_count;
    int64_t region;              /* elements in the host arrays */
    const void *a_host, *b_host; /* shared random inputs (read only) */
    void *expected[MAX_ALPHAS];
    void *scratch; /* expected values of one binary call at shifted offsets */
} work_t;

/* The reference over many elements, split over threads (the host side dominates the run time). */
typedef struct {
    const entry_t *e;
    double alpha;
    int64_t n;
    void *out;
    const void *a, *b;
} reference_job_t;

static void *reference_thread(void *arg)
{
    const reference_job_t *job = arg;
    reference(job->e, job->alpha, job->n, job->out, job->a, job->b);
    return NULL;
}

static void reference_parallel(const entry_t *e, double alpha, int64_t n, void *out, const void *a,
                               const void *b)
{
    enum { MAX_THREADS = 16, MIN_CHUNK = 1 << 15 };
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = (int)(cores < 1 ? 1 : cores > MAX_THREADS ? MAX_THREADS : cores);
    if (n / MIN_CHUNK < threads)
        threads = (int)(n / MIN_CHUNK) > 1 ? (int)(n / MIN_CHUNK) : 1;
    pthread_t ids[MAX_THREADS];
    int running[MAX_THREADS] = {0};
    reference_job_t jobs[MAX_THREADS];
    for (int t = 0; t < threads; ++t) {
        int64_t begin = n * t / threads, end = n * (t + 1) / threads;
        jobs[t] = (reference_job_t){e,
                                    alpha,
                                    end - begin,
                                    (unsigned char *)out + (size_t)begin * ew_dtype_size(e->out),
                                    element(a, e->in, begin),
                                    element(b, e->in, begin)};
    }
    for (int t = 0; t + 1 < threads; ++t)
        running[t] = pthread_create(&ids[t], NULL, reference_thread, &jobs[t]) == 0;
    for (int t = 0; t < threads; ++t)
        if (!running[t])
            reference_thread(&jobs[t]); /* the last chunk, and any no thread could be had for */
    for (int t = 0; t + 1 < threads; ++t)
        if (running[t])
            pthread_join(ids[t], NULL);
}

/* Random inputs per input dtype, made once and shared by every entry reading that dtype: generating
 * them per entry would cost more than all the GPU work. */
static const void *random_inputs(ew_dtype_t dtype, int which, int64_t elems)
{
    static void *cache[DTYPE_LAST + 1][2];
    static int64_t cache_elems[DTYPE_LAST + 1][2];
    if (cache[dtype][which] == NULL || cache_elems[dtype][which] < elems) {
        free(cache[dtype][which]);
        cache[dtype][which] = malloc((size_t)elems * ew_dtype_size(dtype));
        if (cache[dtype][which] == NULL)
            GU_FAIL("out of host memory");
        cache_elems[dtype][which] = elems;
        gu_rng_t rng = gu_rng(gu_seed() ^ ((uint64_t)(dtype * 2 + which + 1) * UINT64_C(0x9E3779B97F4A7C15)));
        gu_fill_random(dtype, elems, cache[dtype][which], &rng);
    }
    return cache[dtype][which];
}

static void prepare_work(work_t *w, const entry_t *e, int64_t max_n)
{
    w->e = e;
    w->small = gu_small_scale();
    w->alpha_count = alphas_for(e, w->alphas);
    w->region = max_n + gu_offset_count(e->in);
    size_t out_size = ew_dtype_size(e->out);
    /* one size for every dtype (16 spare elements fit any offset), so the cache is made once */
    w->a_host = random_inputs(e->in, 0, max_n + GU_MAX_OFFSET_BYTES);
    w->b_host = arity(e) == 2 ? random_inputs(e->in, 1, max_n + GU_MAX_OFFSET_BYTES) : NULL;
    for (int k = 0; k < w->alpha_count; ++k) {
        w->expected[k] = gu_host_alloc((size_t)w->region * out_size);
        reference_parallel(e, w->alphas[k], w->region, w->expected[k], w->a_host, w->b_host);
    }
    w->scratch = gu_host_alloc((size_t)w->region * out_size);
}

/* Expected output of a call reading a from element a_offset and b from b_offset of the host arrays. */
static const void *expected_at(work_t *w, int alpha_index, int64_t n, int a_offset, int b_offset)
{
    const entry_t *e = w->e;
    if (arity(e) == 1 || a_offset == b_offset)
        return element(w->expected[alpha_index], e->out, a_offset);
    reference(e, w->alphas[alpha_index], n, w->scratch, element(w->a_host, e->in, a_offset),
              element(w->b_host, e->in, b_offset));
    return w->scratch;
}

/* After a sweep: the inputs (b may be NULL) must be as loaded; then the buffers go. */
static void check_inputs_and_free(gu_buffer_t *out, gu_buffer_t *a, gu_buffer_t *b, const char *what)
{
    GU_CHECK_UNCHANGED(a, what);
    if (b != NULL)
        GU_CHECK_UNCHANGED(b, what);
    gu_buffer_free(out);
    gu_buffer_free(a);
    if (b != NULL)
        gu_buffer_free(b);
}

/* ---- n sweep at offset 0, each n in its own exactly sized buffers ---- */

/* One n at offset 0 in buffers of exactly n elements (guards right after the last), each alpha against
 * its expected output; then the inputs (b_host NULL for unary ops) must come back untouched. */
static void call_exactly_sized(const entry_t *e, int64_t n, const void *a_host, const void *b_host,
                               const double *alphas, int alpha_count, void *const *expected,
                               const char *label)
{
    gu_buffer_t *a = gu_buffer_new(e->in, n), *b = NULL, *out = gu_buffer_new(e->out, n);
    gu_buffer_load(a, a_host, gu_buffer_region_elems(a));
    if (b_host != NULL) {
        b = gu_buffer_new(e->in, n);
        gu_buffer_load(b, b_host, gu_buffer_region_elems(b));
    }
    char what[256], extra[96];
    snprintf(extra, sizeof extra, "(%s)", label);
    for (int j = 0; j < alpha_count; ++j) {
        describe(what, sizeof what, e, alphas[j], n, 0, 0, 0, extra);
        run_and_check(e, alphas[j], n, out, 0, a, 0, b, 0, expected[j], a_host, b_host, what);
    }
    snprintf(extra, sizeof extra, "(%s: inputs must be untouched)", label);
    describe(what, sizeof what, e, 0, n, 0, 0, 0, extra);
    check_inputs_and_free(out, a, b, what);
}

static void sweep_n(work_t *w)
{
    const int64_t *list = w->small ? sweep_n_small : sweep_n_full;
    size_t count = w->small ? COUNT(sweep_n_small) : COUNT(sweep_n_full);
    for (size_t k = 0; k < count; ++k)
        call_exactly_sized(w->e, list[k], w->a_host, w->b_host, w->alphas, w->alpha_count, w->expected,
                           "n sweep");
}

/* ---- every offset of every pointer ---- */

typedef struct {
    int8_t out, a, b;
} combo_t;

static int compare_combos(const void *x, const void *y)
{
    const combo_t *p = x, *q = y;
    if (p->a != q->a)
        return p->a - q->a;
    if (p->b != q->b)
        return p->b - q->b;
    return p->out - q->out;
}

typedef struct {
    unsigned char seen[16][16][16];
    combo_t *combos;
    size_t count;
} combo_set_t;

static void add_combo(combo_set_t *set, int out, int a, int b)
{
    if (!set->seen[out][a][b]) {
        set->seen[out][a][b] = 1;
        set->combos[set->count++] = (combo_t){(int8_t)out, (int8_t)a, (int8_t)b};
    }
}

/* Offset combinations for counts c[0] (out), c[1] (a or x), c[2] (b; 1 for unary calls):
 * full scale: all of them up to 1024, else (three 1-byte pointers) every pair of values of every
 * two pointers (out, a, (out + 3a) mod 16: 3 is invertible mod 16); small scale: every value of
 * every pointer (i -> (m i + k) mod c is a bijection for odd m and c a power of two).
 * Always: every all-equal combination (k, k, k), the one that takes the vector path with a head. */
static size_t make_combos(const int c[3], int small, combo_t *combos)
{
    static combo_set_t set;
    memset(set.seen, 0, sizeof set.seen);
    set.combos = combos;
    set.count = 0;
    int product = c[0] * c[1] * c[2];
    int widest = c[0] > c[1] ? (c[0] > c[2] ? c[0] : c[2]) : (c[1] > c[2] ? c[1] : c[2]);
    int narrowest = c[0] < c[1] ? (c[0] < c[2] ? c[0] : c[2]) : (c[1] < c[2] ? c[1] : c[2]);
    if (!small && product <= 1024) {
        for (int o = 0; o < c[0]; ++o)
            for (int x = 0; x < c[1]; ++x)
                for (int y = 0; y < c[2]; ++y)
                    add_combo(&set, o, x, y);
    } else if (!small) {
        for (int o = 0; o < c[0]; ++o)
            for (int x = 0; x < c[1]; ++x)
                add_combo(&set, o, x, (o + 3 * x) % c[2]);
    } else {
        for (int i = 0; i < widest; ++i)
            add_combo(&set, i % c[0], (3 * i + 1) % c[1], (5 * i + 2) % c[2]);
    }
    int all_equal = c[2] == 1 ? (c[0] < c[1] ? c[0] : c[1]) : narrowest;
    for (int k = 0; k < all_equal; ++k)
        add_combo(&set, k, k, c[2] == 1 ? 0 : k);
    qsort(combos, set.count, sizeof *combos, compare_combos);
    return set.count;
}

static void sweep_offsets(work_t *w)
{
    const entry_t *e = w->e;
    const int64_t *list = w->small ? offset_n_small : offset_n_full;
    size_t list_count = w->small ? COUNT(offset_n_small) : COUNT(offset_n_full);
    int binary = arity(e) == 2;
    int counts[3] = {gu_offset_count(e->out), gu_offset_count(e->in), binary ? gu_offset_count(e->in) : 1};
    static combo_t combos[16 * 16 * 16];
    size_t combo_count = make_combos(counts, w->small, combos);
    char what[256];
    for (size_t k = 0; k < list_count; ++k) {
        int64_t n = list[k];
        gu_buffer_t *a = gu_buffer_new(e->in, n), *b = NULL, *out = gu_buffer_new(e->out, n);
        gu_buffer_load(a, w->a_host, gu_buffer_region_elems(a));
        if (binary) {
            b = gu_buffer_new(e->in, n);
            gu_buffer_load(b, w->b_host, gu_buffer_region_elems(b));
        }
        int input_pairs = -1;
        const void *expected = NULL;
        for (size_t i = 0; i < combo_count; ++i) {
            const combo_t *c = &combos[i];
            /* alphas take turns by input offsets; combos are sorted so each pair is computed once */
            if (i == 0 || c->a != combos[i - 1].a || c->b != combos[i - 1].b) {
                ++input_pairs;
                expected = expected_at(w, input_pairs % w->alpha_count, n, c->a, c->b);
            }
            int alpha_index = input_pairs % w->alpha_count;
            describe(what, sizeof what, e, w->alphas[alpha_index], n, c->out, c->a, c->b, "(offset sweep)");
            run_and_check(e, w->alphas[alpha_index], n, out, c->out, a, c->a, b, c->b, expected,
                          element(w->a_host, e->in, c->a), element(w->b_host, e->in, c->b), what);
        }
        describe(what, sizeof what, e, 0, n, 0, 0, 0, "(offset sweep: inputs must be untouched)");
        check_inputs_and_free(out, a, b, what);
    }
}

/* ---- in place ---- */

typedef enum { ALIAS_X, ALIAS_A, ALIAS_B, ALIAS_AB } alias_t;

/* One in-place call: the aliased buffer holds the input data, is both input and output at `offset`;
 * a non-aliased second input sits at other_offset in its own buffer. */
static void in_place_call(work_t *w, int64_t n, alias_t alias, int offset, int other_offset, int alpha_index)
{
    static const char *const names[] = {"out == x", "out == a", "out == b", "out == a == b"};
    const entry_t *e = w->e;
    double alpha = w->alphas[alpha_index];
    const void *io_data = alias == ALIAS_B ? w->b_host : w->a_host;
    gu_buffer_t *io = gu_buffer_new(e->in, n), *other = NULL;
    gu_buffer_load(io, io_data, gu_buffer_region_elems(io));
    io->dtype = e->out; /* equal sizes: only the name printed in messages changes */
    int a_offset = offset, b_offset = offset;
    if (alias == ALIAS_A || alias == ALIAS_B) {
        other = gu_buffer_new(e->in, n);
        gu_buffer_load(other, alias == ALIAS_A ? w->b_host : w->a_host, gu_buffer_region_elems(other));
        if (alias == ALIAS_A)
            b_offset = other_offset;
        else
            a_offset = other_offset;
    }
    const void *a_host = element(w->a_host, e->in, a_offset);
    const void *b_host = alias == ALIAS_AB ? a_host : element(w->b_host, e->in, b_offset);
    const void *expected;
    if (alias == ALIAS_AB) {
        reference(e, alpha, n, w->scratch, a_host, a_host);
        expected = w->scratch;
    } else {
        expected = expected_at(w, alpha_index, n, a_offset, b_offset);
    }

    void *io_pointer = gu_at(io, offset);
    void *other_pointer = other != NULL ? gu_at(other, other_offset) : NULL;
    const void *a = alias == ALIAS_B ? other_pointer : io_pointer;
    const void *b = alias == ALIAS_X ? NULL : alias == ALIAS_A ? other_pointer : io_pointer;
    char what[256], extra[64];
    snprintf(extra, sizeof extra, "(in place: %s)", names[alias]);
    describe(what, sizeof what, e, alpha, n, offset, a_offset, b_offset, extra);
    ew_status_t status = call_entry(e, alpha, n, io_pointer, a, b, NULL);
    if (status != EW_SUCCESS)
        GU_FAIL("%s: returned %s: %s", what, ew_status_string(status), ew_get_last_error_message());
    gu_inputs_t inputs = {arity(e), {e->in, e->in}, {a_host, b_host}};
    GU_CHECK_OUTPUT(io, offset, n, expected, &inputs, what);
    if (other != NULL) {
        GU_CHECK_UNCHANGED(other, what);
        gu_buffer_free(other);
    }
    gu_buffer_free(io);
}

static void sweep_in_place(work_t *w)
{
    const entry_t *e = w->e;
    if (e->op == EW_OP_CAST && ew_dtype_size(e->out) != ew_dtype_size(e->in))
        return; /* out may alias an input only with equal element sizes */
    /* (offset of the aliased pointer, offset of the other input): vector path, vector path with a head,
     * different phases (one element at a time) */
    static const int placements[][2] = {{0, 0}, {1, 1}, {1, 0}};
    const int64_t *list = w->small ? in_place_n_small : in_place_n_full;
    size_t list_count = w->small ? COUNT(in_place_n_small) : COUNT(in_place_n_full);
    int turn = 0;
    for (size_t k = 0; k < list_count; ++k)
        for (size_t p = 0; p < COUNT(placements); ++p) {
            if (arity(e) == 1) {
                in_place_call(w, list[k], ALIAS_X, placements[p][0], 0, turn++ % w->alpha_count);
                continue;
            }
            in_place_call(w, list[k], ALIAS_A, placements[p][0], placements[p][1], turn++ % w->alpha_count);
            in_place_call(w, list[k], ALIAS_B, placements[p][0], placements[p][1], turn++ % w->alpha_count);
            in_place_call(w, list[k], ALIAS_AB, placements[p][0], placements[p][0], turn++ % w->alpha_count);
        }
}

/* The inputs must be able to tell fma from multiply-then-add, or scale_add's rule is not tested. */
static void check_fma_is_observable(work_t *w)
{
    const entry_t *e = w->e;
    if (e->op != EW_OP_SCALE_ADD || (e->out != EW_F32 && e->out != EW_F64))
        return;
    int64_t differ = 0;
    for (int64_t i = 0; i < w->region; ++i) {
        if (e->out == EW_F32) {
            float a, b;
            memcpy(&a, element(w->a_host, EW_F32, i), sizeof a);
            memcpy(&b, element(w->b_host, EW_F32, i), sizeof b);
            float alpha = (float)w->alphas[0];
            volatile float product = alpha * a; /* rounded on its own: no contraction */
            float fused = fmaf(alpha, a, b), separate = product + b;
            differ += fused == fused && separate == separate && fused != separate;
        } else {
            double a, b;
            memcpy(&a, element(w->a_host, EW_F64, i), sizeof a);
            memcpy(&b, element(w->b_host, EW_F64, i), sizeof b);
            volatile double product = w->alphas[0] * a;
            double fused = fma(w->alphas[0], a, b), separate = product + b;
            differ += fused == fused && separate == separate && fused != separate;
        }
    }
    print_message("%s: alpha %.17g gives fma != multiply-then-add on %" PRId64 " of %" PRId64 " inputs\n",
                  e->name, w->alphas[0], differ, w->region);
    if (differ == 0)
        GU_FAIL("%s: no input tells fma from multiply-then-add; the test cannot check the rule", e->name);
}

/* ---- one large call ---- */

/* Binary ops on 2- to 8-byte types at one phase run, from about 192 tiles per SM, a bulk-copy plan
 * that asks for more shared memory than its tiles use, so that fewer blocks share an SM (src/plan/plan.c).
 * One call of 128 MiB an operand and a 3-element tail: 32768 tiles, enough for such a plan on any GPU
 * of up to 170 SMs. Its whole output is checked; not at small scale. One entry per element size, each
 * op once (about 2 s a call: all 21 entries added 150 s to the GPU check's three runs of this test). */
enum { LARGE_OPERAND_BYTES = 1 << 27 };

static int takes_large_call(const entry_t *e)
{
    return (e->op == EW_OP_ADD && e->in == EW_F16) || (e->op == EW_OP_MUL && e->in == EW_F32) ||
           (e->op == EW_OP_SCALE_ADD && e->in == EW_F64);
}

static void large_call(const entry_t *e, double alpha)
{
    const int64_t n = LARGE_OPERAND_BYTES / (int64_t)ew_dtype_size(e->in) + 3;
    const void *a_host = random_inputs(e->in, 0, n + GU_MAX_OFFSET_BYTES);
    const void *b_host = random_inputs(e->in, 1, n + GU_MAX_OFFSET_BYTES);
    void *expected = gu_host_alloc((size_t)n * ew_dtype_size(e->out));
    reference_parallel(e, alpha, n, expected, a_host, b_host);
    call_exactly_sized(e, n, a_host, b_host, &alpha, 1, &expected, "large call");
}

static void test_entry(void **state)
{
    const entry_t *e = *state;
    const int64_t *list = gu_small_scale() ? sweep_n_small : sweep_n_full;
    size_t count = gu_small_scale() ? COUNT(sweep_n_small) : COUNT(sweep_n_full);
    int64_t max_n = 0;
    for (size_t k = 0; k < count; ++k)
        max_n = list[k] > max_n ? list[k] : max_n;
    work_t w;
    prepare_work(&w, e, max_n);
    check_fma_is_observable(&w);
    sweep_n(&w);
    sweep_offsets(&w);
    sweep_in_place(&w);
    if (!w.small && takes_large_call(e))
        large_call(e, w.alphas[0]);
}

/* ---- fixed inputs at every position: the edge-value table, special alphas, bool bytes ---- */

/* A pattern puts chosen inputs (slots: a value, or an (a, b) pair for binary ops) into a call at
 * every position. Element i of a call holds slot (i + first) mod period, where the period is odd and
 * its last slot or two are random fillers; `first` changes from call to call. So every period of
 * consecutive elements holds every slot: the first elements (the head), the last (the tail), and, the
 * period being odd, every lane of every pack (every residue mod 16) over 16 periods. The calls sweep
 * n and pointer offsets like the random tests, so the values meet the aligned, shifted-window and
 * bulk-copy kernels at every pack width the entry has. Each output is compared bit for bit with the
 * CPU reference, and the reference, at each slot's positions, with the value the table or rule
 * states; so the GPU's output there is the stated value. */
typedef struct {
    const entry_t *e;
    double alpha;
    int slots;
    const uint64_t *a, *b;     /* per slot, raw bits; b NULL for unary ops */
    const uint64_t *want;      /* per slot, the output bits stated for it; NULL: the reference alone */
    const char *const *source; /* per slot, where `want` is stated (for messages) */
} pattern_t;

enum { PATTERN_MAX_PERIOD = 253 };

static int pattern_period(int slots) { return (slots + 1) % 2 ? slots + 1 : slots + 2; }

/* Stores the low bytes of bits as element i of a host array of dtype, as gu_bits reads them. */
static void put_bits(ew_dtype_t dtype, void *host, int64_t i, uint64_t bits)
{
    unsigned char *p = (unsigned char *)host + (size_t)i * ew_dtype_size(dtype);
    uint8_t v8 = (uint8_t)bits;
    uint16_t v16 = (uint16_t)bits;
    uint32_t v32 = (uint32_t)bits;
    switch (ew_dtype_size(dtype)) {
    case 1: memcpy(p, &v8, 1); break;
    case 2: memcpy(p, &v16, 2); break;
    case 4: memcpy(p, &v32, 4); break;
    default: memcpy(p, &bits, 8); break;
    }
}

static uint64_t dtype_mask(ew_dtype_t dtype)
{
    size_t size = ew_dtype_size(dtype);
    return size >= 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * size)) - 1;
}

/* n: every slot at every residue mod 16 with an odd tail; at full scale also one period and a bit
 * (mostly head) and a size that spans several bulk-copy tiles. */
static int pattern_sizes(int period, int small, int64_t sizes[3])
{
    int count = 0;
    if (!small)
        sizes[count++] = period + 2;
    sizes[count++] = 16 * (int64_t)period + 37;
    if (!small)
        sizes[count++] = 4099; /* > 16 * PATTERN_MAX_PERIOD + 37 */
    return count;
}

/* Offsets (out, a, b) for counts c[0], c[1], c[2] (1 for unary calls): every all-equal one (the head
 * peels the common phase), every value of every pointer ((i, 3i + 1, 5i + 2): the inputs at odd
 * distances from out, shifted windows), and out or one input alone 1, 2, 4 or 8 elements off (the
 * phases agree at each narrower pack). Small scale: two all-equal ones and three others. */
static size_t pattern_combos(const int c[3], int small, combo_t *combos)
{
    static combo_set_t set;
    memset(set.seen, 0, sizeof set.seen);
    set.combos = combos;
    set.count = 0;
    int widest = c[0] > c[1] ? c[0] : c[1];
    int all_equal = c[0] < c[1] ? c[0] : c[1];
    if (c[2] > 1 && c[2] < all_equal)
        all_equal = c[2];
    for (int k = 0; k < (small ? (all_equal < 2 ? all_equal : 2) : all_equal); ++k)
        add_combo(&set, k, k, c[2] == 1 ? 0 : k);
    for (int i = 0; i < (small ? 3 : widest); ++i)
        add_combo(&set, i % c[0], (3 * i + 1) % c[1], (5 * i + 2) % c[2]);
    for (int d = 1; !small && d <= 8; d *= 2) {
        add_combo(&set, d % c[0], 0, 0);
        add_combo(&set, 0, d % c[1], 0);
        add_combo(&set, 0, 0, d % c[2]);
    }
    return set.count;
}

/* Host inputs over a buffer's whole region for a call reading them from element `offset`: random
 * fillers, then each slot's bits wherever the call's element i has slot (i + first) mod period. */
static void fill_pattern(ew_dtype_t dtype, void *host, int64_t region, int offset, int first, int period,
                         int slots, const uint64_t *bits, gu_rng_t *rng)
{
    gu_fill_random(dtype, region, host, rng);
    for (int64_t j = 0; j < region; ++j) {
        int64_t slot = ((j - offset + first) % period + period) % period;
        if (slot < slots)
            put_bits(dtype, host, j, bits[slot]);
    }
}

/* The reference's output at each slot's positions must be the stated value, and the inputs there
 * the slot's (the pattern itself is checked, so that it cannot silently test something else). */
static int64_t check_stated(const pattern_t *p, int64_t n, int first, int period, const void *expected,
                            const void *a_elems, const void *b_elems, const char *what)
{
    const entry_t *e = p->e;
    int64_t stated = 0;
    for (int64_t i = 0; i < n; ++i) {
        int slot = (int)((i + first) % period);
        if (slot >= p->slots)
            continue;
        uint64_t a = gu_bits(e->in, a_elems, i), b = b_elems != NULL ? gu_bits(e->in, b_elems, i) : 0;
        if (a != (p->a[slot] & dtype_mask(e->in)) ||
            (b_elems != NULL && b != (p->b[slot] & dtype_mask(e->in))))
            GU_FAIL("%s: element %" PRId64 " holds a=0x%" PRIx64 " b=0x%" PRIx64
                    ", not slot %d's inputs (a test bug)",
                    what, i, a, b, slot);
        if (p->want == NULL)
            continue;
        uint64_t got = gu_bits(e->out, expected, i);
        if (got != p->want[slot])
            GU_FAIL("%s: element %" PRId64 " (a=0x%" PRIx64 " b=0x%" PRIx64
                    "): the CPU reference gives 0x%" PRIx64 ", %s states 0x%" PRIx64,
                    what, i, a, b, got, p->source[slot], p->want[slot]);
        stated++;
    }
    return stated;
}

static void run_pattern(const pattern_t *p, const char *label, gu_rng_t *rng)
{
    unsigned rotation = 0; /* the first slot moves on with every call, the same in any run of this pattern */
    const entry_t *e = p->e;
    int binary = arity(e) == 2, small = gu_small_scale();
    int period = pattern_period(p->slots);
    if (p->slots < 1 || period > PATTERN_MAX_PERIOD || (binary && p->b == NULL))
        GU_FAIL("%s %s: %d slots do not make a pattern (a test bug)", e->name, label, p->slots);
    int counts[3] = {gu_offset_count(e->out), gu_offset_count(e->in), binary ? gu_offset_count(e->in) : 1};
    static combo_t combos[16 * 16 * 16];
    size_t combo_count = pattern_combos(counts, small, combos);
    int64_t sizes[3];
    int size_count = pattern_sizes(period, small, sizes);
    size_t in_size = ew_dtype_size(e->in), out_size = ew_dtype_size(e->out);
    char what[256], extra[160];
    int64_t stated = 0;
    for (int k = 0; k < size_count; ++k) {
        int64_t n = sizes[k];
        gu_buffer_t *a = gu_buffer_new(e->in, n), *b = binary ? gu_buffer_new(e->in, n) : NULL;
        gu_buffer_t *out = gu_buffer_new(e->out, n);
        int64_t region = gu_buffer_region_elems(a);
        unsigned char *a_host = malloc((size_t)region * in_size);
        unsigned char *b_host = binary ? malloc((size_t)region * in_size) : NULL;
        unsigned char *expected = malloc((size_t)n * out_size);
        if (a_host == NULL || (binary && b_host == NULL) || expected == NULL) {
            free(a_host);
            free(b_host);
            free(expected);
            GU_FAIL("out of host memory");
        }
        for (size_t i = 0; i < combo_count; ++i) {
            const combo_t *c = &combos[i];
            int first = (int)(rotation++ % (unsigned)period);
            fill_pattern(e->in, a_host, region, c->a, first, period, p->slots, p->a, rng);
            gu_buffer_load(a, a_host, region);
            if (binary) {
                fill_pattern(e->in, b_host, region, c->b, first, period, p->slots, p->b, rng);
                gu_buffer_load(b, b_host, region);
            }
            const unsigned char *a_elems = a_host + (size_t)c->a * in_size;
            const unsigned char *b_elems = binary ? b_host + (size_t)c->b * in_size : NULL;
            reference(e, p->alpha, n, expected, a_elems, b_elems);
            snprintf(extra, sizeof extra, "(%s, slot %d first of %d)", label, first, period);
            describe(what, sizeof what, e, p->alpha, n, c->out, c->a, c->b, extra);
            stated += check_stated(p, n, first, period, expected, a_elems, b_elems, what);
            run_and_check(e, p->alpha, n, out, c->out, a, c->a, b, c->b, expected, a_elems, b_elems, what);
        }
        free(a_host);
        free(b_host);
        free(expected);
        snprintf(extra, sizeof extra, "(%s: inputs must be untouched)", label);
        describe(what, sizeof what, e, p->alpha, n, 0, 0, 0, extra);
        check_inputs_and_free(out, a, b, what);
    }
    if (p->want != NULL && stated < p->slots)
        GU_FAIL("%s %s: only %" PRId64 " elements checked against the stated values of %d slots", e->name,
                label, stated, p->slots);
}

static entry_t make_entry(ew_op_t op, ew_dtype_t out, ew_dtype_t in)
{
    entry_t e = {op, out, in, ""};
    if (op == EW_OP_CAST)
        snprintf(e.name, sizeof e.name, "cast %s->%s", ew_dtype_name(in), ew_dtype_name(out));
    else
        snprintf(e.name, sizeof e.name, "%s %s", ref_op_name(op), ew_dtype_name(out));
    if (!ew_is_supported(op, out, in))
        GU_FAIL("%s is not in the catalogue", e.name);
    return e;
}

/* -- the edge-value table of docs/semantics.md, read from the document itself -- */

typedef struct {
    ew_op_t op;
    ew_dtype_t out, in;
    uint64_t a, b, expected;
    double alpha;
    int line; /* in docs/semantics.md */
} table_row_t;

enum { MAX_TABLE_ROWS = 1024, MIN_TABLE_ROWS = 100 };

/* docs/semantics.md: EW_SEMANTICS_MD where the build defines it, else beside this source file. */
/* docs/semantics.md, as the build names it (tests/gpu.cmake, tests/ref.cmake). */
#ifndef EW_SEMANTICS_MD
#error "EW_SEMANTICS_MD names docs/semantics.md"
#endif
static void semantics_md_path(char *path, size_t size) { snprintf(path, size, "%s", EW_SEMANTICS_MD); }

/* The table's cells, trimmed; returns how many (modifies line). */
static int split_cells(char *line, char **cells, int max_cells)
{
    int count = 0;
    char *p = strchr(line, '|');
    while (p != NULL && count < max_cells) {
        char *start = p + 1, *end = strchr(start, '|');
        if (end == NULL)
            break;
        *end = '\0';
        while (*start == ' ')
            start++;
        for (char *t = end - 1; t >= start && (*t == ' ' || *t == '\t'); t--)
            *t = '\0';
        cells[count++] = start;
        p = end;
    }
    return count;
}

/* "0x..." that fits the dtype; returns 0 on anything else. */
static int parse_bits(const char *cell, ew_dtype_t dtype, uint64_t *bits)
{
    char *end = NULL;
    if (strncmp(cell, "0x", 2) != 0 || strlen(cell) < 3)
        return 0;
    *bits = strtoull(cell, &end, 16);
    return *end == '\0' && (*bits & ~dtype_mask(dtype)) == 0;
}

static int parse_dtype(const char *cell, ew_dtype_t *dtype)
{
    for (int d = DTYPE_FIRST; d <= DTYPE_LAST; ++d)
        if (strcmp(cell, ew_dtype_name((ew_dtype_t)d)) == 0) {
            *dtype = (ew_dtype_t)d;
            return 1;
        }
    return 0;
}

static int parse_op(const char *cell, ew_op_t *op)
{
    static const ew_op_t ops[] = {EW_OP_ADD, EW_OP_MUL, EW_OP_RELU, EW_OP_CAST, EW_OP_SCALE_ADD};
    for (size_t k = 0; k < COUNT(ops); ++k)
        if (strcmp(cell, ref_op_name(ops[k])) == 0) {
            *op = ops[k];
            return 1;
        }
    return 0;
}

/* Alpha: "-" for ops without one, "nan" (the quiet NaN 0x7FF8000000000000), or a C double literal. */
static int parse_alpha(const char *cell, ew_op_t op, double *alpha)
{
    char *end = NULL;
    *alpha = 0.0;
    if (op != EW_OP_SCALE_ADD)
        return strcmp(cell, "-") == 0;
    if (strcmp(cell, "nan") == 0) {
        *alpha = ref_f64_from_bits(UINT64_C(0x7FF8000000000000));
        return 1;
    }
    *alpha = strtod(cell, &end);
    return end != cell && *end == '\0';
}

/* One table row from its cells; 0 if any cell is not what the columns say. */
static int parse_row(char **cells, int line, table_row_t *row)
{
    row->line = line;
    row->b = 0;
    if (!parse_op(cells[0], &row->op) || !parse_dtype(cells[1], &row->out) ||
        !parse_dtype(cells[2], &row->in) || !parse_bits(cells[3], row->in, &row->a) ||
        !parse_bits(cells[6], row->out, &row->expected) || !parse_alpha(cells[5], row->op, &row->alpha))
        return 0;
    int binary = row->op == EW_OP_ADD || row->op == EW_OP_MUL || row->op == EW_OP_SCALE_ADD;
    if (binary ? !parse_bits(cells[4], row->in, &row->b) : strcmp(cells[4], "-") != 0)
        return 0;
    return (row->op == EW_OP_CAST || row->out == row->in) && ew_is_supported(row->op, row->out, row->in);
}

/* Every row between the edge-table markers; fails the test if the document cannot be read, a row does
 * not parse, or there are implausibly few rows (a parse that found nothing must not pass). */
static const table_row_t *edge_table(size_t *count)
{
    static table_row_t rows[MAX_TABLE_ROWS];
    static size_t row_count;
    if (row_count > 0) {
        *count = row_count;
        return rows;
    }
    char path[4096], line[1024];
    semantics_md_path(path, sizeof path);
    FILE *doc = fopen(path, "r");
    if (doc == NULL)
        GU_FAIL("cannot open %s (the edge-value table is read from it; define EW_SEMANTICS_MD as its path)",
                path);
    int in_table = 0, ended = 0, line_number = 0;
    size_t parsed = 0;
    while (fgets(line, sizeof line, doc) != NULL) {
        line_number++;
        if (strstr(line, "<!-- edge-table-begin") != NULL) {
            in_table = 1;
            continue;
        }
        if (strstr(line, "<!-- edge-table-end") != NULL) {
            ended = in_table;
            break;
        }
        if (!in_table || line[0] != '|')
            continue;
        char *cells[8];
        if (split_cells(line, cells, 8) != 8 || strcmp(cells[0], "op") == 0 || cells[0][0] == '-')
            continue; /* header and separator */
        if (parsed == MAX_TABLE_ROWS || !parse_row(cells, line_number, &rows[parsed])) {
            fclose(doc);
            GU_FAIL("%s:%d: an edge-table row this test cannot read (or more than %d rows)", path,
                    line_number, MAX_TABLE_ROWS);
        }
        parsed++;
    }
    fclose(doc);
    if (!ended || parsed < MIN_TABLE_ROWS)
        GU_FAIL("%s: %zu rows between the edge-table markers%s; expected at least %d", path, parsed,
                ended ? "" : " (end marker missing)", MIN_TABLE_ROWS);
    row_count = parsed;
    *count = row_count;
    return rows;
}

/* Every row of one op, grouped by entry and alpha, each group a pattern. */
static void test_edge_table(void **state)
{
    const ew_op_t op = *(const ew_op_t *)*state;
    size_t count = 0;
    const table_row_t *rows = edge_table(&count);
    unsigned char *done = gu_host_alloc(count);
    memset(done, 0, count);
    uint64_t *a = gu_host_alloc(count * sizeof *a), *b = gu_host_alloc(count * sizeof *b),
             *want = gu_host_alloc(count * sizeof *want);
    char(*text)[48] = gu_host_alloc(count * sizeof *text);
    const char **source = gu_host_alloc(count * sizeof *source);
    gu_rng_t rng = gu_rng(gu_seed() ^ UINT64_C(0x7AB1E0000) ^ (uint64_t)op);
    int groups = 0, rows_run = 0;
    for (size_t i = 0; i < count; ++i) {
        if (rows[i].op != op || done[i])
            continue;
        entry_t e = make_entry(op, rows[i].out, rows[i].in);
        int slots = 0;
        for (size_t j = i; j < count; ++j) {
            const table_row_t *r = &rows[j];
            if (r->op != op || r->out != rows[i].out || r->in != rows[i].in ||
                ref_f64_bits(r->alpha) != ref_f64_bits(rows[i].alpha))
                continue;
            done[j] = 1;
            a[slots] = r->a;
            b[slots] = r->b;
            want[slots] = r->expected;
            snprintf(text[slots], sizeof text[slots], "docs/semantics.md:%d", r->line);
            source[slots] = text[slots];
            slots++;
        }
        pattern_t p = {&e, rows[i].alpha, slots, a, arity(&e) == 2 ? b : NULL, want, source};
        char label[64];
        snprintf(label, sizeof label, "edge table, %d row%s", slots, slots == 1 ? "" : "s");
        run_pattern(&p, label, &rng);
        groups++;
        rows_run += slots;
    }
    print_message("edge table: %d rows of %s in %d groups, each at every position, n and offset\n", rows_run,
                  ref_op_name(op), groups);
    if (rows_run == 0)
        GU_FAIL("docs/semantics.md's edge table has no %s row", ref_op_name(op));
    /* The rows where rounding twice through f32 differs from rounding once must stay among them. */
    static const table_row_t double_rounding[] = {
        {EW_OP_CAST, EW_BF16, EW_I32, UINT64_C(0x02020001), 0, UINT64_C(0x4C00), 0, 0},
        {EW_OP_CAST, EW_F16, EW_F64, UINT64_C(0x3FF0020000001000), 0, UINT64_C(0x3C00), 0, 0},
    };
    for (size_t k = 0; op == EW_OP_CAST && k < COUNT(double_rounding); ++k) {
        const table_row_t *want = &double_rounding[k];
        int found = 0;
        for (size_t i = 0; i < count; ++i)
            found |= rows[i].op == want->op && rows[i].out == want->out && rows[i].in == want->in &&
                     rows[i].a == want->a && rows[i].expected == want->expected;
        if (!found)
            GU_FAIL("docs/semantics.md's edge table lost the row cast %s -> %s 0x%" PRIx64 " -> 0x%" PRIx64,
                    ew_dtype_name(want->in), ew_dtype_name(want->out), want->a, want->expected);
    }
}

/* -- float scale_add with special alphas -- */

static int is_nan_bits(ew_dtype_t dtype, uint64_t bits)
{
    switch (dtype) {
    case EW_F16: return (bits & 0x7C00) == 0x7C00 && (bits & 0x03FF) != 0;
    case EW_BF16: return (bits & 0x7F80) == 0x7F80 && (bits & 0x007F) != 0;
    case EW_F32: return (bits & 0x7F800000) == 0x7F800000 && (bits & 0x007FFFFF) != 0;
    default:
        return (bits & UINT64_C(0x7FF0000000000000)) == UINT64_C(0x7FF0000000000000) &&
               (bits & UINT64_C(0x000FFFFFFFFFFFFF)) != 0;
    }
}

/* scale_add with a NaN alpha, as docs/semantics.md states it (sections 4 and 6): always a NaN; in f16
 * and bf16 0x7FFF, in f32 0x7FFFFFFF; in f64 the first NaN of b, a, alpha with its quiet bit set. */
static uint64_t nan_alpha_result(ew_dtype_t dtype, uint64_t a, uint64_t b, uint64_t alpha_bits)
{
    const uint64_t quiet = UINT64_C(0x0008000000000000);
    switch (dtype) {
    case EW_F16:
    case EW_BF16: return 0x7FFF;
    case EW_F32: return 0x7FFFFFFF;
    default:
        return is_nan_bits(EW_F64, b) ? b | quiet : is_nan_bits(EW_F64, a) ? a | quiet : alpha_bits | quiet;
    }
}

/* Inputs for the special alphas, per dtype: +-0, 1, -1.5, +-inf, a signalling NaN, a negative quiet NaN
 * (both with payloads), the smallest subnormal, the largest finite. Every (a, b) pair is a slot. */
enum { ALPHA_INPUTS = 10 };
static const uint64_t alpha_inputs_f16[ALPHA_INPUTS] = {0x0000, 0x8000, 0x3C00, 0xBE00, 0x7C00,
                                                        0xFC00, 0x7C02, 0xFE03, 0x0001, 0x7BFF};
static const uint64_t alpha_inputs_bf16[ALPHA_INPUTS] = {0x0000, 0x8000, 0x3F80, 0xBFC0, 0x7F80,
                                                         0xFF80, 0x7F82, 0xFFC3, 0x0001, 0x7F7F};
static const uint64_t alpha_inputs_f32[ALPHA_INPUTS] = {0x00000000, 0x80000000, 0x3F800000, 0xBFC00000,
                                                        0x7F800000, 0xFF800000, 0x7F800002, 0xFFC00003,
                                                        0x00000001, 0x7F7FFFFF};
static const uint64_t alpha_inputs_f64[ALPHA_INPUTS] = {
    UINT64_C(0x0000000000000000), UINT64_C(0x8000000000000000), UINT64_C(0x3FF0000000000000),
    UINT64_C(0xBFF8000000000000), UINT64_C(0x7FF0000000000000), UINT64_C(0xFFF0000000000000),
    UINT64_C(0x7FF0000000000002), UINT64_C(0xFFF8000000000003), UINT64_C(0x0000000000000001),
    UINT64_C(0x7FEFFFFFFFFFFFFF)};

/* Alphas as raw doubles: NaNs (quiet, negative, signalling, with a payload), zeros, infinities, huge
 * (beyond f32, FLT_MAX, the f32 overflow tie) and tiny (the f64 subnormals, 2^-149, the f32 underflow
 * tie 2^-150 and 1.5 * 2^-150, FLT_MIN). */
/* clang-format off */
static const uint64_t special_alphas[] = {
    UINT64_C(0x7FF8000000000000), UINT64_C(0xFFF8000000000000), UINT64_C(0x7FF0000000000001),
    UINT64_C(0xFFF80000DEADBEEF),
    UINT64_C(0x0000000000000000), UINT64_C(0x8000000000000000),
    UINT64_C(0x7FF0000000000000), UINT64_C(0xFFF0000000000000),
    UINT64_C(0x7FEFFFFFFFFFFFFF), UINT64_C(0xFFEFFFFFFFFFFFFF), UINT64_C(0x47EFFFFFE0000000),
    UINT64_C(0x47EFFFFFF0000000), UINT64_C(0x4415AF1D78B58C40) /* 1e20 */,
    UINT64_C(0x0000000000000001), UINT64_C(0x8000000000000001), UINT64_C(0x0010000000000000),
    UINT64_C(0x36A0000000000000), UINT64_C(0x3690000000000000), UINT64_C(0x3698000000000000),
    UINT64_C(0x3810000000000000),
};
/* clang-format on */

static void test_special_alphas(void **state)
{
    const ew_dtype_t dtype = *(const ew_dtype_t *)*state;
    const uint64_t *inputs = dtype == EW_F16    ? alpha_inputs_f16
                             : dtype == EW_BF16 ? alpha_inputs_bf16
                             : dtype == EW_F32  ? alpha_inputs_f32
                                                : alpha_inputs_f64;
    entry_t e = make_entry(EW_OP_SCALE_ADD, dtype, dtype);
    enum { SLOTS = ALPHA_INPUTS * ALPHA_INPUTS };
    uint64_t a[SLOTS], b[SLOTS], want[SLOTS];
    const char *source[SLOTS];
    for (int s = 0; s < SLOTS; ++s) {
        a[s] = inputs[s / ALPHA_INPUTS];
        b[s] = inputs[s % ALPHA_INPUTS];
        source[s] = "the NaN-alpha rule of docs/semantics.md";
    }
    gu_rng_t rng = gu_rng(gu_seed() ^ UINT64_C(0xA1FA000) ^ (uint64_t)dtype);
    for (size_t k = 0; k < COUNT(special_alphas); ++k) {
        double alpha = ref_f64_from_bits(special_alphas[k]);
        int nan_alpha = is_nan_bits(EW_F64, special_alphas[k]);
        for (int s = 0; nan_alpha && s < SLOTS; ++s)
            want[s] = nan_alpha_result(dtype, a[s], b[s], special_alphas[k]);
        pattern_t p = {&e, alpha, SLOTS, a, b, nan_alpha ? want : NULL, source};
        char label[64];
        snprintf(label, sizeof label, "alpha bits 0x%016" PRIx64, special_alphas[k]);
        run_pattern(&p, label, &rng);
    }
}

/* -- bool inputs with any nonzero byte -- */

/* Each bool input byte, nonzero ones other than 1 included; every pair is a slot of a binary op. The
 * stated output is the reference's for the same inputs read as 0 or 1 (docs/semantics.md: any nonzero
 * byte reads as true). */
static const uint8_t bool_bytes[] = {0x00, 0x01, 0x02, 0x40, 0x80, 0xFF};

static void run_bool_pattern(const entry_t *e, double alpha, gu_rng_t *rng)
{
    enum { VALUES = sizeof bool_bytes, SLOTS = VALUES * VALUES };
    uint64_t a[SLOTS], b[SLOTS], want[SLOTS];
    const char *source[SLOTS];
    int binary = arity(e) == 2, slots = binary ? SLOTS : VALUES;
    for (int s = 0; s < slots; ++s) {
        a[s] = bool_bytes[binary ? s / VALUES : s];
        b[s] = binary ? bool_bytes[s % VALUES] : 0;
        uint8_t a01 = a[s] != 0, b01 = b[s] != 0;
        uint64_t out = 0; /* little-endian: the output element's bits, zero-extended */
        reference(e, alpha, 1, &out, &a01, &b01);
        want[s] = out;
        source[s] = "the bool rule of docs/semantics.md (any nonzero byte reads as true)";
    }
    pattern_t p = {e, alpha, slots, a, binary ? b : NULL, want, source};
    run_pattern(&p, "bool bytes", rng);
}

static void test_bool_bytes(void **state)
{
    const ew_op_t op = *(const ew_op_t *)*state;
    gu_rng_t rng = gu_rng(gu_seed() ^ UINT64_C(0xB001000) ^ (uint64_t)op);
    if (op == EW_OP_CAST) {
        for (int out = DTYPE_FIRST; out <= DTYPE_LAST; ++out) {
            entry_t e = make_entry(EW_OP_CAST, (ew_dtype_t)out, EW_BOOL);
            run_bool_pattern(&e, 0.0, &rng);
        }
        return;
    }
    entry_t e = make_entry(op, EW_BOOL, EW_BOOL);
    if (op == EW_OP_SCALE_ADD) {
        run_bool_pattern(&e, 1.0, &rng);
        run_bool_pattern(&e, 0.0, &rng);
    } else {
        run_bool_pattern(&e, 0.0, &rng);
    }
}

/* ---- catalogue-wide tests ---- */

/* The iteration above found the whole catalogue of the issue: a hole would silently shrink this test. */
static void test_catalogue_is_complete(void **state)
{
    (void)state;
    size_t per_op[EW_OP_SCALE_ADD + 1] = {0};
    for (size_t i = 0; i < entry_count; ++i)
        per_op[entries[i].op]++;
    assert_int_equal(per_op[EW_OP_ADD], 10);
    assert_int_equal(per_op[EW_OP_MUL], 10);
    assert_int_equal(per_op[EW_OP_RELU], 9);
    assert_int_equal(per_op[EW_OP_SCALE_ADD], 10);
    assert_int_equal(per_op[EW_OP_CAST], 13 * 13);
}

/* n = 0 with NULL pointers succeeds and enqueues nothing: a capture of all of them is an empty graph. */
static void test_n_zero_null_pointers(void **state)
{
    (void)state;
    char what[128];
    for (size_t i = 0; i < entry_count; ++i) {
        double alphas[MAX_ALPHAS];
        alphas_for(&entries[i], alphas);
        ew_status_t status = call_entry(&entries[i], alphas[0], 0, NULL, NULL, NULL, NULL);
        snprintf(what, sizeof what, "%s n=0 NULL pointers", entries[i].name);
        if (status != EW_SUCCESS)
            GU_FAIL("%s: returned %s: %s", what, ew_status_string(status), ew_get_last_error_message());
    }
    cudaStream_t stream = gu_stream_new(cudaStreamNonBlocking);
    GU_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    for (size_t i = 0; i < entry_count; ++i) {
        double alphas[MAX_ALPHAS];
        alphas_for(&entries[i], alphas);
        ew_status_t status = call_entry(&entries[i], alphas[0], 0, NULL, NULL, NULL, stream);
        if (status != EW_SUCCESS)
            GU_FAIL("%s n=0 NULL pointers under capture: returned %s: %s", entries[i].name,
                    ew_status_string(status), ew_get_last_error_message());
    }
    cudaGraph_t graph = NULL;
    GU_CUDA(cudaStreamEndCapture(stream, &graph));
    gu_track_graph(graph);
    size_t nodes = 0;
    GU_CUDA(cudaGraphGetNodes(graph, NULL, &nodes));
    if (nodes != 0)
        GU_FAIL("n = 0 calls enqueued %zu graph nodes; expected none", nodes);
    GU_CUDA(cudaDeviceSynchronize());
}

int main(int argc, char **argv)
{
    gu_require_gpu("test_catalogue_gpu");
    int small = gu_small_scale();
    collect_entries();
    printf("test_catalogue_gpu: %zu catalogue entries, EW_TEST_SCALE=%s, EW_TEST_SEED=0x%" PRIx64 "\n",
           entry_count, small ? "small" : "full", gu_seed());
    fflush(stdout);

    static const ew_op_t table_ops[] = {EW_OP_CAST, EW_OP_ADD, EW_OP_MUL, EW_OP_RELU, EW_OP_SCALE_ADD};
    static const ew_dtype_t alpha_dtypes[] = {EW_F16, EW_BF16, EW_F32, EW_F64};
    static const ew_op_t bool_ops[] = {EW_OP_ADD, EW_OP_MUL, EW_OP_SCALE_ADD, EW_OP_CAST};
    static char names[COUNT(table_ops) + COUNT(alpha_dtypes) + COUNT(bool_ops)][64];
    size_t name_count = 0, test_count = 0;
    struct CMUnitTest *tests =
        calloc(entry_count + 2 + COUNT(table_ops) + COUNT(alpha_dtypes) + COUNT(bool_ops), sizeof *tests);
    if (tests == NULL)
        return 1;
    tests[test_count++] = (struct CMUnitTest){.name = "catalogue is complete",
                                              .test_func = test_catalogue_is_complete,
                                              .teardown_func = gu_teardown};
    tests[test_count++] = (struct CMUnitTest){.name = "n = 0 with NULL pointers",
                                              .test_func = test_n_zero_null_pointers,
                                              .teardown_func = gu_teardown};
    for (size_t k = 0; k < COUNT(table_ops); ++k) {
        snprintf(names[name_count], sizeof names[name_count], "edge table: %s", ref_op_name(table_ops[k]));
        tests[test_count++] = (struct CMUnitTest){.name = names[name_count++],
                                                  .test_func = test_edge_table,
                                                  .teardown_func = gu_teardown,
                                                  .initial_state = (void *)&table_ops[k]};
    }
    for (size_t k = 0; k < COUNT(alpha_dtypes); ++k) {
        snprintf(names[name_count], sizeof names[name_count], "special alphas: scale_add %s",
                 ew_dtype_name(alpha_dtypes[k]));
        tests[test_count++] = (struct CMUnitTest){.name = names[name_count++],
                                                  .test_func = test_special_alphas,
                                                  .teardown_func = gu_teardown,
                                                  .initial_state = (void *)&alpha_dtypes[k]};
    }
    for (size_t k = 0; k < COUNT(bool_ops); ++k) {
        snprintf(names[name_count], sizeof names[name_count], "bool bytes: %s",
                 bool_ops[k] == EW_OP_CAST ? "cast from bool" : ref_op_name(bool_ops[k]));
        tests[test_count++] = (struct CMUnitTest){.name = names[name_count++],
                                                  .test_func = test_bool_bytes,
                                                  .teardown_func = gu_teardown,
                                                  .initial_state = (void *)&bool_ops[k]};
    }
    for (size_t i = 0; i < entry_count; ++i)
        tests[test_count++] = (struct CMUnitTest){.name = entries[i].name,
                                                  .test_func = test_entry,
                                                  .teardown_func = gu_teardown,
                                                  .initial_state = &entries[i]};

    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int status = gu_run_tests("kernels_gpu", tests, test_count, 0, argc, argv);
    clock_gettime(CLOCK_MONOTONIC, &end);
    printf("test_catalogue_gpu: %.1f s\n",
           (double)(end.tv_sec - start.tv_sec) + 1e-9 * (double)(end.tv_nsec - start.tv_nsec));
    free(tests);
    ew_handle_destroy(gu_handle());
    return status;
}
