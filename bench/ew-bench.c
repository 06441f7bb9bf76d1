/* ew-bench: times libelementwise over op x dtype x n x alignment against cudaMemcpy D2D, with the
 * method of bench/NOTES.md (the harness is shared with the CUB peer). --host-overhead compares the
 * host time of ew_binary with a raw cudaLaunchKernel. ./ew-bench --help lists the options. */
#include <stdio.h>

#include "elementwise.h"
#include "harness.h"

typedef struct {
    ew_handle_t handle;
} library_t;

static int supports(void *ctx, const ewb_entry_t *e)
{
    (void)ctx;
    return ew_is_supported(e->op, e->out, e->in);
}

static int setup(void *ctx, int device)
{
    library_t *library = ctx;
    ew_status_t status = ew_handle_create(device, &library->handle);
    if (status != EW_SUCCESS) {
        fprintf(stderr, "ew_handle_create: %s: %s\n", ew_status_string(status), ew_get_last_error_message());
        return -1;
    }
    return 0;
}

static int report(ew_status_t status, const char *call)
{
    if (status == EW_SUCCESS)
        return 0;
    fprintf(stderr, "%s: %s: %s\n", call, ew_status_string(status), ew_get_last_error_message());
    return -1;
}

static int call(void *ctx, const ewb_entry_t *e, int64_t n, void *out, const void *a, const void *b,
                cudaStream_t stream)
{
    ew_handle_t h = ((library_t *)ctx)->handle;
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

static int host_add(void *ctx, int64_t n, float *out, const float *a, const float *b, cudaStream_t stream)
{
    return report(ew_binary(((library_t *)ctx)->handle, EW_OP_ADD, EW_F32, n, out, a, b, stream),
                  "ew_binary");
}

int main(int argc, char **argv)
{
    library_t library = {NULL};
    ewb_impl_t impl = {
        .name = "ew",
        .memcpy_name = "memcpy",
        .supports = supports,
        .setup = setup,
        .call = call,
        .host = {{"ew", host_add}, {"raw", ewb_raw_launch_add_f32}},
        .ctx = &library,
    };
    int status = ewb_main(argc, argv, &impl);
    ew_handle_destroy(library.handle);
    return status;
}
