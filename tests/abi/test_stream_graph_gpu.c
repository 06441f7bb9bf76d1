/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The library on the caller's streams: calls on a non-blocking stream (and the per-thread default
 * stream) are ordered after earlier work on that stream; a chain of calls captured into a CUDA graph
 * (global capture mode) replays correctly with new inputs each time; eight dependent calls queued
 * back to back, the small ones reading the end of the large ones, see each other's results; the handle
 * refuses to run while another device is current (needs two GPUs). Results are checked bit for bit
 * against the CPU reference (tests/ref, rules in docs/semantics.md).
 *
 * `test_stream_graph_gpu` runs every test this machine's GPUs allow: with one GPU it leaves out
 * test_device_mismatch, and says so. `test_stream_graph_gpu test_device_mismatch` runs that test alone
 * and exits 77 (ctest: skipped) on a machine with one GPU, so that its own ctest entry shows the skip.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_util.h"
#include "ref/ref.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static int device_count;

static int64_t big_n(void) { return gu_small_scale() ? 65537 : (1 << 20) + 3; }

/* ---- one call of any op, with its reference ---- */

typedef struct {
    ew_op_t op;
    ew_dtype_t out, in;
    double alpha;
    int out_offset, a_offset, b_offset;
} call_t;

static int call_arity(const call_t *c) { return c->op == EW_OP_RELU || c->op == EW_OP_CAST ? 1 : 2; }

static ew_status_t call_run(ew_handle_t handle, const call_t *c, int64_t n, void *out, const void *a,
                            const void *b, cudaStream_t stream)
{
    switch (c->op) {
    case EW_OP_ADD:
    case EW_OP_MUL: return ew_binary(handle, c->op, c->out, n, out, a, b, stream);
    case EW_OP_RELU: return ew_unary(handle, c->op, c->out, n, out, a, stream);
    case EW_OP_CAST: return ew_cast(handle, c->out, c->in, n, out, a, stream);
    case EW_OP_SCALE_ADD: return ew_scale_add(handle, c->out, c->alpha, n, out, a, b, stream);
    default: break; /* the scaled casts: tests/device/test_scaled_gpu.c */
    }
    return EW_ERROR_NOT_SUPPORTED;
}

static void call_reference(const call_t *c, int64_t n, void *out, const void *a, const void *b)
{
    switch (c->op) {
    case EW_OP_ADD:
    case EW_OP_MUL: ref_binary(c->op, c->out, n, out, a, b); break;
    case EW_OP_RELU: ref_unary(c->op, c->out, n, out, a); break;
    case EW_OP_CAST: ref_cast(c->out, c->in, n, out, a); break;
    case EW_OP_SCALE_ADD: ref_scale_add(c->out, c->alpha, n, out, a, b); break;
    default: break; /* the scaled casts: tests/device/test_scaled_gpu.c */
    }
}

static void call_name(const call_t *c, char *text, size_t size)
{
    if (c->op == EW_OP_CAST)
        snprintf(text, size, "cast %s->%s offsets out+%d x+%d", ew_dtype_name(c->in), ew_dtype_name(c->out),
                 c->out_offset, c->a_offset);
    else
        snprintf(text, size, "%s %s alpha=%g offsets out+%d a+%d b+%d", ref_op_name(c->op),
                 ew_dtype_name(c->out), c->alpha, c->out_offset, c->a_offset, c->b_offset);
}

/* ---- calls on a non-default stream ---- */

/* Holds the stream for a while so that a kernel launched on any other stream would run first. */
static void CUDART_CB hold_stream(void *unused)
{
    (void)unused;
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
}

/* On `stream`: a pause, the inputs copied in from pinned memory, the call. The device inputs hold
 * poison until the copies run, so a call launched anywhere but on `stream` computes on poison and
 * fails the comparison. */
