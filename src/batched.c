/* SPDX-License-Identifier: Apache-2.0 */
/* Packing a tensor list into launches (src/batched.h). */
#include <string.h>

#include "batched.h"

size_t ew_batched_widest(const ew_batched_list_t *list)
{
    size_t widest = 1;
    for (int j = 0; j < list->pointers; ++j)
        if (list->elem_size[j] > widest)
            widest = list->elem_size[j];
    return widest;
}

/* The next row from (entry, offset): its length, or 0 when the list has no more rows. Skips empty
 * entries; the row starts at the returned cursor. */
static int64_t next_row(const ew_batched_list_t *list, ew_batched_cursor_t *at)
{
    while (at->entry < list->count && at->offset >= list->n[at->entry]) {
        ++at->entry;
        at->offset = 0;
    }
    if (at->entry >= list->count)
        return 0;
    int64_t left = list->n[at->entry] - at->offset;
    return left < EW_BATCHED_MAX_ROW ? left : EW_BATCHED_MAX_ROW;
}

int ew_batched_next(const ew_batched_list_t *list, ew_batched_cursor_t *cursor, ew_batched_desc_t *desc)
{
    const int capacity = EW_BATCHED_CAPACITY(list->block_bytes, list->pointers);
    const uint32_t step = EW_BATCHED_STEP(ew_batched_widest(list));

    /* The launch's rows and elements, to size its chunk. */
    ew_batched_cursor_t at = *cursor;
    int rows = 0;
    int64_t elements = 0;
    for (int64_t length; rows < capacity && (length = next_row(list, &at)) > 0; ++rows) {
        elements += length;
        at.offset += length;
    }
    if (rows == 0)
        return 0;
    uint32_t chunk = step;
    while (chunk < (uint64_t)step * EW_BATCHED_MAX_STEPS &&
           elements / (2 * (int64_t)chunk) >= list->target_blocks * EW_BATCHED_WAVES)
        chunk *= 2;

    uint32_t *first = (uint32_t *)((unsigned char *)desc->data + EW_BATCHED_FIRST_AT(capacity));
    uint32_t *lengths = (uint32_t *)((unsigned char *)desc->data + EW_BATCHED_LENGTH_AT(capacity));
    uint64_t *pointer[EW_PLAN_MAX_POINTERS];
    for (int j = 0; j < list->pointers; ++j)
        pointer[j] = (uint64_t *)((unsigned char *)desc->data + EW_BATCHED_POINTER_AT(capacity, j));
    /* Rows <= capacity, each of at most EW_BATCHED_MAX_ROW / step blocks: the grid stays below 2^31. */
    uint32_t blocks = 0;
    for (int r = 0; r < rows; ++r) {
        const int64_t length = next_row(list, cursor);
        first[r] = blocks;
        lengths[r] = (uint32_t)length;
        for (int j = 0; j < list->pointers; ++j)
            pointer[j][r] = (uint64_t)(uintptr_t)list->address[j][cursor->entry] +
                            (uint64_t)cursor->offset * list->elem_size[j];
        blocks += (uint32_t)((length + chunk - 1) / chunk);
        cursor->offset += length;
    }
    desc->rows = (uint32_t)rows;
    desc->chunk = chunk;
    desc->blocks = blocks;
    desc->reserved = 0;
    return 1;
}
