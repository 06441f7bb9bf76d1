/* SPDX-License-Identifier: Apache-2.0 */
/* ew-bench: times libelementwise over op x dtype x n x alignment against cudaMemcpy D2D (method:
 * docs/design.md; the harness is shared with the CUB peer), in two columns: back-to-back calls on a
 * handle as the environment makes it (programmatic dependent launches on cc >= 9.0 by default), and
 * isolated calls on a second handle created with EW_DEPENDENT_LAUNCH=0, plain stream order as CUB and
 * PyTorch launch. --host-overhead compares the host time of ew_binary on both handles with a raw
 * cudaLaunchKernel. ./ew-bench --help lists the options. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elementwise.h"
#include "harness.h"

typedef struct {
    ew_handle_t handle;   /* the back-to-back column's */
    ew_handle_t isolated; /* the isolated column's: EW_DEPENDENT_LAUNCH=0 */
} library_t;

static int supports(void *ctx, const ewb_entry_t *e)
{
    (void)ctx;
    return ew_is_supported(e->op, e->out, e->in);
}

static int create(int device, ew_handle_t *handle, const char *what)
{
    ew_status_t status = ew_handle_create(device, handle);
    if (status == EW_SUCCESS)
        return 0;
    fprintf(stderr, "ew_handle_create (%s): %s: %s\n", what, ew_status_string(status), ew_get_last_error_message());
    return -1;
}

/* The handle as the environment makes it, then one with EW_DEPENDENT_LAUNCH=0 (read at creation only),
 * the variable put back as it was. */
static int setup(void *ctx, int device)
{
    library_t *library = ctx;
    const char *setting = getenv("EW_DEPENDENT_LAUNCH");
    char *saved = setting ? strdup(setting) : NULL;
    if (create(device, &library->handle, "back-to-back column") != 0)
        return free(saved), -1;
    int failed = setenv("EW_DEPENDENT_LAUNCH", "0", 1) != 0 ||
                 create(device, &library->isolated, "isolated column, EW_DEPENDENT_LAUNCH=0") != 0;
    if (saved ? setenv("EW_DEPENDENT_LAUNCH", saved, 1) : unsetenv("EW_DEPENDENT_LAUNCH"))
        failed = 1;
    printf("# ew: back-to-back column: a handle with EW_DEPENDENT_LAUNCH%s%s%s; isolated column: a handle "
           "with EW_DEPENDENT_LAUNCH=0\n",
           saved ? "=" : " unset", saved ? saved : "", saved ? "" : " (dependent launches on cc >= 9.0)");
    free(saved);
    return failed ? -1 : 0;
}

static int report(ew_status_t status, const char *call)
{
    if (status == EW_SUCCESS)
        return 0;
    fprintf(stderr, "%s: %s: %s\n", call, ew_status_string(status), ew_get_last_error_message());
    return -1;
}

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
    return call_on(((library_t *)ctx)->handle, e, n, out, a, b, stream);
}

static int call_isolated(void *ctx, const ewb_entry_t *e, int64_t n, void *out, const void *a, const void *b,
                         cudaStream_t stream)
{
    return call_on(((library_t *)ctx)->isolated, e, n, out, a, b, stream);
}

static int host_add(void *ctx, int64_t n, float *out, const float *a, const float *b, cudaStream_t stream)
{
    return report(ew_binary(((library_t *)ctx)->handle, EW_OP_ADD, EW_F32, n, out, a, b, stream),
                  "ew_binary");
}

static int host_add_isolated(void *ctx, int64_t n, float *out, const float *a, const float *b,
                             cudaStream_t stream)
{
    return report(ew_binary(((library_t *)ctx)->isolated, EW_OP_ADD, EW_F32, n, out, a, b, stream),
                  "ew_binary");
}

int main(int argc, char **argv)
{
    library_t library = {NULL, NULL};
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
    if (library.isolated)
        ew_handle_destroy(library.isolated);
    if (library.handle)
        ew_handle_destroy(library.handle);
    return status;
}