static void check_call_on_stream(const call_t *c, cudaStream_t stream, const char *stream_name, uint64_t seed)
{
    static const uint8_t poisons[] = {GU_POISON, GU_POISON_ALT};
    int64_t n = big_n();
    char name[160], what[256];
    call_name(c, name, sizeof name);
    snprintf(what, sizeof what, "%s n=%" PRId64 " on %s", name, n, stream_name);

    gu_buffer_t *a = gu_buffer_new(c->in, n), *b = NULL, *out = gu_buffer_new(c->out, n);
    if (call_arity(c) == 2)
        b = gu_buffer_new(c->in, n);
    int64_t region = gu_buffer_region_elems(a);
    size_t in_size = ew_dtype_size(c->in);
    gu_rng_t rng = gu_rng(seed);
    unsigned char *a_host = gu_pinned_alloc((size_t)region * in_size), *b_host = NULL;
    gu_fill_random(c->in, region, a_host, &rng);
    if (b != NULL) {
        b_host = gu_pinned_alloc((size_t)region * in_size);
        gu_fill_random(c->in, region, b_host, &rng);
    }
    const unsigned char *a_elems = a_host + (size_t)c->a_offset * in_size;
    const unsigned char *b_elems = b_host != NULL ? b_host + (size_t)c->b_offset * in_size : NULL;
    void *expected = gu_host_alloc((size_t)n * ew_dtype_size(c->out));
    call_reference(c, n, expected, a_elems, b_elems);
    gu_inputs_t inputs = {call_arity(c), {c->in, c->in}, {a_elems, b_elems}};

    for (size_t p = 0; p < COUNT(poisons); ++p) {
        gu_buffer_poison(a, GU_POISON);
        if (b != NULL)
            gu_buffer_poison(b, GU_POISON);
        gu_buffer_poison(out, poisons[p]);
        GU_CUDA(cudaLaunchHostFunc(stream, hold_stream, NULL));
        GU_CUDA(
            cudaMemcpyAsync(gu_at(a, 0), a_host, (size_t)region * in_size, cudaMemcpyHostToDevice, stream));
        memcpy(gu_image_at(a, 0), a_host, (size_t)region * in_size);
        if (b != NULL) {
            GU_CUDA(cudaMemcpyAsync(gu_at(b, 0), b_host, (size_t)region * in_size, cudaMemcpyHostToDevice,
                                    stream));
            memcpy(gu_image_at(b, 0), b_host, (size_t)region * in_size);
        }
        ew_status_t status = call_run(gu_handle(), c, n, gu_at(out, c->out_offset), gu_at(a, c->a_offset),
                                      b != NULL ? gu_at(b, c->b_offset) : NULL, stream);
        if (status != EW_SUCCESS)
            GU_FAIL("%s: returned %s: %s", what, ew_status_string(status), ew_get_last_error_message());
        GU_CUDA(cudaStreamSynchronize(stream));
        int64_t ambiguous = GU_CHECK_OUTPUT(out, c->out_offset, n, expected, &inputs, what);
        GU_CHECK_UNCHANGED(a, what);
        if (b != NULL)
            GU_CHECK_UNCHANGED(b, what);
        if (ambiguous == 0)
            break;
    }
}

/* op, out, in, alpha, offsets of out, a (or x), b */
/* clang-format off */
static const call_t stream_calls[] = {
    {EW_OP_ADD, EW_F32, EW_F32, 0, 0, 0, 0},
    {EW_OP_MUL, EW_BF16, EW_BF16, 0, 1, 1, 1},
    {EW_OP_RELU, EW_F16, EW_F16, 0, 0, 3, 0},
    {EW_OP_CAST, EW_F16, EW_F64, 0, 0, 0, 0},
    {EW_OP_CAST, EW_F8E4M3, EW_F32, 0, 3, 1, 0},
    {EW_OP_SCALE_ADD, EW_F32, EW_F32, -3.25, 0, 0, 1},
    {EW_OP_SCALE_ADD, EW_I32, EW_I32, -3, 2, 2, 2},
    {EW_OP_ADD, EW_U8, EW_U8, 0, 5, 5, 5},
};
/* clang-format on */

static void test_non_blocking_stream(void **state)
{
    (void)state;
    cudaStream_t stream = gu_stream_new(cudaStreamNonBlocking);
    for (size_t i = 0; i < COUNT(stream_calls); ++i)
        check_call_on_stream(&stream_calls[i], stream, "a cudaStreamNonBlocking stream", gu_seed() + i);
}

static void test_per_thread_default_stream(void **state)
{
    (void)state;
    /* The per-thread stream does not wait for the legacy default stream the library would wrongly use. */
    check_call_on_stream(&stream_calls[0], cudaStreamPerThread, "cudaStreamPerThread", gu_seed() + 100);
    check_call_on_stream(&stream_calls[4], cudaStreamPerThread, "cudaStreamPerThread", gu_seed() + 101);
}

/* A device buffer of each dtype for n elements at any offset, poisoned, and a host array the size of
 * its region. */
