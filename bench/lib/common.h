/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The benches' library (bench/lib): what every bench program shares, so that their figures are taken by
 * one method (docs/design.md):
 *   common.h   names, errors, options of the method, the device and the two handles, host clock, median;
 *   pool.h     device pools far larger than L2, walked slice by slice, filled with values never zero;
 *   timing.h   CUDA-event timing in two columns, warm-up, the median of batches, host time per call;
 *   check.h    bit-for-bit checks against the tests' CPU reference (tests/ref);
 *   csv.h      CSV files and the log's figures.
 * Every case is timed in two columns:
 *   back-to-back  calls queued one after the other as fast as the host can: what a stream of calls sees,
 *                 including any overlap of a call with the one before it (the library's programmatic
 *                 dependent launches);
 *   isolated      each call alone, in plain stream order (the library: a handle created with
 *                 EW_DEPENDENT_LAUNCH=0), an event recorded between calls, and the stream held by a short
 *                 kernel until the host has queued the whole batch, so that neither the previous call nor
 *                 the host's launch rate is part of any call's time.
 */
#ifndef EWB_COMMON_H
#define EWB_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "elementwise.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The columns, in the order the CSVs write them. */
typedef enum { EWB_BACK_TO_BACK = 0, EWB_ISOLATED = 1, EWB_COLUMNS = 2 } ewb_column_t;

/* "back-to-back", "isolated": the --timing option's words and the logs'. */
const char *ewb_column_name(int column);

/* The timed columns in order, from a mask of bit per column; their count. */
int ewb_timed_columns(unsigned mask, int columns[EWB_COLUMNS]);

/* An op's short name ("add", "scale_add"; "invalid" outside the enum). The library exports the dtypes'
 * names (ew_dtype_name) but not the ops', so this is the benches' one table of them. */
const char *ewb_op_name(ew_op_t op);

/* The op or dtype whose name is the length bytes at name; 0 where none is. */
ew_op_t ewb_op_from_name(const char *name, size_t length);
ew_dtype_t ewb_dtype_from_name(const char *name, size_t length);

/* Inputs of an op: 1 for relu and casts, 2 for the others. */
int ewb_arity(ew_op_t op);

/* The alpha every implementation uses for scale_add on dtype: 0.75 for floats, 3 for integers, 1 for bool. */
double ewb_alpha(ew_dtype_t dtype);

/* 1 where error is cudaSuccess; else 0, with what and the error on stderr. */
int ewb_cuda_ok(cudaError_t error, const char *what);

/* 1 where status is EW_SUCCESS; else 0, with what, the status and the library's last message on stderr. */
int ewb_ew_ok(ew_status_t status, const char *what);

/* CLOCK_MONOTONIC in microseconds. */
double ewb_now_us(void);

/* The median of count values; sorts them. */
double ewb_median(double *values, int count);

/* n as "2^k" where it is a power of two, else in decimal. */
void ewb_log2_text(int64_t n, char *text, size_t size);

size_t ewb_round_up(size_t x, size_t to);

/* The options of the timing method, a being the option and v the next argument or NULL: --batches N
 * (5-1000), --batch-ms T ((0, 1000]), --device D (0-1023), --timing LIST (back-to-back,isolated: a bit per
 * ewb_column_t), --no-check. The count of arguments taken (1 or 2) where a is one of them, its value
 * stored; 0 where it is none; -1 where its value is missing or wrong (said on stderr). */
int ewb_parse_timing_option(const char *a, const char *v, int *batches, double *batch_ms, int *device,
                            unsigned *timing, int *no_check);

/* Make device current and print a line that describes it: 1; 0 where no GPU is present (a line on stdout
 * says so: the caller has nothing to run); -2 where device is not one of the GPUs, -1 where it cannot be
 * made current (both said on stderr). */
int ewb_use_device(int device);

/* The library's handles of the two columns: handles[EWB_BACK_TO_BACK] as the environment makes it
 * (dependent launches on cc >= 9.0 by default) and, where isolated is set, handles[EWB_ISOLATED] with
 * EW_DEPENDENT_LAUNCH=0 (read at creation only), the variable put back as it was; a line on stdout, after
 * bench's name, says which. 0, or -1 (said on stderr; the handles made are in handles, the others NULL). */
int ewb_create_handles(int device, int isolated, const char *bench, ew_handle_t handles[EWB_COLUMNS]);

#ifdef __cplusplus
}
#endif

#endif
