/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tensor lists on the GPU, bit for bit against the CPU reference (tests/ref): random lists of counts 0,
 * 1 and across the launches' capacities (src/plan/batched.h), sizes 0 to millions, every element offset of
 * every pointer (rows at one phase run whole packs, others element by element), every op and a sample
 * of dtypes with the f16 -> f32 cast, in place, and a list captured in a CUDA graph and replayed with
 * new inputs. ctest runs it again with EW_BATCHED_PARAMS=4096 (the 4 KiB kernel only).
 *
 * Each operand of a list is one device allocation holding every entry at its own offset with gaps
 * between them; the output allocation starts poisoned (twice, with two poisons) and must afterwards
 * equal its image: the reference at every entry, poison everywhere else. Inputs must be unchanged.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/batched.h"
#include "checksum.h"
#include "gpu_util.h"
#include "ref/ref.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

typedef struct {
    ew_op_t op;
    ew_dtype_t out, in;
    double alpha;
} op_t;

static int op_inputs(const op_t *op) { return op->op == EW_OP_RELU || op->op == EW_OP_CAST ? 1 : 2; }

/* A list on the device: per operand one allocation; entry i at byte at[j][i] of operand j. */
typedef struct {
    op_t op;
    int64_t count;
    int64_t *n;
    size_t size[3], bytes[3];
    size_t *at[3];
    unsigned char *device[3], *host[3]; /* host: inputs as uploaded; out: the expected image */
    void **out_ptr;
    const void **in_ptr[2];
} list_t;

/* offsets: 0 every entry aligned, 1 one random offset shared by the entry's pointers, 2 random per
 * pointer, 3 a mix of the three per entry. in_place: out is the first input (equal sizes). */
static list_t *list_new(const op_t *op, int64_t count, const int64_t *n, int offsets, int in_place, gu_rng_t *rng)
{
    list_t *l = gu_host_alloc(sizeof *l);
    memset(l, 0, sizeof *l);
    l->op = *op;
    l->count = count;
    l->n = gu_host_alloc((size_t)(count ? count : 1) * sizeof *l->n);
    memcpy(l->n, n, (size_t)count * sizeof *n);
    const int roles = 1 + op_inputs(op);
    l->size[0] = ew_dtype_size(op->out);
    l->size[1] = l->size[2] = ew_dtype_size(op->in);
    for (int j = 0; j < roles; ++j) {
        l->at[j] = gu_host_alloc((size_t)(count ? count : 1) * sizeof(size_t));
        l->bytes[j] = 64;
    }
    for (int64_t i = 0; i < count; ++i) {
        const int mode = offsets == 3 ? (int)(gu_rng_next(rng) % 3) : offsets;
        const int shared = (int)(gu_rng_next(rng) % 16);
        for (int j = 0; j < roles; ++j) {
            const int choices = (int)(16 / l->size[j]);
            const int k = mode == 0 ? 0 : mode == 1 ? shared % choices : (int)(gu_rng_next(rng) % choices);
            const size_t start = (l->bytes[j] + 255) / 256 * 256 + (size_t)k * l->size[j];
            l->at[j][i] = start;
            l->bytes[j] = start + (size_t)n[i] * l->size[j] + 64; /* a gap the call must not write */
        }
    }
    for (int j = 0; j < roles; ++j) {
        if (j == 0 && in_place)
            continue;
        GU_CUDA(cudaMalloc((void **)&l->device[j], l->bytes[j]));
        l->host[j] = gu_host_alloc(l->bytes[j]);
    }
    l->out_ptr = gu_host_alloc((size_t)(count ? count : 1) * sizeof(void *));
    for (int j = 1; j < roles; ++j)
        l->in_ptr[j - 1] = gu_host_alloc((size_t)(count ? count : 1) * sizeof(void *));
    if (in_place) { /* out is input a: same allocation and offsets */
        l->at[0] = l->at[1];
        l->bytes[0] = l->bytes[1];
        l->device[0] = l->device[1];
        l->host[0] = gu_host_alloc(l->bytes[0]);
    }
    for (int64_t i = 0; i < count; ++i) {
        l->out_ptr[i] = l->device[0] + l->at[0][i];
        for (int j = 1; j < roles; ++j)
            l->in_ptr[j - 1][i] = l->device[j] + l->at[j][i];
    }
    return l;
}

