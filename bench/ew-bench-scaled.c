/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scaled casts' per-tensor targets, on this machine's GPU, each against its yardstick in the same
 * run (bench/lib's method: pools far beyond L2, CUDA events, the median of batches, two columns):
 *   quantize-amax  bf16 -> e4m3 with the amax overwritten, 2^28     vs ew_cast bf16 -> e4m3   (>= 0.95x)
 *   quantize       the same without the amax                        vs ew_cast bf16 -> e4m3
 *   dequantize     e4m3 -> bf16 with scale_inv, 2^28                vs ew_cast e4m3 -> bf16   (>= 0.97x)
 *   amax           bf16 alone, 2^28                                 vs a raw 16-byte read of its bytes (>= 0.90x)
 *   amax-small     bf16 alone, 2^17                                 vs ew_cast bf16 -> e4m3 (<= its time + 2 us)
 *   mxfp8          bf16 -> e4m3 + e8m0 scales, [16384, 16384] (OCP floor; round-up and swizzled too)
 *                                                                   vs ew_cast bf16 -> e4m3   (>= 0.90x)
 *   nvfp4          bf16 -> e2m1 + e4m3 scales with a global scale, [16384, 16384]
 *                                                                   vs ew_cast bf16 -> e4m3   (>= 0.85x)
 *   mxfp8-dequantize, nvfp4-dequantize: back to bf16                vs ew_cast e4m3 -> bf16
 *   host           the host's time to queue ew_quantize (without and with the amax), ew_dequantize and
 *                  ew_amax at n = 1024, and ew_quantize_blocks (MXFP8) at [1, 1024], vs ew_cast bf16 -> e4m3
 *                                                                   (quantize <= +0.3 us)
 * Ratios are the yardstick's time over the library's (above 1: the library is faster), but for the block
 * casts, whose ratio is of GB/s; GB/s count the bytes each call must move (the block casts': elements
 * and scales).
 *   ew-bench-scaled [--csv FILE] [--log2 K] [--batches N] [--batch-ms T] [--timing LIST] [--device D]
 * Columns: case,impl,n,column,unit,value,yardstick,yardstick_value,ratio. Without a GPU it says so and
 * exits 0.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "common.h"
#include "csv.h"
#include "elementwise.h"
#include "pool.h"
#include "raw_kernel.h"
#include "timing.h"

enum { POOL_BF16, POOL_E4M3, POOL_OUT, POOL_SCALES, POOLS };
enum { BLOCK_COLS = 16384 }; /* the block casts' rows: [n / 16384, 16384] */
enum { HOST_N = 1024, READ_BLOCKS = 132 * 8 };

/* What a case's library call and yardstick do. */
typedef enum {
    QUANTIZE_AMAX,
    QUANTIZE,
    DEQUANTIZE,
    AMAX,
    CAST_TO_E4M3,
    CAST_TO_BF16,
    RAW_READ,
    MXFP8,
    MXFP8_ROUND_UP_SWIZZLED,
    NVFP4,
    MXFP8_DEQUANTIZE,
    NVFP4_DEQUANTIZE
} call_t;

static struct {
    ew_handle_t handle[EWB_COLUMNS];
    ewb_pools_t pools;
    ewb_timer_t timer;
    float *scalars; /* scale, scale_inv, amax */
    unsigned *sink; /* the raw read's words */
} dev;

static int64_t big_n = (int64_t)1 << 28;
static FILE *csv;

static int from_fp8(call_t call)
{
    return call == DEQUANTIZE || call == CAST_TO_BF16 || call == MXFP8_DEQUANTIZE || call == NVFP4_DEQUANTIZE;
}

static size_t input_bytes(call_t call, int64_t n)
{
    return call == NVFP4_DEQUANTIZE ? (size_t)n / 2 : (size_t)n * (from_fp8(call) ? 1 : 2);
}

/* Bytes a call must move: its input and its output. */
static double bytes_moved(call_t call, int64_t n)
{
    switch (call) {
    case QUANTIZE_AMAX:
    case QUANTIZE:
    case DEQUANTIZE:
    case CAST_TO_E4M3:
    case CAST_TO_BF16: return 3.0 * (double)n;
    case AMAX:
    case RAW_READ: return 2.0 * (double)n;
    case MXFP8:
    case MXFP8_ROUND_UP_SWIZZLED:
    case MXFP8_DEQUANTIZE: return 3.0 * (double)n + (double)n / 32;
    case NVFP4:
    case NVFP4_DEQUANTIZE: return 2.5 * (double)n + (double)n / 16;
    }
    return 0;
}

static const char *call_name(call_t call)
{
    static const char *const names[] = {"ew_quantize+amax", "ew_quantize", "ew_dequantize", "ew_amax",
                                        "ew_cast", "ew_cast", "raw_read", "mxfp8", "mxfp8_rceil_swz",
                                        "nvfp4", "mxfp8_dequantize", "nvfp4_dequantize"};
    return names[call];
}

/* One call on the next slices of the pools: 0, or -1 (said on stderr). */
static int run_call(call_t call, int64_t n, int column)
{
    const ew_handle_t h = dev.handle[column];
    const cudaStream_t s = dev.timer.stream;
    const void *x = ewb_pool_next(&dev.pools, from_fp8(call) ? POOL_E4M3 : POOL_BF16, input_bytes(call, n));
    void *out = call == AMAX || call == RAW_READ ? NULL : ewb_pool_next(&dev.pools, POOL_OUT, (size_t)n * 2);
    float *scale = &dev.scalars[0], *scale_inv = &dev.scalars[1], *amax = &dev.scalars[2];
    const int64_t cols = n < BLOCK_COLS ? n : BLOCK_COLS, rows = n / cols;
    void *scales = call >= MXFP8 ? ewb_pool_next(&dev.pools, POOL_SCALES, (size_t)n / 16) : NULL;
    if (call == RAW_READ)
        return ewb_cuda_ok(ewb_raw_read(x, input_bytes(call, n), dev.sink, READ_BLOCKS, s), "ewb_raw_read") ? 0 : -1;
    ew_status_t status = EW_ERROR_INVALID_VALUE;
    switch (call) {
    case MXFP8:
        status = ew_quantize_blocks(h, EW_BLOCKS_MX, EW_F8E4M3, EW_BF16, rows, cols, out, scales, x, NULL, 0, s);
        break;
    case MXFP8_ROUND_UP_SWIZZLED:
        status = ew_quantize_blocks(h, EW_BLOCKS_MX, EW_F8E4M3, EW_BF16, rows, cols, out, scales, x, NULL,
                                    EW_BLOCKS_ROUND_UP | EW_BLOCKS_SWIZZLED, s);
        break;
    case NVFP4:
        status = ew_quantize_blocks(h, EW_BLOCKS_NVFP4, EW_F4E2M1, EW_BF16, rows, cols, out, scales, x, scale_inv, 0, s);
        break;
    case MXFP8_DEQUANTIZE:
        status = ew_dequantize_blocks(h, EW_BLOCKS_MX, EW_BF16, EW_F8E4M3, rows, cols, out, x, scales, NULL, 0, s);
        break;
    case NVFP4_DEQUANTIZE:
        status =
            ew_dequantize_blocks(h, EW_BLOCKS_NVFP4, EW_BF16, EW_F4E2M1, rows, cols, out, x, scales, scale_inv, 0, s);
        break;
    case QUANTIZE_AMAX:
        status = ew_quantize(h, EW_F8E4M3, EW_BF16, n, out, x, scale, amax, EW_REDUCE_OVERWRITE, s);
        break;
    case QUANTIZE: status = ew_quantize(h, EW_F8E4M3, EW_BF16, n, out, x, scale, NULL, EW_REDUCE_OVERWRITE, s); break;
    case DEQUANTIZE: status = ew_dequantize(h, EW_BF16, EW_F8E4M3, n, out, x, scale_inv, s); break;
    case AMAX: status = ew_amax(h, EW_BF16, n, x, amax, EW_REDUCE_OVERWRITE, s); break;
    case CAST_TO_E4M3: status = ew_cast(h, EW_F8E4M3, EW_BF16, n, out, x, s); break;
    case CAST_TO_BF16: status = ew_cast(h, EW_BF16, EW_F8E4M3, n, out, x, s); break;
    case RAW_READ: break;
    }
    return ewb_ew_ok(status, call_name(call)) ? 0 : -1;
}

typedef struct {
    ewb_member_t member; /* first: enqueue casts it back */
    call_t call;
    int64_t n;
    int column;
} member_t;

static int enqueue(ewb_member_t *member)
{
    const member_t *m = (const member_t *)member;
    return run_call(m->call, m->n, m->column);
}

static void csv_row(const char *name, call_t call, int64_t n, int column, const char *unit, double value,
                    call_t yard, double yard_value, double ratio)
{
    if (csv == NULL)
        return;
    fprintf(csv, "%s,%s,%lld,%s,%s", name, call_name(call), (long long)n, ewb_column_name(column), unit);
    ewb_csv_number(csv, "%.4f", value);
    fprintf(csv, ",%s", call_name(yard));
    ewb_csv_number(csv, "%.4f", yard_value);
    ewb_csv_number(csv, "%.4f", ratio);
    fputc('\n', csv);
}

/* The library's call and its yardstick in each timed column, in one group: GB/s (or us) and the ratio. */
static int run_case(const char *name, call_t call, call_t yard, int64_t n, unsigned timing, int batches,
                    double batch_ms, int in_us)
{
    int columns[EWB_COLUMNS];
    const int count = ewb_timed_columns(timing, columns);
    member_t group[2 * EWB_COLUMNS];
    ewb_member_t *members[2 * EWB_COLUMNS];
    for (int m = 0; m < 2 * count; ++m) {
        group[m] = (member_t){.member = {.enqueue = enqueue, .isolated = columns[m / 2] == EWB_ISOLATED},
                              .call = m % 2 ? yard : call,
                              .n = n,
                              .column = columns[m / 2]};
        members[m] = &group[m].member;
    }
    double us[2 * EWB_COLUMNS];
    if (ewb_time_group(&dev.timer, members, 2 * count, batches, batch_ms, us) != 0)
        return -1;
    char log2[32];
    ewb_log2_text(n, log2, sizeof log2);
    for (int k = 0; k < count; ++k) {
        const double lib_us = us[2 * k], yard_us = us[2 * k + 1], ratio = yard_us / lib_us;
        if (in_us) {
            printf("%-16s n=%-6s %-13s %-16s %9.2f us  %-10s %9.2f us  ratio %.3f  difference %+.2f us\n", name,
                   log2, ewb_column_name(columns[k]), call_name(call), lib_us, call_name(yard), yard_us, ratio,
                   lib_us - yard_us);
            csv_row(name, call, n, columns[k], "us", lib_us, yard, yard_us, ratio);
        } else {
            const double lib_gbps = bytes_moved(call, n) / lib_us / 1e3, yard_gbps = bytes_moved(yard, n) / yard_us / 1e3;
            printf("%-16s n=%-6s %-13s %-16s %8.1f GB/s  %-10s %8.1f GB/s  ratio %.3f\n", name, log2,
                   ewb_column_name(columns[k]), call_name(call), lib_gbps, call_name(yard), yard_gbps,
                   lib_gbps / yard_gbps);
            csv_row(name, call, n, columns[k], "gbps", lib_gbps, yard, yard_gbps, lib_gbps / yard_gbps);
        }
    }
    fflush(stdout);
    return 0;
}

/* Host launchers: the calls timed against ew_cast, on the back-to-back handle. */
static const call_t host_calls[] = {CAST_TO_E4M3, QUANTIZE, QUANTIZE_AMAX, DEQUANTIZE, AMAX, MXFP8};

static int host_call(void *ctx, int launcher)
{
    (void)ctx;
    return run_call(host_calls[launcher], HOST_N, EWB_BACK_TO_BACK);
}

static int run_host(void)
{
    enum { LAUNCHERS = sizeof host_calls / sizeof host_calls[0] };
    double us[LAUNCHERS];
    if (ewb_time_host(host_call, NULL, LAUNCHERS, EWB_HOST_CALLS, EWB_HOST_BATCHES, dev.timer.stream, us) != 0)
        return -1;
    printf("# host time per call, n = %d (median of %d batches of %d calls)\n", HOST_N, EWB_HOST_BATCHES,
           EWB_HOST_CALLS);
    for (int k = 1; k < LAUNCHERS; ++k) {
        printf("host             %-16s %7.3f us  ew_cast %7.3f us  difference %+7.3f us%s\n",
               call_name(host_calls[k]), us[k], us[0], us[k] - us[0],
               host_calls[k] == QUANTIZE_AMAX ? " (a 4-byte memset queued too)" : "");
        csv_row("host", host_calls[k], HOST_N, EWB_BACK_TO_BACK, "host_us", us[k], CAST_TO_E4M3, us[0],
                us[0] / us[k]);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int batches = 15, device = 0, no_check = 0;
    double batch_ms = 2;
    unsigned timing = 3;
    const char *csv_path = NULL;
    for (int i = 1; i < argc; ++i) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        const int taken = ewb_parse_timing_option(argv[i], v, &batches, &batch_ms, &device, &timing, &no_check);
        if (taken < 0)
            return 2;
        if (taken > 0) {
            i += taken - 1;
        } else if (strcmp(argv[i], "--csv") == 0 && v != NULL) {
            csv_path = v, ++i;
        } else if (strcmp(argv[i], "--log2") == 0 && v != NULL && atoi(v) >= 17 && atoi(v) <= 30) {
            big_n = (int64_t)1 << atoi(v), ++i;
        } else {
            fprintf(stderr, "usage: ew-bench-scaled [--csv FILE] [--log2 K (17-30)] [--batches N] [--batch-ms T] "
                            "[--timing LIST] [--device D]\n");
            return 2;
        }
    }
    const int found = ewb_use_device(device);
    if (found <= 0)
        return found == 0 ? 0 : 1;
    if (ewb_create_handles(device, (timing >> EWB_ISOLATED) & 1, "ew-bench-scaled", dev.handle) != 0 ||
        ewb_timer_init(&dev.timer, device) != 0 ||
        ewb_pools_init(&dev.pools, POOLS, ewb_pool_bytes((size_t)big_n * 2), 0x5CA1EDu) != 0 ||
        !ewb_cuda_ok(cudaMalloc((void **)&dev.scalars, 3 * sizeof(float)), "cudaMalloc") ||
        !ewb_cuda_ok(cudaMalloc((void **)&dev.sink, READ_BLOCKS * sizeof(unsigned)), "cudaMalloc"))
        return 1;
    /* Inputs never zero, magnitudes in [1, 100): a scale of 2 keeps every product inside e4m3's range. */
    const float scalars[3] = {2.0f, 0.5f, 0.0f};
    if (!ewb_cuda_ok(cudaMemcpy(dev.scalars, scalars, sizeof scalars, cudaMemcpyHostToDevice), "cudaMemcpy") ||
        ewb_pool_fill(&dev.pools, POOL_BF16, EW_BF16, dev.timer.stream) != 0 ||
        ewb_pool_fill(&dev.pools, POOL_E4M3, EW_F8E4M3, dev.timer.stream) != 0 ||
        ewb_pool_fill(&dev.pools, POOL_SCALES, EW_F8E4M3, dev.timer.stream) != 0)
        return 1;
    csv = ewb_csv_open(csv_path, "case,impl,n,column,unit,value,yardstick,yardstick_value,ratio\n");
    if (csv_path != NULL && csv == NULL)
        return 1;
    int failed = 0;
    failed |= run_case("quantize-amax", QUANTIZE_AMAX, CAST_TO_E4M3, big_n, timing, batches, batch_ms, 0);
    failed |= run_case("quantize", QUANTIZE, CAST_TO_E4M3, big_n, timing, batches, batch_ms, 0);
    failed |= run_case("dequantize", DEQUANTIZE, CAST_TO_BF16, big_n, timing, batches, batch_ms, 0);
    failed |= run_case("amax", AMAX, RAW_READ, big_n, timing, batches, batch_ms, 0);
    failed |= run_case("amax-small", AMAX, CAST_TO_E4M3, (int64_t)1 << 17, timing, batches, batch_ms, 1);
    failed |= run_case("mxfp8", MXFP8, CAST_TO_E4M3, big_n, timing, batches, batch_ms, 0);
    failed |= run_case("mxfp8-rceil-swz", MXFP8_ROUND_UP_SWIZZLED, CAST_TO_E4M3, big_n, timing, batches, batch_ms, 0);
    failed |= run_case("nvfp4", NVFP4, CAST_TO_E4M3, big_n, timing, batches, batch_ms, 0);
    failed |= run_case("mxfp8-dequantize", MXFP8_DEQUANTIZE, CAST_TO_BF16, big_n, timing, batches, batch_ms, 0);
    failed |= run_case("nvfp4-dequantize", NVFP4_DEQUANTIZE, CAST_TO_BF16, big_n, timing, batches, batch_ms, 0);
    failed |= run_host();
    if (ewb_csv_close(csv) != 0)
        failed = 1;
    cudaFree(dev.scalars);
    cudaFree(dev.sink);
    ewb_pools_free(&dev.pools);
    ewb_timer_free(&dev.timer);
    for (int c = 0; c < EWB_COLUMNS; ++c)
        ew_handle_destroy(dev.handle[c]);
    return failed ? 1 : 0;
}
