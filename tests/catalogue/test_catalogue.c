/* SPDX-License-Identifier: Apache-2.0 */
/* The catalogue's one declaration (src/catalogue/catalogue.h) against the public header: every enumerator of
 * ew_dtype_t and ew_op_t, read from the header's text, is an entry of the table with the same value,
 * in the same order, and no entry is missing from the header; the C layer's lookups (names, sizes,
 * kinds, how each op is called) answer from the table; and the dispatch table holds an entry exactly
 * where the table's kinds say the op takes the dtypes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "catalogue/catalogue.h"
#include "catalogue/dispatch.h"
#include "elementwise.h"

#ifndef EW_PUBLIC_HEADER
#error "EW_PUBLIC_HEADER names the generated elementwise.h"
#endif

typedef struct {
    char name[64];
    long value;
} enumerator_t;

typedef struct {
    int value;
    const char *enum_name, *name;
    size_t bits;
    int kind_or_call;
} entry_t;

/* The catalogue's dtypes, then the block-scaled casts' own (no kind): the header's enum in order. */
static const entry_t dtypes[] = {
#define EW_DTYPE_ENTRY(value, name, type, size, kind) {value, #value, #name, 8 * (size), kind},
    EW_CATALOGUE_DTYPES(EW_DTYPE_ENTRY)
#undef EW_DTYPE_ENTRY
#define EW_DTYPE_ENTRY(value, name, bits) {value, #value, #name, bits, 0},
    EW_BLOCK_DTYPES(EW_DTYPE_ENTRY)
#undef EW_DTYPE_ENTRY
};
static const entry_t ops[] = {
#define EW_OP_ENTRY(value, name, call, functor, out_kinds, in_kinds) {value, #value, #name, 0, out_kinds},
    EW_CATALOGUE_OPS(EW_OP_ENTRY)
#undef EW_OP_ENTRY
};
static const int in_kinds[] = {
#define EW_OP_IN_KINDS(value, name, call, functor, out_kinds, in_kinds) in_kinds,
    EW_CATALOGUE_OPS(EW_OP_IN_KINDS)
#undef EW_OP_IN_KINDS
};
static const int calls[] = {
#define EW_OP_CALL(value, name, call, functor, out_kinds, in_kinds) call,
    EW_CATALOGUE_OPS(EW_OP_CALL)
#undef EW_OP_CALL
};

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* The enumerators of `typedef enum { ... } type_name;` in the header, as written there. */
static size_t read_enum(const char *type_name, enumerator_t *out, size_t capacity)
{
    FILE *file = fopen(EW_PUBLIC_HEADER, "r");
    assert_non_null(file);
    static char text[1 << 16];
    size_t length = fread(text, 1, sizeof text - 1, file);
    fclose(file);
    text[length] = '\0';
    char closing[96];
    snprintf(closing, sizeof closing, "} %s;", type_name);
    const char *end = strstr(text, closing);
    assert_non_null(end);
    const char *begin = end;
    while (begin > text && strncmp(begin, "typedef enum {", 14) != 0)
        --begin;
    assert_true(begin > text);
    size_t count = 0;
    for (const char *p = begin; p < end; ++p) {
        if (strncmp(p, "/**<", 4) == 0) { /* skip the comment after each enumerator */
            const char *close = strstr(p, "*/");
            assert_non_null(close);
            p = close + 1;
            continue;
        }
        char name[64];
        long value;
        int used = 0;
        if ((p == begin || p[-1] == ' ' || p[-1] == '\n') && strncmp(p, "EW_", 3) == 0 &&
            sscanf(p, "%63[A-Z0-9_] = %ld%n", name, &value, &used) == 2) {
            assert_true(count < capacity);
            snprintf(out[count].name, sizeof out[count].name, "%s", name);
            out[count].value = value;
            ++count;
            p += used - 1;
        }
    }
    return count;
}

static void check_against_header(const char *type_name, const entry_t *entries, size_t count)
{
    enumerator_t header[64];
    size_t in_header = read_enum(type_name, header, COUNT(header));
    if (in_header != count)
        fail_msg("%s: the header has %zu enumerators, the catalogue %zu entries", type_name, in_header, count);
    for (size_t i = 0; i < count; ++i) {
        if (strcmp(header[i].name, entries[i].enum_name) != 0 || header[i].value != entries[i].value)
            fail_msg("%s: the header's enumerator %zu is %s = %ld, the catalogue's %s = %d", type_name, i,
                     header[i].name, header[i].value, entries[i].enum_name, entries[i].value);
        assert_int_equal(entries[i].value, (int)i + 1); /* from 1, without gaps */
    }
}

static void test_dtypes_match_header(void **state)
{
    (void)state;
    check_against_header("ew_dtype_t", dtypes, COUNT(dtypes));
    assert_int_equal(EW_ALL_DTYPES_END, COUNT(dtypes) + 1);
}