static void list_free(list_t *l)
{
    for (int j = 1; j < 3; ++j)
        if (l->device[j] != NULL)
            cudaFree(l->device[j]);
    if (l->device[0] != l->device[1])
        cudaFree(l->device[0]);
}

/* New random inputs, uploaded; the out allocation poisoned with `poison` (in place: the inputs). */
static void list_load(list_t *l, uint8_t poison, gu_rng_t *rng)
{
    const int roles = 1 + op_inputs(&l->op);
    const int in_place = l->device[0] == l->device[1];
    for (int j = 1; j < roles; ++j) {
        gu_fill_random(l->op.in, (int64_t)(l->bytes[j] / l->size[j]), l->host[j], rng);
        GU_CUDA(cudaMemcpy(l->device[j], l->host[j], l->bytes[j], cudaMemcpyHostToDevice));
    }
    if (!in_place)
        GU_CUDA(cudaMemset(l->device[0], poison, l->bytes[0]));
    /* the expected image: the out allocation as it is, then every entry's reference */
    if (in_place)
        memcpy(l->host[0], l->host[1], l->bytes[0]);
    else
        memset(l->host[0], poison, l->bytes[0]);
    for (int64_t i = 0; i < l->count; ++i) {
        void *out = l->host[0] + l->at[0][i];
        const void *a = l->host[1] + l->at[1][i];
        const void *b = roles == 3 ? l->host[2] + l->at[2][i] : NULL;
        switch (l->op.op) {
        case EW_OP_ADD:
        case EW_OP_MUL: ref_binary(l->op.op, l->op.out, l->n[i], out, a, b); break;
        case EW_OP_RELU: ref_unary(l->op.op, l->op.out, l->n[i], out, a); break;
        case EW_OP_CAST: ref_cast(l->op.out, l->op.in, l->n[i], out, a); break;
        case EW_OP_SCALE_ADD: ref_scale_add(l->op.out, l->op.alpha, l->n[i], out, a, b); break;
        default: break; /* the scaled casts: tests/device/test_scaled_gpu.c */
        }
    }
}

static ew_status_t list_call(const list_t *l, cudaStream_t stream)
{
    const op_t *op = &l->op;
    switch (op->op) {
    case EW_OP_ADD:
    case EW_OP_MUL:
        return ew_binary_batched(gu_handle(), op->op, op->out, l->count, l->n, l->out_ptr, l->in_ptr[0],
                                 l->in_ptr[1], stream);
    case EW_OP_RELU: return ew_unary_batched(gu_handle(), op->op, op->out, l->count, l->n, l->out_ptr, l->in_ptr[0], stream);
    case EW_OP_CAST:
        return ew_cast_batched(gu_handle(), op->out, op->in, l->count, l->n, l->out_ptr, l->in_ptr[0], stream);
    case EW_OP_SCALE_ADD:
        return ew_scale_add_batched(gu_handle(), op->out, op->alpha, l->count, l->n, l->out_ptr, l->in_ptr[0],
                                    l->in_ptr[1], stream);
    default: break; /* the scaled casts: tests/device/test_scaled_gpu.c */
    }
    return EW_ERROR_NOT_SUPPORTED;
}

static const char *op_text(const op_t *op, char *text, size_t size)
{
    if (op->op == EW_OP_CAST)
        snprintf(text, size, "cast %s->%s", ew_dtype_name(op->in), ew_dtype_name(op->out));
    else
        snprintf(text, size, "%s %s alpha=%g", ref_op_name(op->op), ew_dtype_name(op->out), op->alpha);
    return text;
}

/* The out allocation equals its image; the inputs their upload. Names the first entry at fault. */
static void list_check(const list_t *l, const char *what)
{
    const int roles = 1 + op_inputs(&l->op);
    char name[96];
    op_text(&l->op, name, sizeof name);
    for (int j = 0; j < roles; ++j) {
        if (j > 0 && l->device[j] == l->device[0])
            continue;
        unsigned char *got = gu_host_alloc(l->bytes[j]);
        GU_CUDA(cudaMemcpy(got, l->device[j], l->bytes[j], cudaMemcpyDeviceToHost));
        if (memcmp(got, l->host[j], l->bytes[j]) == 0)
            continue;
        size_t byte = 0;
        while (got[byte] == l->host[j][byte])
            ++byte;
        int64_t entry = -1;
        for (int64_t i = 0; i < l->count; ++i)
            if (l->at[j][i] <= byte && byte < l->at[j][i] + (size_t)l->n[i] * l->size[j])
                entry = i;
        if (entry >= 0 && j == 0) {
            const gu_inputs_t inputs = {roles - 1,
                                        {l->op.in, l->op.in},
                                        {l->host[1] + l->at[1][entry], roles == 3 ? l->host[2] + l->at[2][entry] : NULL}};
            gu_compare(l->op.out, l->n[entry], l->host[0] + l->at[0][entry], got + l->at[0][entry], &inputs, name);
        }
        GU_FAIL("%s, %s, count %" PRId64 ": %s byte %zu differs (entry %" PRId64 ", n = %" PRId64
                "; -1: outside every entry)",
                what, name, l->count, j == 0 ? "out" : "an input", byte, entry, entry >= 0 ? l->n[entry] : 0);
    }
}