static void buffers_new(int count, const ew_dtype_t dtype[], int64_t n, gu_buffer_t *buffer[], void *host[])
{
    for (int t = 0; t < count; ++t) {
        buffer[t] = gu_buffer_new(dtype[t], n);
        host[t] = gu_host_alloc((size_t)gu_buffer_region_elems(buffer[t]) * ew_dtype_size(dtype[t]));
    }
}

/* ---- calls back to back on one stream ---- */

/* Calls queued with no wait between, each reading what the one before wrote: on cc >= 9.0 a call
 * may start while the previous one finishes (docs/using.md). The small calls read the end of the
 * large call before them, which its last blocks write, while their own first blocks start first:
 * a call that did not wait for its predecessor would read the poison there and fail. Buffers keep
 * one offset each, so the calls mix aligned, same-phase and mixed-phase plans. */
enum { B_A, B_B, B_P, B_Q, B_H, B_COUNT };
static const ew_dtype_t back_dtype[B_COUNT] = {EW_F32, EW_F32, EW_F32, EW_F32, EW_F16};
static const int back_offset[B_COUNT] = {0, 2, 0, 1, 3};

static void check_back_to_back(int64_t n, uint64_t seed)
{
    ew_handle_t h = gu_handle();
    const int64_t m = n / 256 + 1, end = n - m; /* the small calls: m elements, the last ones of n */
    gu_buffer_t *buffer[B_COUNT];
    void *host[B_COUNT];
    buffers_new(B_COUNT, back_dtype, n, buffer, host);
    gu_rng_t rng = gu_rng(seed);
    for (int t = B_A; t <= B_B; ++t) {
        gu_fill_random(back_dtype[t], gu_buffer_region_elems(buffer[t]), host[t], &rng);
        gu_buffer_load(buffer[t], host[t], gu_buffer_region_elems(buffer[t]));
    }
    const float *a = (const float *)host[B_A] + back_offset[B_A];
    const float *b = (const float *)host[B_B] + back_offset[B_B];
    float *p = host[B_P], *q = host[B_Q];
    uint16_t *half = host[B_H];
    const double alpha = -0.75;

    cudaStream_t stream = gu_stream_new(cudaStreamNonBlocking);
    float *dp = gu_at(buffer[B_P], back_offset[B_P]), *dq = gu_at(buffer[B_Q], back_offset[B_Q]);
    const float *da = gu_at(buffer[B_A], back_offset[B_A]), *db = gu_at(buffer[B_B], back_offset[B_B]);
    uint16_t *dh = gu_at(buffer[B_H], back_offset[B_H]);
    GU_EW(ew_binary(h, EW_OP_ADD, EW_F32, n, dp, da, db, stream));               /* P = A + B */
    GU_EW(ew_unary(h, EW_OP_RELU, EW_F32, m, dq, dp + end, stream));             /* Q[0, m) = relu(P end) */
    GU_EW(ew_binary(h, EW_OP_MUL, EW_F32, n, dp, dp, da, stream));               /* P *= A */
    GU_EW(ew_scale_add(h, EW_F32, alpha, m, dq + m, dp + end, db, stream));      /* Q[m, 2m) = a P end + B */
    GU_EW(ew_cast(h, EW_F16, EW_F32, n, dh, dp, stream));                        /* H = P */
    GU_EW(ew_cast(h, EW_F32, EW_F16, m, dq + 2 * m, dh + end, stream));          /* Q[2m, 3m) = H end */
    GU_EW(ew_binary(h, EW_OP_ADD, EW_F32, n, dp, dp, da, stream));               /* P += A */
    GU_EW(ew_binary(h, EW_OP_MUL, EW_F32, m, dq + 3 * m, dp + end, dq, stream)); /* Q[3m, 4m) = P end * Q */

    ref_binary(EW_OP_ADD, EW_F32, n, p, a, b);
    ref_unary(EW_OP_RELU, EW_F32, m, q, p + end);
    float *before = gu_host_alloc((size_t)n * sizeof(float));
    memcpy(before, p, (size_t)n * sizeof(float));
    ref_binary(EW_OP_MUL, EW_F32, n, p, before, a);
    ref_scale_add(EW_F32, alpha, m, q + m, p + end, b);
    ref_cast(EW_F16, EW_F32, n, half, p);
    ref_cast(EW_F32, EW_F16, m, q + 2 * m, half + end);
    memcpy(before, p, (size_t)n * sizeof(float));
    ref_binary(EW_OP_ADD, EW_F32, n, p, before, a);
    ref_binary(EW_OP_MUL, EW_F32, m, q + 3 * m, p + end, q);
    GU_CUDA(cudaStreamSynchronize(stream));

    const gu_inputs_t p_inputs = {2, {EW_F32, EW_F32}, {before, a}}, q_inputs = {0, {EW_F32}, {NULL}};
    char what[160];
    snprintf(what, sizeof what, "8 calls back to back (n=%" PRId64 "): P after P += A", n);
    GU_CHECK_OUTPUT(buffer[B_P], back_offset[B_P], n, p, &p_inputs, what);
    snprintf(what, sizeof what, "8 calls back to back (n=%" PRId64 "): H = f16(P)", n);
    GU_CHECK_OUTPUT(buffer[B_H], back_offset[B_H], n, half, &q_inputs, what);
    snprintf(what, sizeof what, "8 calls back to back (n=%" PRId64 ", m=%" PRId64 "): Q, four small calls", n,
             m);
    GU_CHECK_OUTPUT(buffer[B_Q], back_offset[B_Q], 4 * m, q, &q_inputs, what);
    for (int t = B_A; t <= B_B; ++t)
        GU_CHECK_UNCHANGED(buffer[t], "8 calls back to back: an input");
    for (int t = 0; t < B_COUNT; ++t)
        gu_buffer_free(buffer[t]);
}

