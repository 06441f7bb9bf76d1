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
 *   - add f16, mul f32 and scale_add f64: one call of 128 MiB an operand (a plan of its own, below).
 * Outputs start poisoned (0xA5, and 0x5A where an expected element is 0xA5...), guard bytes around every
 * buffer are checked, inputs must come back unchanged.
 * EW_TEST_SCALE=small does about a tenth of the work (for compute-sanitizer); EW_TEST_SEED changes the
 * inputs. An argument runs only the test of that name (e.g. "add f16").
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

enum { MAX_ALPHAS = 8, DTYPE_FIRST = EW_BOOL, DTYPE_LAST = EW_F8E5M2 };

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

static entry_t entries[5 * 12 * 12];
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
 * that asks for more shared memory than its tiles use, so that fewer blocks share an SM (src/plan.c).
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
    assert_int_equal(per_op[EW_OP_CAST], 144);
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
    gu_require_gpu("test_kernels_gpu");
    int small = gu_small_scale();
    collect_entries();
    printf("test_kernels_gpu: %zu catalogue entries, EW_TEST_SCALE=%s, EW_TEST_SEED=0x%" PRIx64 "\n",
           entry_count, small ? "small" : "full", gu_seed());
    fflush(stdout);

    size_t test_count = 0;
    struct CMUnitTest *tests = calloc(entry_count + 2, sizeof *tests);
    if (tests == NULL)
        return 1;
    tests[test_count++] = (struct CMUnitTest){.name = "catalogue is complete",
                                              .test_func = test_catalogue_is_complete,
                                              .teardown_func = gu_teardown};
    tests[test_count++] = (struct CMUnitTest){.name = "n = 0 with NULL pointers",
                                              .test_func = test_n_zero_null_pointers,
                                              .teardown_func = gu_teardown};
    for (size_t i = 0; i < entry_count; ++i)
        tests[test_count++] = (struct CMUnitTest){.name = entries[i].name,
                                                  .test_func = test_entry,
                                                  .teardown_func = gu_teardown,
                                                  .initial_state = &entries[i]};

    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int status = gu_run_tests("kernels_gpu", tests, test_count, argc, argv);
    clock_gettime(CLOCK_MONOTONIC, &end);
    printf("test_kernels_gpu: %.1f s\n",
           (double)(end.tv_sec - start.tv_sec) + 1e-9 * (double)(end.tv_nsec - start.tv_nsec));
    free(tests);
    ew_handle_destroy(gu_handle());
    return status;
}