/* Runs the list twice, out poisoned with each poison, and checks each. */
static void list_run_checked(list_t *l, const char *what, gu_rng_t *rng)
{
    const uint8_t poisons[] = {GU_POISON, GU_POISON_ALT};
    for (size_t p = 0; p < COUNT(poisons); ++p) {
        list_load(l, poisons[p], rng);
        GU_EW(list_call(l, NULL));
        GU_CUDA(cudaDeviceSynchronize());
        list_check(l, what);
        if (l->device[0] == l->device[1])
            break; /* in place: the inputs are the poison */
    }
}

/* count random sizes: mostly below `small`, a few up to `large`, some 0. */
static int64_t *random_sizes(int64_t count, int64_t small, int64_t large, gu_rng_t *rng)
{
    int64_t *n = gu_host_alloc((size_t)(count ? count : 1) * sizeof *n);
    for (int64_t i = 0; i < count; ++i) {
        const int kind = (int)(gu_rng_next(rng) % 16);
        n[i] = kind == 0 ? 0 : kind == 1 && large > small ? small + (int64_t)(gu_rng_next(rng) % (uint64_t)(large - small))
                                                         : (int64_t)(gu_rng_next(rng) % (uint64_t)small);
    }
    return n;
}

static void run_case(const op_t *op, int64_t count, const int64_t *n, int offsets, int in_place, const char *what,
                     gu_rng_t *rng)
{
    list_t *l = list_new(op, count, n, offsets, in_place, rng);
    list_run_checked(l, what, rng);
    list_free(l);
}

/* ---- the tests ---- */

/* Counts 0 and 1, and around each capacity: where the 4 KiB block fills, where the 32 KiB one does, and
 * several launches of either. */
static void test_counts(void **state)
{
    (void)state;
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x11);
    const op_t add = {EW_OP_ADD, EW_F32, EW_F32, 0};
    const op_t relu = {EW_OP_RELU, EW_F16, EW_F16, 0};
    const op_t *ops[] = {&add, &relu};
    for (size_t o = 0; o < COUNT(ops); ++o) {
        const int pointers = 1 + op_inputs(ops[o]);
        const int64_t small = EW_BATCHED_CAPACITY(EW_BATCHED_SMALL_BLOCK, pointers);
        const int64_t large = EW_BATCHED_CAPACITY(EW_BATCHED_LARGE_BLOCK, pointers);
        const int64_t counts[] = {0, 1, 2, small - 1, small, small + 1, large - 1, large, large + 1, 2 * large + 5};
        for (size_t c = 0; c < COUNT(counts); ++c) {
            if (gu_small_scale() && counts[c] > large + 1)
                continue;
            int64_t *n = gu_host_alloc((size_t)(counts[c] ? counts[c] : 1) * sizeof *n);
            for (int64_t i = 0; i < counts[c]; ++i)
                n[i] = 1 + (int64_t)(gu_rng_next(&rng) % 700); /* no empty entry: every row counts */
            char what[64];
            snprintf(what, sizeof what, "count %" PRId64, counts[c]);
            run_case(ops[o], counts[c], n, 3, 0, what, &rng);
        }
    }
}

/* Lists of one row, alone or among empty entries (the grid's only row need not be the first entry):
 * each call form, scale_add's alpha included, from one element to millions. */