static void test_back_to_back_calls(void **state)
{
    (void)state;
    /* The large size three times: a call that did not wait fails some chains, not all (NOTES §22). */
    const int64_t full[] = {4099, (1 << 20) + 5, (1 << 24) + 5, (1 << 24) + 5, (1 << 24) + 5},
                  small[] = {4099, 65537};
    const int64_t *sizes = gu_small_scale() ? small : full;
    size_t count = gu_small_scale() ? COUNT(small) : COUNT(full);
    for (size_t i = 0; i < count; ++i)
        check_back_to_back(sizes[i], gu_seed() + 200 + i);
}

/* ---- a chain captured into a graph, replayed ---- */

/* x (f16) -cast-> t1 (f32) -add y-> t2 (f32) -relu in place-> t2 -scale_add(alpha, t2, z)-> t3 (f32)
 * -cast-> out (bf16). Offsets mix the vector path (x, t1), one at a time (t1 vs t2's phase), and the
 * vector path with a head (t2, z, t3, out at element 1). */
enum { T_X, T_Y, T_Z, T_T1, T_T2, T_T3, T_OUT, T_COUNT };
static const ew_dtype_t chain_dtype[T_COUNT] = {EW_F16, EW_F32, EW_F32, EW_F32, EW_F32, EW_F32, EW_BF16};
static const int chain_offset[T_COUNT] = {0, 1, 1, 0, 1, 1, 1};
static const char *const chain_name[T_COUNT] = {
    "x", "y", "z", "t1 = cast(x)", "t2 = relu(t1 + y)", "t3 = scale_add(t2, z)", "out = cast(t3)"};
static const double chain_alpha = 1.0 / 3.0;

static void enqueue_chain(gu_buffer_t *const buffer[T_COUNT], int64_t n, cudaStream_t stream)
{
    ew_handle_t h = gu_handle();
#define AT(t) gu_at(buffer[t], chain_offset[t])
    GU_EW(ew_cast(h, EW_F32, EW_F16, n, AT(T_T1), AT(T_X), stream));
    GU_EW(ew_binary(h, EW_OP_ADD, EW_F32, n, AT(T_T2), AT(T_T1), AT(T_Y), stream));
    GU_EW(ew_unary(h, EW_OP_RELU, EW_F32, n, AT(T_T2), AT(T_T2), stream));
    GU_EW(ew_scale_add(h, EW_F32, chain_alpha, n, AT(T_T3), AT(T_T2), AT(T_Z), stream));
    GU_EW(ew_cast(h, EW_BF16, EW_F32, n, AT(T_OUT), AT(T_T3), stream));
#undef AT
}

