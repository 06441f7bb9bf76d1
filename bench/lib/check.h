/* SPDX-License-Identifier: Apache-2.0 */
/* Bit-for-bit checks of the benches' calls against the tests' CPU reference (tests/ref): a checked call
 * writes into a poisoned output (pool.h), and the elements read back must equal the reference's bits. A
 * build without tests/ref (EWB_NO_REF) checks nothing and says so. */
#ifndef EWB_CHECK_H
#define EWB_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "elementwise.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The verdicts, as the CSVs' check columns write them; worse ones later: a case takes the worst of its
 * columns'. */
typedef enum { EWB_CHECK_OK, EWB_CHECK_NO_REFERENCE, EWB_CHECK_MISMATCH, EWB_CHECK_FAILED } ewb_check_t;

/* "ok", "no-reference", "mismatch", "failed". */
const char *ewb_check_name(ewb_check_t verdict);

/* Whether the verdict fails the run: a mismatch, or a checked call or copy that failed. */
int ewb_check_fails(ewb_check_t verdict);

/* The CPU reference of op on count elements (alpha: scale_add's): 0, or -1 in a build without one. */
int ewb_reference(ew_op_t op, ew_dtype_t out, ew_dtype_t in, double alpha, int64_t count, void *want,
                  const void *a, const void *b);

/* count elements of size bytes, got against want: EWB_CHECK_OK, or EWB_CHECK_MISMATCH with the first
 * differing element (numbered from first) and both values in why. */
ewb_check_t ewb_compare(const void *got, const void *want, int64_t count, size_t size, int64_t first,
                        char *why, size_t why_size);

/* The elements of a call's contiguous output that ewb_check_spans compares: EWB_MAX_SPAN at most at each of
 * its start, middle and end, where heads and tails are. */
enum { EWB_MAX_SPAN = 32, EWB_SPANS = 3 };

/* The CPU reference of a call on count elements: want from in[0..inputs); 0, or -1 in a build without one. */
typedef int (*ewb_reference_fn)(const void *ctx, int64_t count, void *want, const void *const in[]);

/* Spans of `span` elements (at most EWB_MAX_SPAN) at the start, middle and end of the n elements of out
 * (device memory, dtype out_dtype), copied back with the same elements of each of `inputs` inputs (dtype
 * in_dtype), and compared bit for bit with reference(ctx, ...). The call must have completed. */
ewb_check_t ewb_check_spans(const void *out, ew_dtype_t out_dtype, const void *const inputs[],
                            int input_count, ew_dtype_t in_dtype, int64_t n, int64_t span,
                            ewb_reference_fn reference, const void *ctx, char *why, size_t why_size);

/* Fold one column's verdict into a case's: where it is the first column or a worse verdict, it becomes
 * *worst, and why becomes its text, after the column's name unless it is ok. */
void ewb_check_fold(ewb_check_t *worst, char *why, size_t why_size, int first, ewb_check_t verdict,
                    const char *column, const char *column_why);

/* The bytes of one element, most significant first, in hexadecimal. */
void ewb_hex(char *text, size_t size, const unsigned char *bytes, size_t count);

#ifdef __cplusplus
}
#endif

#endif