static void test_one_row(void **state)
{
    (void)state;
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x55);
    const op_t ops[] = {{EW_OP_ADD, EW_F32, EW_F32, 0},
                        {EW_OP_RELU, EW_BF16, EW_BF16, 0},
                        {EW_OP_SCALE_ADD, EW_F16, EW_F16, -1.5},
                        {EW_OP_SCALE_ADD, EW_I32, EW_I32, 3},
                        {EW_OP_CAST, EW_F32, EW_F16, 0}};
    const int64_t sizes[] = {1, 777, 5000, gu_small_scale() ? 300001 : 3000001};
    for (size_t o = 0; o < COUNT(ops); ++o)
        for (size_t k = 0; k < COUNT(sizes); ++k) {
            char what[64];
            snprintf(what, sizeof what, "one entry of %" PRId64, sizes[k]);
            run_case(&ops[o], 1, &sizes[k], 3, 0, what, &rng);
            const int64_t among_empty[] = {0, 0, sizes[k], 0};
            snprintf(what, sizeof what, "one entry of %" PRId64 " among empty ones", sizes[k]);
            run_case(&ops[o], COUNT(among_empty), among_empty, 3, 0, what, &rng);
        }
}

/* Sizes from 0 to millions in one list, at every kind of offset. */
static void test_sizes(void **state)
{
    (void)state;
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x22);
    const int64_t large = gu_small_scale() ? 300000 : 3000000;
    const op_t ops[] = {{EW_OP_ADD, EW_F32, EW_F32, 0}, {EW_OP_CAST, EW_F32, EW_F16, 0}, {EW_OP_ADD, EW_I8, EW_I8, 0}};
    for (size_t o = 0; o < COUNT(ops); ++o)
        for (int offsets = 0; offsets < 4; ++offsets) {
            const int64_t count = 40 + (int64_t)(gu_rng_next(&rng) % 60);
            int64_t *n = random_sizes(count, 5000, large, &rng);
            n[0] = large + 17; /* at least one entry of millions */
            n[count - 1] = 0;
            char what[64];
            snprintf(what, sizeof what, "sizes to %" PRId64 ", offsets mode %d", large, offsets);
            run_case(&ops[o], count, n, offsets, 0, what, &rng);
        }
}

/* Every op, a sample of dtypes (the catalogue's sizes and kinds, the table and word forms of 1-byte
 * casts), every offset, and in place where sizes allow. */
static void test_ops(void **state)
{
    (void)state;
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x33);
    const op_t ops[] = {
        {EW_OP_ADD, EW_F32, EW_F32, 0},         {EW_OP_ADD, EW_F16, EW_F16, 0},
        {EW_OP_ADD, EW_BF16, EW_BF16, 0},       {EW_OP_ADD, EW_F64, EW_F64, 0},
        {EW_OP_ADD, EW_I64, EW_I64, 0},         {EW_OP_ADD, EW_U8, EW_U8, 0},
        {EW_OP_ADD, EW_BOOL, EW_BOOL, 0},       {EW_OP_MUL, EW_F32, EW_F32, 0},
        {EW_OP_MUL, EW_I16, EW_I16, 0},         {EW_OP_MUL, EW_BF16, EW_BF16, 0},
        {EW_OP_RELU, EW_F32, EW_F32, 0},        {EW_OP_RELU, EW_F16, EW_F16, 0},
        {EW_OP_RELU, EW_I8, EW_I8, 0},          {EW_OP_RELU, EW_I32, EW_I32, 0},
        {EW_OP_SCALE_ADD, EW_F32, EW_F32, 0.75}, {EW_OP_SCALE_ADD, EW_F16, EW_F16, -1.5},
        {EW_OP_SCALE_ADD, EW_I32, EW_I32, 3},   {EW_OP_SCALE_ADD, EW_U8, EW_U8, 3},
        {EW_OP_SCALE_ADD, EW_BOOL, EW_BOOL, 1}, {EW_OP_CAST, EW_F32, EW_F16, 0},
        {EW_OP_CAST, EW_F16, EW_F32, 0},        {EW_OP_CAST, EW_BF16, EW_F32, 0},
        {EW_OP_CAST, EW_F8E4M3, EW_F32, 0},     {EW_OP_CAST, EW_F16, EW_F8E5M2, 0},
        {EW_OP_CAST, EW_F8E4M3, EW_I8, 0},      {EW_OP_CAST, EW_F8E5M2, EW_F8E4M3, 0},
        {EW_OP_CAST, EW_F32, EW_BOOL, 0},       {EW_OP_CAST, EW_I32, EW_F64, 0},
        {EW_OP_CAST, EW_U8, EW_F16, 0},         {EW_OP_CAST, EW_F8E8M0, EW_BF16, 0},
        {EW_OP_CAST, EW_F32, EW_F8E8M0, 0},
    };
    for (size_t o = 0; o < COUNT(ops); ++o) {
        char what[96];
        const int64_t count = 50 + (int64_t)(gu_rng_next(&rng) % 250);
        int64_t *n = random_sizes(count, 3000, gu_small_scale() ? 20000 : 200000, &rng);
        snprintf(what, sizeof what, "every offset");
        run_case(&ops[o], count, n, 3, 0, what, &rng);
        if (ew_dtype_size(ops[o].out) == ew_dtype_size(ops[o].in)) {
            snprintf(what, sizeof what, "in place");
            run_case(&ops[o], count, n, 3, 1, what, &rng);
        }
    }
}