static void test_graph_capture_and_replay(void **state)
{
    (void)state;
    int64_t n = gu_small_scale() ? 4099 : 65537;
    int replays = 4;
    gu_buffer_t *buffer[T_COUNT];
    void *host[T_COUNT];
    buffers_new(T_COUNT, chain_dtype, n, buffer, host);

    cudaStream_t stream = gu_stream_new(cudaStreamNonBlocking);
    GU_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    enqueue_chain(buffer, n, stream);
    cudaGraph_t graph = NULL;
    GU_CUDA(cudaStreamEndCapture(stream, &graph));
    gu_track_graph(graph);

    /* Captured, not run: every buffer still holds its poison. */
    GU_CUDA(cudaDeviceSynchronize());
    for (int t = 0; t < T_COUNT; ++t)
        GU_CHECK_UNCHANGED(buffer[t], "after capture, before any replay");

    /* Only kernels: nothing allocated, copied or synchronised inside a call. */
    size_t node_count = 0;
    GU_CUDA(cudaGraphGetNodes(graph, NULL, &node_count));
    if (node_count < 5)
        GU_FAIL("the graph of 5 calls has %zu nodes", node_count);
    cudaGraphNode_t *nodes = gu_host_alloc(node_count * sizeof *nodes);
    GU_CUDA(cudaGraphGetNodes(graph, nodes, &node_count));
    for (size_t i = 0; i < node_count; ++i) {
        enum cudaGraphNodeType type;
        GU_CUDA(cudaGraphNodeGetType(nodes[i], &type));
        if (type != cudaGraphNodeTypeKernel)
            GU_FAIL("graph node %zu has type %d, not a kernel", i, (int)type);
    }

    cudaGraphExec_t exec = NULL;
    GU_CUDA(cudaGraphInstantiateWithFlags(&exec, graph, 0));
    gu_track_graph_exec(exec);

    void *expected[T_COUNT] = {0};
    for (int t = T_T1; t < T_COUNT; ++t)
        expected[t] = gu_host_alloc((size_t)n * ew_dtype_size(chain_dtype[t]));
    gu_rng_t rng = gu_rng(gu_seed() ^ UINT64_C(0x6A09E667F3BCC908));
    for (int replay = 0; replay < replays; ++replay) {
        /* new inputs each time, so a replay that reused old results would show */
        for (int t = T_X; t <= T_Z; ++t) {
            int64_t region = gu_buffer_region_elems(buffer[t]);
            gu_fill_random(chain_dtype[t], region, host[t], &rng);
            gu_buffer_load(buffer[t], host[t], region);
        }
        for (int t = T_T1; t < T_COUNT; ++t)
            gu_buffer_poison(buffer[t], replay % 2 ? GU_POISON_ALT : GU_POISON);

        const unsigned char *x = (const unsigned char *)host[T_X] + chain_offset[T_X] * ew_dtype_size(EW_F16);
        const unsigned char *y = (const unsigned char *)host[T_Y] + chain_offset[T_Y] * ew_dtype_size(EW_F32);
        const unsigned char *z = (const unsigned char *)host[T_Z] + chain_offset[T_Z] * ew_dtype_size(EW_F32);
        ref_cast(EW_F32, EW_F16, n, expected[T_T1], x);
        ref_binary(EW_OP_ADD, EW_F32, n, expected[T_T2], expected[T_T1], y);
        void *sum = gu_host_alloc((size_t)n * sizeof(float));
        memcpy(sum, expected[T_T2], (size_t)n * sizeof(float));
        ref_unary(EW_OP_RELU, EW_F32, n, expected[T_T2], expected[T_T2]);
        ref_scale_add(EW_F32, chain_alpha, n, expected[T_T3], expected[T_T2], z);
        ref_cast(EW_BF16, EW_F32, n, expected[T_OUT], expected[T_T3]);

        GU_CUDA(cudaGraphLaunch(exec, stream));
        GU_CUDA(cudaStreamSynchronize(stream));

        const gu_inputs_t inputs[T_COUNT] = {
            [T_T1] = {1, {EW_F16}, {x}},
            [T_T2] = {1, {EW_F32}, {sum}},
            [T_T3] = {2, {EW_F32, EW_F32}, {expected[T_T2], z}},
            [T_OUT] = {1, {EW_F32}, {expected[T_T3]}},
        };
        for (int t = T_X; t < T_COUNT; ++t) {
            char what[128];
            snprintf(what, sizeof what, "graph replay %d of %d, %s (n=%" PRId64 ")", replay + 1, replays,
                     chain_name[t], n);
            if (t <= T_Z)
                GU_CHECK_UNCHANGED(buffer[t], what);
            else
                GU_CHECK_OUTPUT(buffer[t], chain_offset[t], n, expected[t], &inputs[t], what);
        }
    }
}

/* ---- the handle's device must be current ---- */

