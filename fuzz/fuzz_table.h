/* SPDX-License-Identifier: Apache-2.0 */
/* The one table of the fuzz input format, read by the harness fuzz/fuzz_api.c and by
 * fuzz/make_seeds.py, which parses this file (keep its forms: one X(...) or one value a line). The
 * seeds' test (make_seeds.py --check, the ctest fuzz_seeds) fails when the committed seeds are not
 * those this table and the public header give, or when the header's enums end past the last values
 * named here, so that an action or an enum value added anywhere cannot silently re-map a seed. */
#ifndef EW_FUZZ_TABLE_H
#define EW_FUZZ_TABLE_H

/* The actions, in the order of their codes: an action byte picks FUZZ_ACTIONS(X)'s entry at its value
 * modulo the count. */
#define FUZZ_ACTIONS(X)                                                                                      \
    X(MAKE)                                                                                                  \
    X(DESTROY)                                                                                               \
    X(CREATE)                                                                                                \
    X(GET)                                                                                                   \
    X(UNARY)                                                                                                 \
    X(BINARY)                                                                                                \
    X(CAST)                                                                                                  \
    X(SCALE_ADD)                                                                                             \
    X(INFO)                                                                                                  \
    X(STRIDED)                                                                                               \
    X(BATCHED)                                                                                               \
    X(KERNEL_CREATE)                                                                                         \
    X(KERNEL_MAKE)                                                                                           \
    X(KERNEL_LAUNCH)                                                                                         \
    X(KERNEL_LAUNCH_STRIDED)                                                                                 \
    X(KERNEL_DESTROY)                                                                                        \
    X(QUANTIZE)                                                                                              \
    X(QUANTIZE_STRIDED)                                                                                      \
    X(DEQUANTIZE)                                                                                            \
    X(DEQUANTIZE_STRIDED)                                                                                    \
    X(AMAX)                                                                                                  \
    X(BLOCK_SCALES_SHAPE)                                                                                    \
    X(QUANTIZE_BLOCKS)                                                                                       \
    X(DEQUANTIZE_BLOCKS)                                                                                     \
    X(KERNEL_CACHE_FILL)                                                                                     \
    X(KERNEL_CREATE_OUTPUTS)                                                                                 \
    X(KERNEL_CACHE_FILL_OUTPUTS)                                                                             \
    X(KERNEL_LAUNCH_BATCHED)                                                                                 \
    X(KERNEL_MAKE_OUTPUTS)                                                                                   \
    X(KERNEL_LAUNCH_OUTPUTS)                                                                                 \
    X(SCALED_BATCHED)

/* The last value of each public enum the harness knows. The seeds' test fails when the header's enum
 * ends elsewhere: a value appended there must be added here and to the harness's model. */
#define FUZZ_LAST_STATUS EW_ERROR_OUT_OF_MEMORY
#define FUZZ_LAST_DTYPE EW_F4E2M1
#define FUZZ_LAST_OP EW_OP_AMAX
#define FUZZ_LAST_REDUCE_MODE EW_REDUCE_ACCUMULATE /* read by take_mode, not the enum byte below */
#define FUZZ_LAST_BLOCK_FORMAT EW_BLOCKS_NVFP4
#define FUZZ_LAST_REDUCE_OP EW_REDUCE_SUM

/* One byte of an enum argument below FUZZ_ENUM_WIDE reads as FUZZ_ENUM_FIRST + byte % FUZZ_ENUM_SPAN:
 * every value of the enums above and a neighbour on each side; other bytes take a 32-bit value. */
#define FUZZ_ENUM_FIRST (-1)
#define FUZZ_ENUM_SPAN 17
#define FUZZ_ENUM_WIDE 224

/* Handle and kernel slots; the slot index FUZZ_SLOTS reads as NULL. */
#define FUZZ_SLOTS 4

/* scale_add's alphas by index (a byte below 200, modulo the count; other bytes give raw bits). */
#define FUZZ_ALPHAS(X)                                                                                       \
    X(0.0)                                                                                                   \
    X(1.0)                                                                                                   \
    X(-1.0)                                                                                                  \
    X(0.5)                                                                                                   \
    X(2.0)                                                                                                   \
    X(-0.0)                                                                                                  \
    X(127.0)                                                                                                 \
    X(128.0)                                                                                                 \
    X(-128.0)                                                                                                \
    X(255.0)                                                                                                 \
    X(256.0)                                                                                                 \
    X(32767.0)                                                                                               \
    X(32768.0)                                                                                               \
    X(-32769.0)                                                                                              \
    X(2147483647.0)                                                                                          \
    X(2147483648.0)                                                                                          \
    X(-2147483649.0)                                                                                         \
    X(9223372036854775808.0)                                                                                 \
    X(-9223372036854775808.0)                                                                                \
    X(1e300)                                                                                                 \
    X(1e-300)

/* User kernels' sources by index: NULL or short bodies, never compiled (there is no GPU). */
#define FUZZ_SOURCES(X)                                                                                      \
    X(NULL_SOURCE, NULL)                                                                                     \
    X(IN0, "return in0;")                                                                                    \
    X(EMPTY, "")                                                                                             \
    X(SCALE_ADD_BODY, "return ew::scale_add(p0, in0, in1);")                                                 \
    X(NOT_CODE, "} not code {")

/* Architecture names for ew_kernel_cache_fill: X(name, text, whether it names one). The harness runs
 * with the disk cache off (EW_KERNEL_CACHE=0), so a call that passes every check stops there, never
 * compiling. */
#define FUZZ_ARCHS(X)                                                                                        \
    X(NULL_ARCH, NULL, 0)                                                                                    \
    X(SM_90, "sm_90", 1)                                                                                     \
    X(SM_100, "sm_100", 1)                                                                                   \
    X(SM_90A, "sm_90a", 0)                                                                                   \
    X(COMPUTE_90, "compute_90", 0)                                                                           \
    X(SM_9, "sm_9", 0)                                                                                       \
    X(SM_1000, "sm_1000", 0)                                                                                 \
    X(NO_ARCH, "", 0)

#endif