static void test_ops_match_header(void **state)
{
    (void)state;
    check_against_header("ew_op_t", ops, COUNT(ops));
    assert_int_equal(EW_OP_END, COUNT(ops) + 1);
}

/* The reader finds what it must: a header line changed on purpose reads as changed. */
static void test_header_reader_sees_values(void **state)
{
    (void)state;
    enumerator_t header[64];
    size_t count = read_enum("ew_status_t", header, COUNT(header));
    assert_int_equal(count, 8);
    assert_string_equal(header[0].name, "EW_SUCCESS");
    assert_int_equal(header[7].value, 7);
}

static void test_lookups(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(dtypes); ++i) {
        assert_string_equal(ew_dtype_name((ew_dtype_t)dtypes[i].value), dtypes[i].name);
        assert_int_equal(ew_dtype_bits((ew_dtype_t)dtypes[i].value), dtypes[i].bits);
        assert_int_equal(ew_dtype_size((ew_dtype_t)dtypes[i].value), dtypes[i].bits / 8);
        assert_int_equal(ewi_dtype_kind((ew_dtype_t)dtypes[i].value), dtypes[i].kind_or_call);
    }
    for (size_t i = 0; i < COUNT(ops); ++i) {
        assert_string_equal(ewi_op_name((ew_op_t)ops[i].value), ops[i].name);
        assert_int_equal(ewi_op_call((ew_op_t)ops[i].value), calls[i]);
    }
    const int outside[] = {-1, 0, EW_ALL_DTYPES_END, EW_OP_END, 1000};
    for (size_t i = 0; i < COUNT(outside); ++i) {
        if (outside[i] <= 0 || outside[i] >= EW_ALL_DTYPES_END) {
            assert_string_equal(ew_dtype_name((ew_dtype_t)outside[i]), "invalid");
            assert_int_equal(ew_dtype_size((ew_dtype_t)outside[i]), 0);
            assert_int_equal(ew_dtype_bits((ew_dtype_t)outside[i]), 0);
            assert_int_equal(ewi_dtype_kind((ew_dtype_t)outside[i]), 0);
        }
        if (outside[i] <= 0 || outside[i] >= EW_OP_END) {
            assert_string_equal(ewi_op_name((ew_op_t)outside[i]), "invalid");
            assert_int_equal(ewi_op_call((ew_op_t)outside[i]), 0);
        }
    }
}

/* Each catalogue dtype's kind is one bit, and EW_KINDS_ALL (which CMake spells out from the kinds'
 * enum) is exactly every dtype's: a kind added past it would leave the cast's rows without its dtype. */
static void test_kinds_all_is_every_kind(void **state)
{
    (void)state;
    int all = 0;
    for (size_t i = 0; i < COUNT(dtypes); ++i) {
        const int kind = dtypes[i].kind_or_call;
        if (kind == 0)
            continue; /* a block dtype */
        assert_int_equal(kind & (kind - 1), 0);
        all |= kind;
    }
    assert_int_equal(all, EW_KINDS_ALL);
}

/* The dispatch table holds an entry exactly where the op's kinds take the dtypes: the ops between two
 * dtypes every ordered pair their out and in kinds take, the other ops out == in. */
static void test_table_follows_kinds(void **state)
{
    (void)state;
    for (size_t o = 0; o < COUNT(ops); ++o)
        for (size_t out = 0; out < COUNT(dtypes); ++out)
            for (size_t in = 0; in < COUNT(dtypes); ++in) {
                const int takes_out = (ops[o].kind_or_call & dtypes[out].kind_or_call) != 0;
                const int takes_in = (in_kinds[o] & dtypes[in].kind_or_call) != 0;
                const int expected = takes_out && takes_in && (EW_CALL_IS_PAIR(calls[o]) || out == in);
                const int found = ew_dispatch_find((ew_op_t)ops[o].value, (ew_dtype_t)dtypes[out].value,
                                                   (ew_dtype_t)dtypes[in].value) != NULL;
                if (found != expected)
                    fail_msg("%s on %s <- %s: the catalogue says %d, the dispatch table %d", ops[o].name,
                             dtypes[out].name, dtypes[in].name, expected, found);
                assert_int_equal(ew_is_supported((ew_op_t)ops[o].value, (ew_dtype_t)dtypes[out].value,
                                                 (ew_dtype_t)dtypes[in].value),
                                 expected);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtypes_match_header),
        cmocka_unit_test(test_ops_match_header),
        cmocka_unit_test(test_header_reader_sees_values),
        cmocka_unit_test(test_lookups),
        cmocka_unit_test(test_kinds_all_is_every_kind),
        cmocka_unit_test(test_table_follows_kinds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