static void test_device_mismatch(void **state)
{
    (void)state;
    if (device_count < 2)
        gu_skip(GU_SKIP_ONE_GPU,
                "test_device_mismatch: EW_ERROR_DEVICE_MISMATCH needs 2 GPUs; this machine has %d",
                device_count);
    int64_t n = 4099;
    gu_rng_t rng = gu_rng(gu_seed() + 7);
    for (int handle_device = 0; handle_device < 2; ++handle_device) {
        int other = 1 - handle_device;
        ew_handle_t handle = NULL;
        GU_EW(ew_handle_create(handle_device, &handle));
        GU_CUDA(cudaSetDevice(handle_device));
        gu_buffer_t *a = gu_buffer_new(EW_F32, n), *b = gu_buffer_new(EW_F32, n),
                    *out = gu_buffer_new(EW_F32, n);
        float *a_host = gu_host_alloc((size_t)gu_buffer_region_elems(a) * sizeof(float));
        float *b_host = gu_host_alloc((size_t)gu_buffer_region_elems(b) * sizeof(float));
        gu_fill_random(EW_F32, gu_buffer_region_elems(a), a_host, &rng);
        gu_fill_random(EW_F32, gu_buffer_region_elems(b), b_host, &rng);
        gu_buffer_load(a, a_host, gu_buffer_region_elems(a));
        gu_buffer_load(b, b_host, gu_buffer_region_elems(b));

        /* Another device current: refused before anything is launched, nothing written. */
        GU_CUDA(cudaSetDevice(other));
        ew_status_t status =
            ew_binary(handle, EW_OP_ADD, EW_F32, n, gu_at(out, 0), gu_at(a, 0), gu_at(b, 0), NULL);
        const char *message = ew_get_last_error_message();
        GU_CUDA(cudaSetDevice(handle_device));
        if (status != EW_ERROR_DEVICE_MISMATCH)
            GU_FAIL("handle for device %d called with device %d current: returned %s, expected "
                    "EW_ERROR_DEVICE_MISMATCH (%s)",
                    handle_device, other, ew_status_string(status), message);
        if (message == NULL || message[0] == '\0')
            GU_FAIL("EW_ERROR_DEVICE_MISMATCH without a last-error message");
        GU_CUDA(cudaDeviceSynchronize());
        GU_CHECK_UNCHANGED(out, "output after EW_ERROR_DEVICE_MISMATCH");

        /* Its own device current: runs and is right. */
        float *expected = gu_host_alloc((size_t)n * sizeof(float));
        ref_binary(EW_OP_ADD, EW_F32, n, expected, a_host, b_host);
        GU_EW(ew_binary(handle, EW_OP_ADD, EW_F32, n, gu_at(out, 0), gu_at(a, 0), gu_at(b, 0), NULL));
        gu_inputs_t inputs = {2, {EW_F32, EW_F32}, {a_host, b_host}};
        GU_CHECK_OUTPUT(out, 0, n, expected, &inputs, "add f32 on the handle's own device");
        gu_buffer_free(a);
        gu_buffer_free(b);
        gu_buffer_free(out);
        GU_EW(ew_handle_destroy(handle));
    }
    GU_CUDA(cudaSetDevice(0));
}

int main(int argc, char **argv)
{
    device_count = gu_require_gpu("test_stream_graph_gpu");
    printf("test_stream_graph_gpu: EW_TEST_SCALE=%s, EW_TEST_SEED=0x%" PRIx64 "\n",
           gu_small_scale() ? "small" : "full", gu_seed());
    fflush(stdout);
    /* The two-GPU test last: the plain run leaves it out on a one-GPU machine. */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_non_blocking_stream, gu_teardown),
        cmocka_unit_test_teardown(test_per_thread_default_stream, gu_teardown),
        cmocka_unit_test_teardown(test_back_to_back_calls, gu_teardown),
        cmocka_unit_test_teardown(test_graph_capture_and_replay, gu_teardown),
        cmocka_unit_test_teardown(test_device_mismatch, gu_teardown),
    };
    size_t named_only = 0;
    if (argc == 1 && device_count < 2) {
        printf("test_device_mismatch left out: it needs 2 GPUs, this machine has %d (run "
               "\"%s test_device_mismatch\" to see it skip)\n",
               device_count, argv[0]);
        named_only = 1;
    }
    int status = gu_run_tests("stream_graph_gpu", tests, COUNT(tests), named_only, argc, argv);
    ew_handle_destroy(gu_handle());
    return status;
}
