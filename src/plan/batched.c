/* SPDX-License-Identifier: Apache-2.0 */
/* Packing a tensor list into launches (src/plan/batched.h). */
#include "plan/batched.h"

size_t ew_batched_widest(const ew_batched_list_t *list)
{
    size_t widest = 1;
    for (int j = 0; j < list->pointers; ++j)
        if (list->elem_size[j] > widest)
            widest = list->elem_size[j];
    return widest;
}

/* The rows' lengths and pointers from *cursor on, at most capacity of them, for calls of `pointers`
 * pointers (a constant once inlined, so that the copies unroll): empty entries have none, an entry
 * longer than a row gives slices whose pointers are advanced to them. Returns the rows; *elements:
 * their elements. */
static inline __attribute__((always_inline)) int fill_rows(const ew_batched_list_t *list, int pointers,
                                                           int capacity, ew_batched_cursor_t *cursor,
                                                           unsigned char *data, int64_t *elements)
{
    uint32_t *lengths = (uint32_t *)(data + EW_BATCHED_LENGTH_AT(capacity));
    uint64_t *pointer[EW_BATCHED_MAX_COLUMNS];
    for (int j = 0; j < pointers + list->params_column + list->scalar_column; ++j)
        pointer[j] = (uint64_t *)(data + EW_BATCHED_POINTER_AT(capacity, j));
    int64_t entry = cursor->entry, offset = cursor->offset, total = 0;
    int rows = 0;
    while (rows < capacity && entry < list->count) {
        const int64_t left = list->n[entry] - offset;
        if (left <= 0) {
            ++entry, offset = 0;
            continue;
        }
        const int64_t length = left < EW_BATCHED_MAX_ROW ? left : EW_BATCHED_MAX_ROW;
        lengths[rows] = (uint32_t)length;
        for (int j = 0; j < pointers; ++j)
            pointer[j][rows] = (uint64_t)(uintptr_t)list->address[j][entry] + (uint64_t)offset * list->elem_size[j];
        if (list->params_column)
            pointer[pointers][rows] = list->params != NULL ? (uint64_t)(uintptr_t)list->params +
                                                                 (uint64_t)entry * list->params_stride
                                                           : 0;
        if (list->scalar_column)
            pointer[pointers + list->params_column][rows] =
                list->scalar != NULL ? (uint64_t)(uintptr_t)list->scalar[entry] : 0;
        total += length;
        if (length == left)
            ++entry, offset = 0;
        else
            offset += length;
        ++rows;
    }
    cursor->entry = entry;
    cursor->offset = offset;
    *elements = total;
    return rows;
}

int ew_batched_next(const ew_batched_list_t *list, ew_batched_cursor_t *cursor, ew_batched_desc_t *desc)
{
    const int capacity = EW_BATCHED_CAPACITY(list->block_bytes, ew_batched_columns(list));
    unsigned char *data = (unsigned char *)desc->data;
    int64_t elements;
    const int rows = list->pointers == 3 ? fill_rows(list, 3, capacity, cursor, data, &elements)
                     : list->pointers == 2
                         ? fill_rows(list, 2, capacity, cursor, data, &elements)
                         : fill_rows(list, list->pointers, capacity, cursor, data, &elements);
    if (rows == 0)
        return 0;

    /* The chunk, then each row's first block. Rows <= capacity, each of at most EW_BATCHED_MAX_ROW /
     * step blocks: the grid stays below 2^31. */
    const uint32_t step = EW_BATCHED_STEP(ew_batched_widest(list));
    uint32_t chunk = step;
    while (chunk < (uint64_t)step * EW_BATCHED_MAX_STEPS &&
           elements / (2 * (int64_t)chunk) >= list->target_blocks * EW_BATCHED_WAVES)
        chunk *= 2;
    const int shift = __builtin_ctz(chunk); /* a power of two */
    const uint32_t *lengths = (const uint32_t *)(data + EW_BATCHED_LENGTH_AT(capacity));
    uint32_t *first = (uint32_t *)(data + EW_BATCHED_FIRST_AT(capacity));
    uint32_t blocks = 0;
    for (int r = 0; r < rows; ++r) {
        first[r] = blocks;
        blocks += (lengths[r] + (chunk - 1)) >> shift;
    }
    desc->rows = (uint32_t)rows;
    desc->chunk = chunk;
    desc->blocks = blocks;
    desc->reserved = 0;
    return 1;
}

int ew_batched_next_reset(const ew_batched_list_t *list, int64_t *cursor, ew_batched_reset_t *reset)
{
    int64_t entry = *cursor;
    uint32_t count = 0;
    for (; entry < list->count && count < EW_BATCHED_RESET_SCALARS; ++entry)
        if (entry == 0 || list->scalar[entry] != list->scalar[entry - 1])
            reset->scalar[count++] = (uint64_t)(uintptr_t)list->scalar[entry];
    *cursor = entry;
    if (count == 0)
        return 0;
    reset->count = count;
    return 1;
}
