/* SPDX-License-Identifier: Apache-2.0 */
/* Bit-for-bit checks against the tests' CPU reference (check.h). */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "common.h"
#ifndef EWB_NO_REF
#include "ref.h"
#endif

static const char *const check_names[] = {"ok", "no-reference", "mismatch", "failed"};

const char *ewb_check_name(ewb_check_t verdict) { return check_names[verdict]; }

int ewb_check_fails(ewb_check_t verdict)
{
    return verdict == EWB_CHECK_MISMATCH || verdict == EWB_CHECK_FAILED;
}

int ewb_reference(ew_op_t op, ew_dtype_t out, ew_dtype_t in, double alpha, int64_t count, void *want,
                  const void *a, const void *b)
{
#ifdef EWB_NO_REF
    (void)op, (void)out, (void)in, (void)alpha, (void)count, (void)want, (void)a, (void)b;
    return -1;
#else
    switch (op) {
    case EW_OP_ADD:
    case EW_OP_MUL: ref_binary(op, out, count, want, a, b); return 0;
    case EW_OP_RELU: ref_unary(op, out, count, want, a); return 0;
    case EW_OP_CAST: ref_cast(out, in, count, want, a); return 0;
    case EW_OP_SCALE_ADD: ref_scale_add(out, alpha, count, want, a, b); return 0;
    default: return -1;
    }
#endif
}

void ewb_hex(char *text, size_t size, const unsigned char *bytes, size_t count)
{
    size_t used = 0;
    text[0] = 0;
    for (size_t k = count; k-- > 0 && used + 2 < size;)
        used += (size_t)snprintf(text + used, size - used, "%02x", bytes[k]);
}

ewb_check_t ewb_compare(const void *got, const void *want, int64_t count, size_t size, int64_t first,
                        char *why, size_t why_size)
{
    const unsigned char *g = got, *w = want;
    for (int64_t i = 0; i < count; ++i)
        if (memcmp(g + i * (int64_t)size, w + i * (int64_t)size, size) != 0) {
            char g_text[20], w_text[20];
            ewb_hex(g_text, sizeof g_text, g + i * (int64_t)size, size);
            ewb_hex(w_text, sizeof w_text, w + i * (int64_t)size, size);
            snprintf(why, why_size, "element %lld: got 0x%s, CPU reference 0x%s", (long long)(first + i),
                     g_text, w_text);
            return EWB_CHECK_MISMATCH;
        }
    snprintf(why, why_size, "ok");
    return EWB_CHECK_OK;
}

static int copy_back(void *host, const void *device, size_t bytes)
{
    return ewb_cuda_ok(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (check)");
}

ewb_check_t ewb_check_spans(const void *out, ew_dtype_t out_dtype, const void *const inputs[],
                            int input_count, ew_dtype_t in_dtype, int64_t n, int64_t span,
                            ewb_reference_fn reference, const void *ctx, char *why, size_t why_size)
{
    enum { MOST = EWB_MAX_SPAN * 8, MAX_INPUTS = 4 };
    const size_t out_size = ew_dtype_size(out_dtype), in_size = ew_dtype_size(in_dtype);
    span = span < n ? span : n;
    span = span < EWB_MAX_SPAN ? span : EWB_MAX_SPAN;
    const int64_t starts[EWB_SPANS] = {0, n / 2 - span / 2, n - span};
    for (int s = 0; s < EWB_SPANS; ++s) {
        unsigned char got[MOST], want[MOST], in[MAX_INPUTS][MOST];
        const void *in_pointers[MAX_INPUTS] = {in[0], in[1], in[2], in[3]};
        const int64_t first = starts[s];
        if (!copy_back(got, (const unsigned char *)out + first * (int64_t)out_size, (size_t)span * out_size))
            return snprintf(why, why_size, "copy back failed"), EWB_CHECK_FAILED;
        for (int k = 0; k < input_count && k < MAX_INPUTS; ++k)
            if (!copy_back(in[k], (const unsigned char *)inputs[k] + first * (int64_t)in_size,
                           (size_t)span * in_size))
                return snprintf(why, why_size, "copy back failed"), EWB_CHECK_FAILED;
        if (reference(ctx, span, want, in_pointers) != 0)
            return snprintf(why, why_size, "no reference"), EWB_CHECK_NO_REFERENCE;
        const ewb_check_t verdict = ewb_compare(got, want, span, out_size, first, why, why_size);
        if (verdict != EWB_CHECK_OK)
            return verdict;
    }
    snprintf(why, why_size, "ok");
    return EWB_CHECK_OK;
}

void ewb_check_fold(ewb_check_t *worst, char *why, size_t why_size, int first, ewb_check_t verdict,
                    const char *column, const char *column_why)
{
    if (!first && verdict <= *worst)
        return;
    *worst = verdict;
    snprintf(why, why_size, "%s%s%s", verdict != EWB_CHECK_OK ? column : "",
             verdict != EWB_CHECK_OK ? ": " : "", column_why);
}
