/* SPDX-License-Identifier: Apache-2.0 */
/* ew-bench-catalogue: times libelementwise over the catalogue, op x dtype x n x alignment, against
 * cudaMemcpy D2D (bench/sweep.c, shared with the CUB peer; method: docs/design.md), in two columns:
 * back-to-back calls on a handle as the environment makes it (programmatic dependent launches on
 * cc >= 9.0 by default), and isolated calls on a second handle created with EW_DEPENDENT_LAUNCH=0, plain
 * stream order as CUB and PyTorch launch. --host-overhead compares the host time of ew_binary on both
 * handles with a raw cudaLaunchKernel. ./ew-bench-catalogue --help lists the options. */
#include <stdio.h>

#include "elementwise.h"
#include "sweep.h"

typedef struct {
    ew_handle_t handle[EWB_COLUMNS]; /* each column's (ewb_create_handles) */
} library_t;

static int supports(void *ctx, const ewb_entry_t *e)
{
    (void)ctx;
    return ew_is_supported(e->op, e->out, e->in);
}

static int setup(void *ctx, int device)
{
    return ewb_create_handles(device, 1, "ew", ((library_t *)ctx)->handle);
}

static int report(ew_status_t status, const char *call) { return ewb_ew_ok(status, call) ? 0 : -1; }

static int call_on(ew_handle_t h, const ewb_entry_t *e, int64_t n, void *out, const void *a, const void *b,
                   cudaStream_t stream)
{
    switch (e->op) {
    case EW_OP_ADD:
    case EW_OP_MUL: return report(ew_binary(h, e->op, e->out, n, out, a, b, stream), "ew_binary");
    case EW_OP_RELU: return report(ew_unary(h, e->op, e->out, n, out, a, stream), "ew_unary");
    case EW_OP_CAST: return report(ew_cast(h, e->out, e->in, n, out, a, stream), "ew_cast");
    case EW_OP_SCALE_ADD:
        return report(ew_scale_add(h, e->out, ewb_alpha(e->out), n, out, a, b, stream), "ew_scale_add");
    default: fprintf(stderr, "op %d is not an op of the library\n", (int)e->op); return -1;
    }
}

static int call(void *ctx, const ewb_entry_t *e, int64_t n, void *out, const void *a, const void *b,
                cudaStream_t stream)
{
    return call_on(((library_t *)ctx)->handle[EWB_BACK_TO_BACK], e, n, out, a, b, stream);
}

static int call_isolated(void *ctx, const ewb_entry_t *e, int64_t n, void *out, const void *a, const void *b,
                         cudaStream_t stream)
{
    return call_on(((library_t *)ctx)->handle[EWB_ISOLATED], e, n, out, a, b, stream);
}

static int host_add(void *ctx, int64_t n, float *out, const float *a, const float *b, cudaStream_t stream)
{
    return report(
        ew_binary(((library_t *)ctx)->handle[EWB_BACK_TO_BACK], EW_OP_ADD, EW_F32, n, out, a, b, stream),
        "ew_binary");
}

static int host_add_isolated(void *ctx, int64_t n, float *out, const float *a, const float *b,
                             cudaStream_t stream)
{
    return report(
        ew_binary(((library_t *)ctx)->handle[EWB_ISOLATED], EW_OP_ADD, EW_F32, n, out, a, b, stream),
        "ew_binary");
}

int main(int argc, char **argv)
{
    library_t library = {{NULL, NULL}};
    ewb_impl_t impl = {
        .name = "ew",
        .memcpy_name = "memcpy",
        .supports = supports,
        .setup = setup,
        .call = call,
        .call_isolated = call_isolated,
        .host = {{"ew", host_add, host_add_isolated}, {"raw", ewb_raw_launch_add_f32, NULL}},
        .ctx = &library,
    };
    int status = ewb_main(argc, argv, &impl);
    for (int k = 0; k < EWB_COLUMNS; ++k)
        if (library.handle[k])
            ew_handle_destroy(library.handle[k]);
    return status;
}