/* A list captured into a graph: only kernel nodes, nothing run at capture, correct at each replay with
 * new inputs. Large enough for several launches of the largest block. */
static void test_graph(void **state)
{
    (void)state;
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x44);
    const op_t op = {EW_OP_SCALE_ADD, EW_F32, EW_F32, 0.75};
    const int64_t count = 2 * EW_BATCHED_CAPACITY(EW_BATCHED_LARGE_BLOCK, 3) + 7;
    int64_t *n = random_sizes(count, 2000, gu_small_scale() ? 20000 : 500000, &rng);
    list_t *l = list_new(&op, count, n, 3, 0, &rng);
    cudaStream_t stream = gu_stream_new(cudaStreamNonBlocking);
    list_load(l, GU_POISON, &rng);
    GU_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    const ew_status_t status = list_call(l, stream);
    cudaGraph_t graph = NULL;
    GU_CUDA(cudaStreamEndCapture(stream, &graph));
    gu_track_graph(graph);
    GU_EW(status);
    GU_CUDA(cudaDeviceSynchronize());
    unsigned char *out = gu_host_alloc(l->bytes[0]);
    GU_CUDA(cudaMemcpy(out, l->device[0], l->bytes[0], cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < l->bytes[0]; ++i)
        if (out[i] != GU_POISON)
            GU_FAIL("the capture ran the call: out byte %zu is 0x%02x", i, out[i]);
    size_t nodes = 0;
    GU_CUDA(cudaGraphGetNodes(graph, NULL, &nodes));
    cudaGraphNode_t *node = gu_host_alloc((nodes ? nodes : 1) * sizeof *node);
    GU_CUDA(cudaGraphGetNodes(graph, node, &nodes));
    if (nodes < 2)
        GU_FAIL("a list of %" PRId64 " entries captured %zu nodes; expected a launch per 32 KiB block", count, nodes);
    for (size_t i = 0; i < nodes; ++i) {
        enum cudaGraphNodeType type;
        GU_CUDA(cudaGraphNodeGetType(node[i], &type));
        if (type != cudaGraphNodeTypeKernel)
            GU_FAIL("graph node %zu is of type %d, not a kernel", i, (int)type);
    }
    cudaGraphExec_t exec = NULL;
    GU_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    gu_track_graph_exec(exec);
    for (int replay = 0; replay < 3; ++replay) {
        list_load(l, replay % 2 ? GU_POISON_ALT : GU_POISON, &rng);
        GU_CUDA(cudaGraphLaunch(exec, stream));
        GU_CUDA(cudaStreamSynchronize(stream));
        char what[32];
        snprintf(what, sizeof what, "graph replay %d", replay);
        list_check(l, what);
    }
    list_free(l);
}

/* ---- entries past 2^30 elements: the slicing path ---- */

enum { PERIOD_A = 251, PERIOD_B = 241, HUGE_GUARD = 256, HUGE_WINDOW = 4096 };

/* n bytes at p := pattern[j % period]: the pattern uploaded, then copied over itself in doubling
 * spans, each starting at a multiple of the period. */
static void fill_periodic(unsigned char *p, size_t n, const unsigned char *pattern, size_t period)
{
    GU_CUDA(cudaMemcpy(p, pattern, period < n ? period : n, cudaMemcpyHostToDevice));
    for (size_t done = period; done < n; done *= 2)
        GU_CUDA(cudaMemcpy(p + done, p, done < n - done ? done : n - done, cudaMemcpyDeviceToDevice));
}

/* The sum over j < n of value(j % period) * ewt_checksum_weight(j) modulo 2^64, value the elements
 * (size 1 or 2) of one period: residue r's weights are k (2 r + 1) + period k (k - 1) over its k
 * positions. */
