/* SPDX-License-Identifier: Apache-2.0 */
/* The strided plan (ew_strided_plan_make, src/plan/layout.h) in its parts: the chooser of the kernel, then
 * one planner a kernel, each returning a whole plan of a coalesced layout, so that the CPU tests
 * (tests/plan/test_layout.c) check each against a model of its own. */
#ifndef EW_STRIDED_PLAN_H
#define EW_STRIDED_PLAN_H

#include "plan/layout.h"

/* The kernel of a coalesced layout: flat where every operand is contiguous alike; gather where there are
 * several outputs; tiled where out runs along dimension 0 and an input, not, runs along another (both at
 * least EW_TILE_MIN_EXTENT long); rows where out is dense over one or two dimensions; else gather. */
ew_strided_kernel_t ew_strided_plan_kernel(const ew_layout_t *layout);

/* The planners, each for a layout that is not flat: gather for any; rows where out is dense over one or
 * two dimensions (its staged inputs by bulk copies where the policy has them on, its tile from the
 * policy); tiled where the chooser says tiled. */
ew_strided_plan_t ew_strided_plan_gather(const ew_layout_t *layout);
ew_strided_plan_t ew_strided_plan_rows(const ew_layout_t *layout, const ew_policy_t *policy);
ew_strided_plan_t ew_strided_plan_tiled(const ew_layout_t *layout);

#endif
