/* SPDX-License-Identifier: Apache-2.0 */
#include "plan/policy.h"

#include <stdlib.h>
#include <string.h>

/* Hopper (sm_90), measured on an H200 (docs/design.md): the bulk-copy kernel by shape from these tiles
 * per SM, where it measured faster than the direct kernel. */
static const ew_policy_t hopper = {
    .name = "sm_90 (measured on an H200)",
    .out_align = 128,
    .shifted_waves = 32,
    .blocks_waves = 4,
    .dependent_launch = 1,
    .bulk = EW_BULK_AUTO,
    .bulk_tile_bytes = 8192,
    .bulk_widening_tile_divisor = 2,
    .bulk_narrowing_tile_factor = 2,
    .bulk_wave_tiles = 8,
    .rows_tile_packs = 1024,
    .bulk_min_tiles =
        {
            [EW_SHAPE_BYTES] = {EW_NEVER, 1}, /* the direct kernel moves 16 bytes an access */
            [EW_SHAPE_BYTES_TABLE] = {24, 1},
            [EW_SHAPE_UNARY_SAME] = {EW_NEVER, 192},
            [EW_SHAPE_UNARY_HALVING] = {EW_NEVER, 24},
            [EW_SHAPE_UNARY_NARROWER] = {EW_NEVER, EW_NEVER},
            [EW_SHAPE_UNARY_WIDENING] = {24, 1},
            [EW_SHAPE_BINARY_2BYTE] = {24, 24},
            [EW_SHAPE_BINARY_WIDE] = {24, 192},
        },
};

ew_policy_t ew_policy_for(int major, int minor)
{
    (void)minor;
    ew_policy_t policy = hopper;
    if (major == 9)
        return policy;
    if (major >= 10) {
        /* Blackwell and later: untuned. Hopper's figures, the nearest family measured; these GPUs have
         * the bulk copies and dependent launches the figures assume. */
        policy.name = "sm_100 and later (untuned: sm_90's figures)";
        return policy;
    }
    /* Turing, Ampere, Ada: untuned. No cp.async.bulk and no programmatic dependent launch: the direct
     * kernel in plain stream order, its grid figures Hopper's. */
    policy.name = "sm_75 to sm_89 (untuned: the direct kernel alone)";
    policy.dependent_launch = 0;
    policy.bulk = EW_BULK_OFF;
    return policy;
}

void ew_policy_apply_environment(ew_policy_t *policy)
{
    const char *mode = getenv("EW_BULK_COPY");
    if (policy->bulk != EW_BULK_OFF && mode != NULL) {
        if (strcmp(mode, "0") == 0)
            policy->bulk = EW_BULK_OFF;
        else if (strcmp(mode, "always") == 0)
            policy->bulk = EW_BULK_ALWAYS;
    }
    const char *bytes = getenv("EW_BULK_TILE_BYTES");
    long value = bytes != NULL ? strtol(bytes, NULL, 10) : 0;
    if (value >= 1024 && value <= 32768)
        policy->bulk_tile_bytes = (int)value;
    const char *packs = getenv("EW_ROWS_TILE_PACKS");
    value = packs != NULL ? strtol(packs, NULL, 10) : 0;
    if (value >= 512 && value <= 4096 && (value & (value - 1)) == 0)
        policy->rows_tile_packs = (int)value;
    const char *dependent = getenv("EW_DEPENDENT_LAUNCH");
    if (dependent != NULL && strcmp(dependent, "0") == 0)
        policy->dependent_launch = 0;
}