static uint64_t periodic_checksum(const void *values, size_t size, uint64_t period, uint64_t n)
{
    uint64_t sum = 0;
    for (uint64_t r = 0; r < period && r < n; ++r) {
        const uint64_t k = (n - r + period - 1) / period;
        const uint64_t value = size == 1 ? ((const uint8_t *)values)[r] : ((const uint16_t *)values)[r];
        sum += value * (k * (2 * r + 1) + period * k * (k - 1));
    }
    return sum;
}

/* Lists holding entries of 2^30 elements and more (rows of EW_BATCHED_MAX_ROW and a tail), among small
 * ones, at aligned and mixed phases: u8 add and a u8 -> bf16 cast (out wider than the input, so each
 * slice advances its pointers by different byte counts). Inputs periodic (periods 251 and 241), so
 * every entry's output is checked whole by the device checksum (tests/checksum.h) against a closed
 * form over one period of the reference, and exactly at its start, across 2^30 and at its end; the
 * guards either side of each entry keep their poison. Named only (ctest:
 * test_batched_gpu.entries_past_2_30, label huge). */
static void test_entries_past_2_30(void **state)
{
    (void)state;
    if (ewt_checksum_weight(0) != 1 || ewt_checksum_weight(1000) != 2001)
        GU_FAIL("the closed form takes ewt_checksum_weight(i) = 2 i + 1");
    const int64_t big = EW_BATCHED_MAX_ROW;
    typedef struct {
        int64_t n;
        int phase[3]; /* element offsets of out, a, b */
    } entry_t;
    const struct {
        op_t op;
        int count;
        entry_t entries[4];
    } lists[] = {
        {{EW_OP_ADD, EW_U8, EW_U8, 0}, 4, {{1000, {0, 0, 0}}, {big + (1 << 20) + 3, {1, 1, 1}}, {big, {3, 0, 5}}, {77, {1, 2, 3}}}},
        {{EW_OP_CAST, EW_BF16, EW_U8, 0}, 2, {{big + 5, {1, 3, 0}}, {100, {0, 1, 0}}}},
    };
    gu_rng_t rng = gu_rng(gu_seed() ^ 0x230);
    unsigned char pattern_a[PERIOD_A], pattern_b[PERIOD_B];
    for (int j = 0; j < PERIOD_A; ++j)
        pattern_a[j] = (unsigned char)gu_rng_next(&rng);
    for (int j = 0; j < PERIOD_B; ++j)
        pattern_b[j] = (unsigned char)gu_rng_next(&rng);
    for (size_t l = 0; l < COUNT(lists); ++l) {
        const op_t *op = &lists[l].op;
        const int binary = op_inputs(op) == 2, count = lists[l].count;
        const size_t out_size = ew_dtype_size(op->out);
        const uint64_t period = binary ? (uint64_t)PERIOD_A * PERIOD_B : PERIOD_A;
        /* one period of inputs and of the reference's output */
        unsigned char *pa = gu_host_alloc(period), *pb = gu_host_alloc(period);
        unsigned char *values = gu_host_alloc(period * out_size);
        for (uint64_t j = 0; j < period; ++j) {
            pa[j] = pattern_a[j % PERIOD_A];
            pb[j] = pattern_b[j % PERIOD_B];
        }
        if (binary)
            ref_binary(op->op, op->out, (int64_t)period, values, pa, pb);
        else
            ref_cast(op->out, op->in, (int64_t)period, values, pa);
        unsigned char *allocation[4][3] = {{NULL}};
        void *out_ptr[4];
        const void *a_ptr[4], *b_ptr[4];
        int64_t n[4];
        for (int i = 0; i < count; ++i) {
            const entry_t *e = &lists[l].entries[i];
            n[i] = e->n;
            for (int j = 0; j < 1 + op_inputs(op); ++j) {
                const size_t size = j == 0 ? out_size : 1;
                const size_t bytes = 2 * HUGE_GUARD + 16 + (size_t)e->n * size;
                GU_CUDA(cudaMalloc((void **)&allocation[i][j], bytes));
                unsigned char *at = allocation[i][j] + HUGE_GUARD + (size_t)e->phase[j] * size;
                if (j == 0) {
                    GU_CUDA(cudaMemset(allocation[i][j], GU_POISON, bytes));
                    out_ptr[i] = at;
                } else {
                    fill_periodic(at, (size_t)e->n, j == 1 ? pattern_a : pattern_b, j == 1 ? PERIOD_A : PERIOD_B);
                    *(j == 1 ? &a_ptr[i] : &b_ptr[i]) = at;
                }
            }
        }
        char what[96];
        op_text(op, what, sizeof what);
        if (binary)
            GU_EW(ew_binary_batched(gu_handle(), op->op, op->out, count, n, out_ptr, a_ptr, b_ptr, NULL));
        else
            GU_EW(ew_cast_batched(gu_handle(), op->out, op->in, count, n, out_ptr, a_ptr, NULL));
        GU_CUDA(cudaDeviceSynchronize());
        for (int i = 0; i < count; ++i) {
            const uint64_t ni = (uint64_t)n[i];
            const unsigned char *out = out_ptr[i];
            /* the guards: poison from the allocation's start to out, and after out's last element */
            char guard[160];
            snprintf(guard, sizeof guard, "%s entry %d: the guard before out", what, i);
            GU_CHECK_POISONED(allocation[i][0], (size_t)(out - allocation[i][0]), guard);
            snprintf(guard, sizeof guard, "%s entry %d: the guard after out", what, i);
            GU_CHECK_POISONED(out + ni * out_size, HUGE_GUARD, guard);
            /* exact windows */
            const uint64_t starts[] = {0, (uint64_t)big - HUGE_WINDOW / 2, ni > HUGE_WINDOW ? ni - HUGE_WINDOW : 0};
            for (size_t w = 0; w < COUNT(starts); ++w) {
                const uint64_t start = starts[w], length = ni - start < HUGE_WINDOW ? ni - start : HUGE_WINDOW;
                if (start >= ni)
                    continue;
                uint16_t got[HUGE_WINDOW], want[HUGE_WINDOW];
                unsigned char wa[HUGE_WINDOW], wb[HUGE_WINDOW];
                GU_CUDA(cudaMemcpy(got, out + start * out_size, length * out_size, cudaMemcpyDeviceToHost));
                for (uint64_t k = 0; k < length; ++k) {
                    memcpy((unsigned char *)want + k * out_size, values + (start + k) % period * out_size, out_size);
                    wa[k] = pa[(start + k) % period];
                    wb[k] = pb[(start + k) % period];
                }
                const gu_inputs_t inputs = {op_inputs(op), {op->in, op->in}, {wa, binary ? wb : NULL}};
                if (gu_compare(op->out, (int64_t)length, want, got, &inputs, what) != 0)
                    GU_FAIL("%s entry %d of %" PRIu64 ": elements from %" PRIu64 " differ", what, i, ni, start);
            }
            uint64_t sum = 0;
            GU_CUDA(ewt_checksum(out, ni, (int)out_size, &sum, NULL));
            const uint64_t expected = periodic_checksum(values, out_size, period, ni);
            if (sum != expected)
                GU_FAIL("%s entry %d of %" PRIu64 ": checksum 0x%016" PRIx64 ", the reference's 0x%016" PRIx64
                        ": some element outside the windows is wrong",
                        what, i, ni, sum, expected);
        }
        for (int i = 0; i < count; ++i)
            for (int j = 0; j < 3; ++j)
                if (allocation[i][j] != NULL)
                    cudaFree(allocation[i][j]);
    }
}

int main(int argc, char **argv)
{
    gu_require_gpu("test_batched_gpu");
    const char *params = getenv("EW_BATCHED_PARAMS");
    printf("test_batched_gpu: EW_TEST_SCALE=%s, EW_TEST_SEED=0x%" PRIx64 ", EW_BATCHED_PARAMS=%s\n",
           gu_small_scale() ? "small" : "full", gu_seed(), params ? params : "(unset)");
    fflush(stdout);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_counts, gu_teardown),
        cmocka_unit_test_teardown(test_one_row, gu_teardown),
        cmocka_unit_test_teardown(test_sizes, gu_teardown),
        cmocka_unit_test_teardown(test_ops, gu_teardown),
        cmocka_unit_test_teardown(test_graph, gu_teardown),
        /* run only when named: */
        cmocka_unit_test_teardown(test_entries_past_2_30, gu_teardown),
    };
    enum { NAMED_ONLY = 1 };
    int status = gu_run_tests("batched_gpu", tests, COUNT(tests), NAMED_ONLY, argc, argv);
    ew_handle_destroy(gu_handle());
    return status;
}
