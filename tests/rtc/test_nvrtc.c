/* SPDX-License-Identifier: Apache-2.0 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, setenv */
/* Run-time compiled kernels (src/rtc/rtc.c), compiled by NVRTC for sm_90 on the CPU, no GPU needed:
 * - every dtype as input and as output (all 169 casts through ew::cast<T>, each type named as the
 *   issue promises), the ops over every dtype they take, the examples (the fused chain, the
 *   leaky ReLU on 16-bit and 1-byte float values, a ternary), 4 inputs of mixed dtypes with 8 params; every
 *   conversion pair and op in one kernel for each architecture of the catalogue's build;
 * - sources that do not compile: EW_ERROR_INVALID_VALUE, the log's first lines in the message, with
 *   the line of the user's source; the ops refusing the dtypes the catalogue refuses;
 * - arguments refused before NVRTC runs, and the embedded header equal to src/device/ew_ops.cuh.
 * `test_nvrtc missing` instead points EW_NVRTC_LIBRARY at a missing file and checks the refusal.
 * Exits 77 (skipped) when NVRTC cannot be loaded; 1 then with EW_REQUIRE_GPU set (tests/gpu_util.h:
 * the GPU machine has NVRTC), and CI fails on the skip (tests/scripts/check_skips.py). What the compiled kernels compute is for the GPU
 * tests of a later step; here only that they compile, and how long that takes. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "catalogue/catalogue.h"
#include "catalogue/dispatch.h"
#include "catalogue/entries.h"
#include "elementwise.h"
#include "gpu_util.h" /* only its header-only skip rule: gpu_util.c is not linked */
#include "rtc/rtc.h"

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* The type a kernel's source sees for each dtype (the list). */
static const char *const user_types[EW_DTYPE_END] = {
    [EW_BOOL] = "bool",    [EW_I8] = "int8_t",          [EW_U8] = "uint8_t",          [EW_I16] = "int16_t",
    [EW_I32] = "int32_t",  [EW_I64] = "int64_t",        [EW_F16] = "__half",          [EW_BF16] = "__nv_bfloat16",
    [EW_F32] = "float",    [EW_F64] = "double",         [EW_F8E4M3] = "__nv_fp8_e4m3", [EW_F8E5M2] = "__nv_fp8_e5m2",
    [EW_F8E8M0] = "__nv_fp8_e8m0",
};

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Compile times of every successful compile, for the summary. */
static double times[512];
static int timed;

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static ew_status_t compile(const ewi_kernel_spec_t *spec, ewi_kernel_binary_t *binary)
{
    double start = now_ms();
    ew_status_t status = ewi_kernel_compile(spec, "sm_90", binary);
    if (status == EW_SUCCESS && timed < (int)COUNT(times))
        times[timed++] = now_ms() - start;
    return status;
}

/* Compiles, and fails the test with the message and the program when it does not. The CUBIN is an
 * ELF object holding the symbol of every kernel slot the program has. */
static void expect_spec_compiles(const ewi_kernel_spec_t *spec, const char *arch)
{
    ewi_kernel_binary_t binary;
    double start = now_ms();
    ew_status_t status = ewi_kernel_compile(spec, arch, &binary);
    if (status == EW_SUCCESS && timed < (int)COUNT(times))
        times[timed++] = now_ms() - start;
    if (status != EW_SUCCESS) {
        char *program = NULL;
        ewi_kernel_program(spec, &program);
        print_error("%s\n--- %s -> %s (%s) ---\n%s\n--- program ---\n%s\n", ew_get_last_error_message(),
                    spec->source, ew_dtype_name(spec->out_dtype), arch, binary.log ? binary.log : "(no log)",
                    program ? program : "(none)");
        free(program);
    }
    assert_int_equal(status, EW_SUCCESS);
    assert_non_null(binary.cubin);
    assert_true(binary.cubin_size > 64);
    assert_memory_equal(binary.cubin, "\x7f" "ELF", 4);
    const ewi_slots_t slots = ewi_kernel_slots(spec);
    const char *bytes = binary.cubin;
    for (int slot = 0; slot < EW_SLOT_COUNT; ++slot) {
        if (!slots.present[slot]) {
            assert_null(binary.lowered[slot]);
            continue;
        }
        /* the kernel NVRTC instantiated by name, under its lowered name */
        const char *name = binary.lowered[slot];
        if (name == NULL)
            print_error("no lowered name for %s (%s)\n", ewi_kernel_slot_expression(&slots, slot), spec->source);
        assert_non_null(name);
        const size_t length = strlen(name) + 1; /* with the NUL that ends it in the string table */
        int has_entry = 0;
        for (size_t i = 0; i + length <= binary.cubin_size && !has_entry; ++i)
            has_entry = memcmp(bytes + i, name, length) == 0;
        if (!has_entry)
            print_error("the CUBIN lacks %s (%s)\n", name, spec->source);
        assert_true(has_entry);
    }
    ewi_kernel_binary_free(&binary);
}

/* spec's slots over its flat launches' programs (ewi_kernel_flat_slots), each slot in the one program
 * ewi_flat_slot_program names: the aligned kernels the flat program's, the shifted and out-shifted the
 * shifted program's, the bulk kernel the bulk program's. */
static ewi_slots_t flat_slots(ewi_kernel_spec_t spec)
{
    const ewi_slots_t all = ewi_kernel_flat_slots(&spec);
    static const ewi_program_t programs[] = {EWI_PROGRAM_FLAT, EWI_PROGRAM_SHIFTED, EWI_PROGRAM_BULK};
    for (size_t p = 0; p < COUNT(programs); ++p) {
        spec.program = programs[p];
        const ewi_slots_t slots = ewi_kernel_slots(&spec);
        for (int slot = 0; slot < EW_SLOT_COUNT; ++slot)
            assert_int_equal(slots.present[slot], all.present[slot] && slot <= EW_SLOT_BULK &&
                                                      ewi_flat_slot_program((ew_slot_t)slot) == programs[p]);
    }
    assert_true(all.present[EW_SLOT_BULK]);
    return all;
}

/* The flat launches' programs compile: the aligned kernels', the shifted ones' (where there are any)
 * and the bulk kernel's. */
static void expect_compiles(const char *source, ew_dtype_t out, int n_inputs, const ew_dtype_t *in, int n_params)
{
    ewi_kernel_spec_t spec = {
        .source = source, .out_dtype = out, .n_inputs = n_inputs, .in_dtypes = in, .n_params = n_params};
    const ewi_slots_t slots = flat_slots(spec);
    expect_spec_compiles(&spec, "sm_90");
    spec.program = EWI_PROGRAM_BULK;
    expect_spec_compiles(&spec, "sm_90");
    spec.program = EWI_PROGRAM_SHIFTED;
    if (slots.present[EW_SLOT_SHIFTED] || slots.present[EW_SLOT_OUT_SHIFTED])
        expect_spec_compiles(&spec, "sm_90");
}

/* Fails to compile with `status`, the message holding every fragment. */
static void expect_refused(const char *source, ew_dtype_t out, int n_inputs, const ew_dtype_t *in, int n_params,
                           ew_status_t expected, const char *const *fragments, size_t count)
{
    ewi_kernel_spec_t spec = {
        .source = source, .out_dtype = out, .n_inputs = n_inputs, .in_dtypes = in, .n_params = n_params};
    ewi_kernel_binary_t binary;
    ew_status_t status = compile(&spec, &binary);
    const char *message = ew_get_last_error_message();
    for (size_t i = 0; i < count; ++i)
        if (strstr(message, fragments[i]) == NULL) {
            print_error("message lacks \"%s\":\n%s\n", fragments[i], message);
            fail();
        }
    assert_int_equal(status, expected);
    assert_null(binary.cubin);
    ewi_kernel_binary_free(&binary);
}

/* ---- every dtype in and out ---- */

static void every_cast_compiles(void **state)
{
    (void)state;
    char source[320];
    for (int out = 1; out < EW_DTYPE_END; ++out) {
        /* four casts to out, from four inputs of the next four dtypes in a cycle over them all: every
         * dtype is loaded by four programs and stored by one (every pair of conversions is in
         * every_architecture) */
        ew_dtype_t in[4];
        for (int k = 0; k < 4; ++k)
            in[k] = (ew_dtype_t)(1 + ((out - 1) * 4 + k) % (EW_DTYPE_END - 1));
        const char *type = user_types[out];
        snprintf(source, sizeof source,
                 "(void)ew::cast<%s>(in1);\n(void)ew::cast<%s>(in2);\n(void)ew::cast<%s>(in3);\n"
                 "return ew::cast<%s>(in0);",
                 type, type, type, type);
        expect_compiles(source, (ew_dtype_t)out, 4, in, 0);
    }
}

/* The return converts any dtype's value to the output's dtype, as ew::cast does. */
static void return_converts(void **state)
{
    (void)state;
    for (int out = 1; out < EW_DTYPE_END; ++out) {
        const ew_dtype_t in[] = {EW_F32, EW_I8};
        expect_compiles("if (p0 > 0.0)\n    return in0;\nreturn in1 > 0;", (ew_dtype_t)out, 2, in, 1);
    }
}

static int kind(ew_dtype_t dtype) { return ewi_dtype_kind(dtype); }

/* Whether the catalogue's op takes the dtype (as input), which the header's ew:: op takes too. */
static int op_takes(ew_op_t op, ew_dtype_t dtype)
{
#define EW_OP_IN_KINDS(value, name, call, functor, out_kinds, in_kinds) [value] = (in_kinds),
    static const int in_kinds[EW_OP_END] = {EW_CATALOGUE_OPS(EW_OP_IN_KINDS)};
#undef EW_OP_IN_KINDS
    return (in_kinds[op] & kind(dtype)) != 0;
}

/* Each op over each dtype it takes, in one program a dtype. */
static void ops_over_their_dtypes(void **state)
{
    (void)state;
    for (int d = 1; d < EW_DTYPE_END; ++d) {
        const ew_dtype_t dtype = (ew_dtype_t)d, in[] = {dtype, dtype};
        if (!op_takes(EW_OP_ADD, dtype))
            continue;
        expect_compiles(!op_takes(EW_OP_RELU, dtype)
                            ? "(void)ew::add(in0, in1);\n(void)ew::mul(in0, in1);\n"
                              "return ew::scale_add(p0, in0, in1);"
                            : "(void)ew::add(in0, in1);\n(void)ew::mul(in0, in1);\n"
                              "(void)ew::relu(in0);\nreturn ew::scale_add(p0, in0, in1);",
                        dtype, 2, in, 1);
    }
}

/* Every architecture the catalogue is built for. One of each side of the header's branches by
 * __CUDA_ARCH__ (bf16 from sm_80 and sm_90, fp8 from sm_89) compiles every pair of conversions and the
 * ops in one kernel; the others, whose branches those share, the fused chain. */
static void every_architecture(void **state)
{
    (void)state;
    size_t size = 64 * 1024, length = 0;
    char *source = malloc(size);
    assert_non_null(source);
    length += (size_t)snprintf(source + length, size - length, "float s = 0;\n");
    for (int t = 1; t < EW_DTYPE_END; ++t) {
        for (int u = 1; u < EW_DTYPE_END; ++u)
            length += (size_t)snprintf(source + length, size - length,
                                       "s += ew::cast<float>(ew::cast<%s>(ew::cast<%s>(in0)));\n", user_types[u],
                                       user_types[t]);
        if (op_takes(EW_OP_ADD, (ew_dtype_t)t))
            length += (size_t)snprintf(source + length, size - length,
                                       "{ const %s x = ew::cast<%s>(in0); s += ew::cast<float>(ew::add(x, x)) + "
                                       "ew::cast<float>(ew::mul(x, x)) + ew::cast<float>(ew::scale_add(p0, x, x)); }\n",
                                       user_types[t], user_types[t]);
        if (op_takes(EW_OP_RELU, (ew_dtype_t)t))
            length += (size_t)snprintf(source + length, size - length, "s += ew::cast<float>(ew::relu(ew::cast<%s>(in0)));\n",
                                       user_types[t]);
    }
    snprintf(source + length, size - length, "return s;");
    assert_true(length + 16 < size);
    /* one architecture a branch: the matrix; the others: the fused chain */
    const char *branches[] = {"sm_75", "sm_80", "sm_89", "sm_90"}, *others[] = {"sm_86", "sm_100", "sm_120"};
    const ew_dtype_t in[] = {EW_F32, EW_F32};
    const ewi_kernel_spec_t
        matrix = {.source = source, .out_dtype = EW_F32, .n_inputs = 1, .in_dtypes = in, .n_params = 1},
        chain = {.source = "return ew::cast<__half>(ew::relu(ew::scale_add(p0, in0, in1)));",
                 .out_dtype = EW_F16,
                 .n_inputs = 2,
                 .in_dtypes = in,
                 .n_params = 1};
    for (size_t i = 0; i < COUNT(branches) + COUNT(others); ++i) {
        const int branch = i < COUNT(branches);
        const char *arch = branch ? branches[i] : others[i - COUNT(branches)];
        ewi_kernel_binary_t binary;
        ew_status_t status = ewi_kernel_compile(branch ? &matrix : &chain, arch, &binary);
        if (status != EW_SUCCESS)
            print_error("%s: %s\n", arch, ew_get_last_error_message());
        assert_int_equal(status, EW_SUCCESS);
        assert_memory_equal(binary.cubin, "\x7f" "ELF", 4);
        ewi_kernel_binary_free(&binary);
    }
    free(source);
}

/* ---- the examples ---- */

static void fused_chain(void **state)
{
    (void)state;
    const ew_dtype_t in[] = {EW_F32, EW_F32};
    expect_compiles("return ew::cast<__half>(ew::relu(ew::scale_add(p0, in0, in1)));", EW_F16, 2, in, 1);
}

static void leaky_relu_on_every_float(void **state)
{
    (void)state;
    const ew_dtype_t floats[] = {EW_F16, EW_BF16, EW_F32, EW_F64, EW_F8E4M3, EW_F8E5M2, EW_F8E8M0};
    for (size_t i = 0; i < COUNT(floats); ++i)
        expect_compiles("return in0 > 0.f ? in0 : 0.01f * in0;", floats[i], 1, &floats[i], 0);
}

/* A body of an array output and a reduction output, each reduction into f32 and f64, the reduction
 * first or second, flat and over lists (and for one, bulk and strided): every program compiles (its
 * functor folds into Reduce<Op, T>; the lists' takes each row's scalar from its descriptor); a body
 * that returns a value, or leaves the reduction unassigned, is refused or compiles as the rules say;
 * what is not a reduction is refused before NVRTC. */
static void reduction_outputs(void **state)
{
    (void)state;
    const ew_dtype_t in[] = {EW_BF16, EW_F32};
    static const ew_reduce_op_t ops[] = {EW_REDUCE_ABS_MAX, EW_REDUCE_MAX, EW_REDUCE_MIN, EW_REDUCE_SUM};
    for (size_t o = 0; o < COUNT(ops); ++o)
        for (int f64 = 0; f64 <= 1; ++f64)
            for (int index = 0; index <= 1; ++index) {
                const char *source = index == 0 ? "out1 = in0 * p0; if (in1 > 0.f) out0 = in0;"
                                                : "out0 = in0 * p0; out1 = ew::add(in0, in1);";
                for (int program = EWI_PROGRAM_FLAT; program < EWI_PROGRAMS; ++program) {
                    if ((program == EWI_PROGRAM_STRIDED || program == EWI_PROGRAM_BULK) && (o != 0 || f64))
                        continue;
                    ewi_kernel_spec_t spec = {.source = source,
                                              .n_inputs = 2,
                                              .in_dtypes = in,
                                              .n_params = 1,
                                              .program = (ewi_program_t)program,
                                              .n_outputs = 2};
                    spec.outputs[index] = (ew_kernel_output_t){f64 ? EW_F64 : EW_F32, ops[o]};
                    spec.outputs[1 - index] = (ew_kernel_output_t){EW_F32, EW_REDUCE_NONE};
                    expect_spec_compiles(&spec, "sm_90");
                }
            }
    ewi_kernel_spec_t spec = {.source = "out0 = in0; out1 = in0;",
                              .n_inputs = 1,
                              .in_dtypes = in,
                              .n_outputs = 2,
                              .outputs = {{EW_F16, EW_REDUCE_NONE}, {EW_F32, EW_REDUCE_MAX}}};
    ewi_kernel_binary_t binary;
    spec.source = "return in0;"; /* the body of a kernel of outputs returns nothing */
    assert_int_equal(ewi_kernel_compile(&spec, "sm_90", &binary), EW_ERROR_INVALID_VALUE);
    ewi_kernel_binary_free(&binary);
    spec.source = "out0 = in0;"; /* the reduction unassigned: nothing folded, which is allowed */
    expect_spec_compiles(&spec, "sm_90");
    spec.source = "out0 = in0; out2 = in0;"; /* no such output */
    assert_int_equal(ewi_kernel_compile(&spec, "sm_90", &binary), EW_ERROR_INVALID_VALUE);
    ewi_kernel_binary_free(&binary);
    spec.source = "out0 = in0; out1 = in0;";
    spec.outputs[1].dtype = EW_F16;
    assert_int_equal(ewi_kernel_check(&spec), EW_ERROR_NOT_SUPPORTED);
    spec.outputs[1].dtype = EW_F64;
    spec.outputs[1].reduce = (ew_reduce_op_t)5;
    assert_int_equal(ewi_kernel_check(&spec), EW_ERROR_INVALID_VALUE);
    spec.outputs[1].reduce = EW_REDUCE_SUM;
    spec.outputs[0].reduce = EW_REDUCE_MAX; /* two reductions */
    assert_int_equal(ewi_kernel_check(&spec), EW_ERROR_NOT_SUPPORTED);
    spec.outputs[0].reduce = EW_REDUCE_NONE;
    spec.n_outputs = 5;
    assert_int_equal(ewi_kernel_check(&spec), EW_ERROR_INVALID_VALUE);
}

/* Kernels of several arrays compile (two to four outputs of mixed widths, a reduction among them), a
 * body assigning an output it lacks does not; their flat programs have every aligned pack (outputs at
 * other phases narrow it) and no out-shifted kernel, their strided programs nothing. */
static void several_array_outputs(void **state)
{
    (void)state;
    const ew_dtype_t in[] = {EW_F32, EW_U8};
    ewi_kernel_spec_t spec = {.source = "out0 = in0; out1 = in0; out2 = ew::add(in0, in0); out3 = in1;",
                              .n_inputs = 2,
                              .in_dtypes = in,
                              .n_outputs = 4,
                              .outputs = {{EW_F16, EW_REDUCE_NONE},
                                          {EW_F64, EW_REDUCE_SUM},
                                          {EW_F64, EW_REDUCE_NONE},
                                          {EW_U8, EW_REDUCE_NONE}}};
    expect_spec_compiles(&spec, "sm_90");
    ewi_slots_t slots = ewi_kernel_slots(&spec);
    assert_int_equal(slots.widest_pack, 2);
    assert_true(slots.present[EW_SLOT_PACK1] && slots.present[EW_SLOT_PACK2] &&
                !slots.present[EW_SLOT_PACK4]);
    assert_false(slots.present[EW_SLOT_OUT_SHIFTED]);
    assert_false(slots.present[EW_SLOT_SHIFTED]); /* a u8 input's pack of 2 is no whole word */
    assert_true(flat_slots(spec).present[EW_SLOT_BULK]);
    spec.program = EWI_PROGRAM_BULK;
    expect_spec_compiles(&spec, "sm_90");
    spec.program = EWI_PROGRAM_STRIDED; /* several arrays on views: the gather kernel alone */
    slots = ewi_kernel_slots(&spec);
    for (int slot = 0; slot < EW_SLOT_COUNT; ++slot)
        assert_int_equal(slots.present[slot], slot == EW_SLOT_GATHER);
    expect_spec_compiles(&spec, "sm_90");
    spec.program = EWI_PROGRAM_BATCHED; /* over lists, the reduction's scalars a column of the rows */
    slots = ewi_kernel_slots(&spec);
    for (int slot = 0; slot < EW_SLOT_COUNT; ++slot)
        assert_int_equal(slots.present[slot], slot == EW_SLOT_BATCHED || slot == EW_SLOT_BATCHED_LARGE);
    expect_spec_compiles(&spec, "sm_90");
    const ew_dtype_t floats[] = {EW_F32, EW_F32};
    ewi_kernel_spec_t pair = {.source = "out0 = ew::add(in0, in1); out1 = ew::mul(in0, in1);",
                              .n_inputs = 2,
                              .in_dtypes = floats,
                              .n_outputs = 2,
                              .outputs = {{EW_F32, EW_REDUCE_NONE}, {EW_BF16, EW_REDUCE_NONE}}};
    expect_spec_compiles(&pair, "sm_90");
    slots = flat_slots(pair);
    assert_true(slots.present[EW_SLOT_SHIFTED] && slots.present[EW_SLOT_PACK1] &&
                slots.present[EW_SLOT_PACK4]);
    pair.source = "out0 = in0; out2 = in1;"; /* no such output */
    ewi_kernel_binary_t binary;
    assert_int_equal(ewi_kernel_compile(&pair, "sm_90", &binary), EW_ERROR_INVALID_VALUE);
    ewi_kernel_binary_free(&binary);
}

static void ternary_and_widest(void **state)
{
    (void)state;
    const ew_dtype_t halves[] = {EW_F16, EW_F16, EW_F16};
    expect_compiles("return ew::add(ew::mul(in0, in1), in2);", EW_F16, 3, halves, 0);
    const ew_dtype_t mixed[] = {EW_BOOL, EW_F8E5M2, EW_I64, EW_BF16};
    expect_compiles("double sum = p0 + p1 + p2 + p3 + p4 + p5 + p6 + p7;\n"
                    "if (!in0)\n"
                    "    return sum;\n"
                    "return ew::add(ew::cast<float>(in1), ew::cast<float>(in3)) * (float)in2;",
                    EW_F8E4M3, 4, mixed, 8);
}

/* ---- what does not compile ---- */

static void compile_errors(void **state)
{
    (void)state;
    const ew_dtype_t f32[] = {EW_F32, EW_F32};
    const char *undefined[] = {"does not compile", "sm_90", "source(1): error", "\"undefined_name\" is undefined"};
    expect_refused("return undefined_name;", EW_F32, 1, f32, 0, EW_ERROR_INVALID_VALUE, undefined, COUNT(undefined));
    const char *third_line[] = {"source(3): error"};
    expect_refused("float x = in0;\nfloat y = x * 2;\nreturn y +;", EW_F32, 1, f32, 0, EW_ERROR_INVALID_VALUE,
                   third_line, COUNT(third_line));
    const char *no_return[] = {"source(", "return"};
    expect_refused("float x = in0;", EW_F32, 1, f32, 0, EW_ERROR_INVALID_VALUE, no_return, COUNT(no_return));
    const char *not_a_param[] = {"\"p0\" is undefined"};
    expect_refused("return in0 * p0;", EW_F32, 1, f32, 0, EW_ERROR_INVALID_VALUE, not_a_param, COUNT(not_a_param));
    const char *not_an_input[] = {"\"in1\" is undefined"};
    expect_refused("return in1;", EW_F32, 1, f32, 0, EW_ERROR_INVALID_VALUE, not_an_input, COUNT(not_an_input));
}

/* The ops take the dtypes the catalogue takes; the rest stop at the header's static_assert. */
static void ops_refuse_what_the_catalogue_refuses(void **state)
{
    (void)state;
    const ew_dtype_t fp8[] = {EW_F8E4M3, EW_F8E4M3}, e8m0[] = {EW_F8E8M0, EW_F8E8M0}, bools[] = {EW_BOOL},
                     f32[] = {EW_F32};
    const char *add[] = {"ew::add takes every dtype but f8e4m3, f8e5m2 and f8e8m0"};
    expect_refused("return ew::add(in0, in1);", EW_F8E4M3, 2, fp8, 0, EW_ERROR_INVALID_VALUE, add, COUNT(add));
    expect_refused("return ew::add(in0, in1);", EW_F8E8M0, 2, e8m0, 0, EW_ERROR_INVALID_VALUE, add,
                   COUNT(add));
    const char *relu[] = {"ew::relu takes every dtype but bool"};
    expect_refused("return ew::relu(in0);", EW_BOOL, 1, bools, 0, EW_ERROR_INVALID_VALUE, relu, COUNT(relu));
    const char *cast[] = {"ew::cast: both types must be dtypes"};
    expect_refused("return ew::cast<unsigned>(in0);", EW_I32, 1, f32, 0, EW_ERROR_INVALID_VALUE, cast, COUNT(cast));
}

/* ---- arguments, before NVRTC ---- */

/* A spec of one output, its flat program. */
#define SPEC(source_, out_, n_inputs_, in_dtypes_, n_params_)                                         \
    {                                                                                                 \
        .source = (source_), .out_dtype = (out_), .n_inputs = (n_inputs_), .in_dtypes = (in_dtypes_), \
        .n_params = (n_params_)                                                                       \
    }

static void arguments_refused(void **state)
{
    (void)state;
    const ew_dtype_t in[] = {EW_F32, EW_F32, EW_F32, EW_F32, EW_F32}, bad[] = {(ew_dtype_t)0};
    const struct {
        ewi_kernel_spec_t spec;
        const char *arch;
        ew_status_t status;
        const char *fragment;
    } cases[] = {
        {SPEC(NULL, EW_F32, 1, in, 0), "sm_90", EW_ERROR_INVALID_VALUE, "source is NULL"},
        {SPEC("return in0;", EW_F32, 0, in, 0), "sm_90", EW_ERROR_INVALID_VALUE, "n_inputs = 0"},
        {SPEC("return in0;", EW_F32, 5, in, 0), "sm_90", EW_ERROR_INVALID_VALUE, "n_inputs = 5"},
        {SPEC("return in0;", EW_F32, 1, NULL, 0), "sm_90", EW_ERROR_INVALID_VALUE, "in_dtypes is NULL"},
        {SPEC("return in0;", EW_F32, 1, in, -1), "sm_90", EW_ERROR_INVALID_VALUE, "n_params = -1"},
        {SPEC("return in0;", EW_F32, 1, in, 9), "sm_90", EW_ERROR_INVALID_VALUE, "n_params = 9"},
        {SPEC("return in0;", (ew_dtype_t)0, 1, in, 0), "sm_90", EW_ERROR_NOT_SUPPORTED, "out_dtype 0"},
        {SPEC("return in0;", (ew_dtype_t)EW_DTYPE_END, 1, in, 0), "sm_90", EW_ERROR_NOT_SUPPORTED,
         "is not a dtype"},
        {SPEC("return in0;", EW_F32, 1, bad, 0), "sm_90", EW_ERROR_NOT_SUPPORTED, "in_dtypes[0] = 0"},
        {SPEC("return in0;", EW_F32, 1, in, 0), "compute_90", EW_ERROR_INVALID_VALUE,
         "\"compute_90\" is not"},
        {SPEC("return in0;", EW_F32, 1, in, 0), "sm_", EW_ERROR_INVALID_VALUE, "\"sm_\" is not"},
        {SPEC("return in0;", EW_F32, 1, in, 0), "sm_90 -G", EW_ERROR_INVALID_VALUE, "is not a real GPU"},
        {SPEC("return in0;", EW_F32, 1, in, 0), NULL, EW_ERROR_INVALID_VALUE, "(null)"},
    };
    for (size_t i = 0; i < COUNT(cases); ++i) {
        ewi_kernel_binary_t binary;
        ew_status_t status = ewi_kernel_compile(&cases[i].spec, cases[i].arch, &binary);
        if (status != cases[i].status || strstr(ew_get_last_error_message(), cases[i].fragment) == NULL) {
            print_error("case %zu: %s: %s\n", i, ew_status_string(status), ew_get_last_error_message());
            fail();
        }
        assert_null(binary.cubin);
        ewi_kernel_binary_free(&binary);
    }
}

/* An architecture NVRTC does not know: refused by NVRTC, as an invalid value. */
static void unknown_architecture(void **state)
{
    (void)state;
    const ew_dtype_t in[] = {EW_F32};
    ewi_kernel_spec_t spec = {.source = "return in0;", .out_dtype = EW_F32, .n_inputs = 1, .in_dtypes = in};
    ewi_kernel_binary_t binary;
    assert_int_equal(ewi_kernel_compile(&spec, "sm_12", &binary), EW_ERROR_INVALID_VALUE);
    assert_null(binary.cubin);
    ewi_kernel_binary_free(&binary);
}

/* ---- filling the disk cache ahead of time ---- */

/* Cache files (.ewk) in dir. */
static int cache_files(const char *dir)
{
    int files = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
        files += strstr(e->d_name, ".ewk") != NULL;
    if (d != NULL)
        closedir(d);
    return files;
}

static uint64_t counted(ew_kernel_cache_counter_t counter)
{
    uint64_t count = 0;
    assert_int_equal(ew_kernel_cache_get_count(counter, &count), EW_SUCCESS);
    return count;
}

/* Without a GPU: ew_kernel_cache_fill compiles a kernel's flat, shifted, bulk, strided and lists'
 * programs into the disk cache once (five files, five compiles), and a second fill finds them there
 * (five disk hits, nothing written); what is not an architecture or a kernel is refused, as is a cache turned
 * off. */
static void cache_fill(void **state)
{
    (void)state;
    char root[] = "/tmp/ew-cache-fill-XXXXXX", dir[64], path[128];
    assert_non_null(mkdtemp(root));
    snprintf(dir, sizeof dir, "%s/cache", root);
    setenv("EW_KERNEL_CACHE_DIR", dir, 1);
    unsetenv("EW_KERNEL_CACHE");
    const ew_dtype_t in[] = {EW_F32, EW_F32};
    const char *source = "return ew::cast<__half>(ew::relu(ew::scale_add(p0, in0, in1))); // cache_fill";
    const uint64_t compiles = counted(EW_KERNEL_CACHE_COMPILES), hits = counted(EW_KERNEL_CACHE_DISK_HITS);
    double start = now_ms();
    assert_int_equal(ew_kernel_cache_fill(source, EW_F16, 2, in, 1, "sm_90"), EW_SUCCESS);
    printf("cache_fill: the flat, shifted, bulk, strided and lists' programs for sm_90 in %.1f ms\n",
           now_ms() - start);
    assert_int_equal(cache_files(dir), 5);
    assert_int_equal(counted(EW_KERNEL_CACHE_COMPILES) - compiles, 5);
    struct stat before[5];
    DIR *d = opendir(dir);
    assert_non_null(d);
    int k = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strstr(e->d_name, ".ewk") != NULL) {
            snprintf(path, sizeof path, "%s/%.60s", dir, e->d_name);
            assert_int_equal(stat(path, &before[k++]), 0);
        }
    closedir(d);
    assert_int_equal(ew_kernel_cache_fill(source, EW_F16, 2, in, 1, "sm_90"), EW_SUCCESS);
    assert_int_equal(counted(EW_KERNEL_CACHE_COMPILES) - compiles, 5);
    assert_int_equal(counted(EW_KERNEL_CACHE_DISK_HITS) - hits, 5);
    assert_int_equal(cache_files(dir), 5);
    d = opendir(dir);
    k = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strstr(e->d_name, ".ewk") != NULL) {
            struct stat now;
            snprintf(path, sizeof path, "%s/%.60s", dir, e->d_name);
            assert_int_equal(stat(path, &now), 0);
            int same = 0;
            for (int i = 0; i < 5; ++i)
                same |= now.st_ino == before[i].st_ino && now.st_ctim.tv_nsec == before[i].st_ctim.tv_nsec &&
                        now.st_ctim.tv_sec == before[i].st_ctim.tv_sec;
            assert_true(same); /* a store renames a new file over the name */
            ++k;
        }
    closedir(d);
    assert_int_equal(k, 5);

    static const char *const not_archs[] = {"sm_90a", "compute_90", "sm_9", "sm_1000", "90", "sm_", ""};
    for (size_t i = 0; i < COUNT(not_archs); ++i) {
        assert_int_equal(ew_kernel_cache_fill(source, EW_F16, 2, in, 1, not_archs[i]), EW_ERROR_INVALID_VALUE);
        assert_non_null(strstr(ew_get_last_error_message(), "arch"));
    }
    assert_int_equal(ew_kernel_cache_fill(source, EW_F16, 2, in, 1, NULL), EW_ERROR_INVALID_VALUE);
    assert_int_equal(ew_kernel_cache_fill(NULL, EW_F16, 2, in, 1, "sm_90"), EW_ERROR_INVALID_VALUE);
    assert_int_equal(ew_kernel_cache_fill(source, EW_F16, 0, in, 1, "sm_90"), EW_ERROR_INVALID_VALUE);
    assert_int_equal(ew_kernel_cache_fill(source, (ew_dtype_t)99, 2, in, 1, "sm_90"), EW_ERROR_NOT_SUPPORTED);
    assert_int_equal(ew_kernel_cache_fill("return in0 +;", EW_F32, 1, in, 0, "sm_90"), EW_ERROR_INVALID_VALUE);
    assert_non_null(strstr(ew_get_last_error_message(), "does not compile"));
    assert_int_equal(ew_kernel_cache_fill(source, EW_F16, 2, in, 1, "sm_12"), EW_ERROR_INVALID_VALUE);
    setenv("EW_KERNEL_CACHE", "0", 1);
    assert_int_equal(ew_kernel_cache_fill(source, EW_F16, 2, in, 1, "sm_90"), EW_ERROR_NOT_SUPPORTED);
    assert_non_null(strstr(ew_get_last_error_message(), "EW_KERNEL_CACHE=0"));
    unsetenv("EW_KERNEL_CACHE");
    assert_int_equal(cache_files(dir), 5);

    /* A kernel of outputs: programs of its own (its reduction is in their text, the lists' too), the
     * refusals of its create. */
    const ew_kernel_output_t outputs[] = {{EW_F16, EW_REDUCE_NONE}, {EW_F32, EW_REDUCE_ABS_MAX}};
    const char *body =
        "const __half y = ew::cast<__half>(ew::relu(ew::scale_add(p0, in0, in1))); out0 = y; out1 = y;";
    assert_int_equal(ew_kernel_cache_fill_outputs(body, 2, outputs, 2, in, 1, "sm_90"), EW_SUCCESS);
    assert_int_equal(cache_files(dir), 10);
    assert_int_equal(counted(EW_KERNEL_CACHE_COMPILES) - compiles, 10);
    assert_int_equal(ew_kernel_cache_fill_outputs(body, 2, outputs, 2, in, 1, "sm_90"), EW_SUCCESS);
    assert_int_equal(counted(EW_KERNEL_CACHE_DISK_HITS) - hits, 10);
    /* two arrays: the flat, shifted, bulk, strided (the gather kernel alone) and lists' programs */
    const ew_kernel_output_t arrays[] = {{EW_F16, EW_REDUCE_NONE}, {EW_F32, EW_REDUCE_NONE}};
    assert_int_equal(ew_kernel_cache_fill_outputs(body, 2, arrays, 2, in, 1, "sm_90"), EW_SUCCESS);
    assert_int_equal(cache_files(dir), 15);
    const ew_kernel_output_t f16_max[] = {{EW_F16, EW_REDUCE_NONE}, {EW_F16, EW_REDUCE_MAX}};
    const ew_kernel_output_t two_reductions[] = {{EW_F32, EW_REDUCE_SUM}, {EW_F32, EW_REDUCE_MAX}};
    const ew_kernel_output_t no_array[] = {{EW_F32, EW_REDUCE_SUM}};
    assert_int_equal(ew_kernel_cache_fill_outputs(body, 2, f16_max, 2, in, 1, "sm_90"),
                     EW_ERROR_NOT_SUPPORTED);
    assert_int_equal(ew_kernel_cache_fill_outputs(body, 2, two_reductions, 2, in, 1, "sm_90"),
                     EW_ERROR_NOT_SUPPORTED);
    assert_int_equal(ew_kernel_cache_fill_outputs("out0 = in0;", 1, no_array, 2, in, 1, "sm_90"),
                     EW_ERROR_NOT_SUPPORTED);
    assert_int_equal(ew_kernel_cache_fill_outputs(body, 0, outputs, 2, in, 1, "sm_90"),
                     EW_ERROR_INVALID_VALUE);
    assert_int_equal(ew_kernel_cache_fill_outputs(body, 2, NULL, 2, in, 1, "sm_90"), EW_ERROR_INVALID_VALUE);
    assert_int_equal(ew_kernel_cache_fill_outputs(body, 2, outputs, 2, in, 1, "sm90"),
                     EW_ERROR_INVALID_VALUE);
    assert_int_equal(ew_kernel_cache_fill_outputs("out0 = in0;", 2, outputs, 2, in, 1, "sm_90"), EW_SUCCESS);
    assert_int_equal(cache_files(dir), 20); /* out1 never assigned: a reduction over nothing */
    assert_int_equal(ew_kernel_cache_fill_outputs("return in0;", 2, outputs, 2, in, 1, "sm_90"),
                     EW_ERROR_INVALID_VALUE);
    assert_non_null(strstr(ew_get_last_error_message(), "does not compile"));

    d = opendir(dir);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%.60s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(dir);
    rmdir(root);
    unsetenv("EW_KERNEL_CACHE_DIR");
}

/* ---- the program and the embedded header ---- */

static void program_text(void **state)
{
    (void)state;
    const ew_dtype_t in[] = {EW_BOOL, EW_F8E4M3};
    ewi_kernel_spec_t spec = {.source = "return in0 ? in1 : 0.5f;",
                              .out_dtype = EW_F16,
                              .n_inputs = 2,
                              .in_dtypes = in,
                              .n_params = 3};
    char *program = NULL;
    assert_int_equal(ewi_kernel_program(&spec, &program), EW_SUCCESS);
    const char *expected[] = {"#include \"device/direct.cuh\"", "typedef UserOf<__half> out_t;", "typedef UserOf<Bool8> in0_t;",
                              "typedef UserOf<F8E4M3> in1_t;", "in0_t in0, in1_t in1, double p0, double p1, double p2)",
                              "#line 1 \"source\"\nreturn in0 ? in1 : 0.5f;\n", "using In2 = ew::StorageOf<in1_t>;",
                              "Out operator()(In1 x0, In2 x1) const", ", p[0], p[1], p[2]).value"};
    for (size_t i = 0; i < COUNT(expected); ++i)
        if (strstr(program, expected[i]) == NULL) {
            print_error("program lacks \"%s\":\n%s\n", expected[i], program);
            fail();
        }
    free(program);
    /* its kernels are the catalogue's templates, named for NVRTC to instantiate */
    const ewi_slots_t slots = ewi_kernel_slots(&spec);
    assert_string_equal(ewi_kernel_slot_expression(&slots, EW_SLOT_PACK8),
                        "&ew::elementwise_kernel<ew_op, 8, ew::kDirectUnroll<ew_op, 8, ew::Window::Aligned>, "
                        "ew::Window::Aligned>");
    assert_null(ewi_kernel_slot_expression(&slots, EW_SLOT_BULK)); /* the bulk program's */
    const ewi_slots_t all = flat_slots(spec);
    assert_string_equal(ewi_kernel_slot_expression(&all, EW_SLOT_BULK), "&ew::bulk_kernel<ew_op, 8>");
    spec.program = EWI_PROGRAM_BULK;
    assert_int_equal(ewi_kernel_program(&spec, &program), EW_SUCCESS);
    assert_non_null(strstr(program, "#include \"device/bulk.cuh\""));
    assert_null(strstr(program, "direct.cuh"));
    free(program);
    spec.program = EWI_PROGRAM_FLAT;
    assert_null(ewi_kernel_slot_expression(&slots, EW_SLOT_PACK4)); /* shifted windows: the widest pack only */
    assert_null(ewi_kernel_slot_expression(&slots, EW_SLOT_GATHER));
    assert_null(ewi_kernel_slot_expression(&slots, EW_SLOT_RUNS));
    const ew_dtype_t bytes[] = {EW_U8};
    const ewi_kernel_spec_t narrow = {
        .source = "return in0;", .out_dtype = EW_U8, .n_inputs = 1, .in_dtypes = bytes};
    const ewi_slots_t narrow_slots = ewi_kernel_slots(&narrow);
    assert_string_equal(ewi_kernel_slot_expression(&narrow_slots, EW_SLOT_RUNS),
                        "&ew::elementwise_kernel<ew_op, 8, ew::kRunsUnroll<ew_op, 8, 2>, ew::Window::Aligned, 2>");
}

/* Which kernels a program has, by the catalogue's plan: the widest pack (16 bytes of the widest
 * operand), runs of two 8-byte packs for 1-byte types, shifted windows where every input's widest pack
 * is whole words, out stored element by element for unary ops that narrow to a quarter or less, the
 * narrower packs only where neither shift exists, and, in a program of its own, the bulk-copy kernel
 * always. */
static void slots_follow_the_catalogue(void **state)
{
    (void)state;
    static const struct {
        ew_dtype_t out;
        int n_inputs;
        ew_dtype_t in[4];
        int present[EW_SLOT_COUNT]; /* pack1, pack2, pack4, pack8, runs, shifted, out_shifted, bulk; the
                                      * strided program's gather, rows, tiled */
    } cases[] = {
        {EW_F32, 2, {EW_F32, EW_F32}, {0, 0, 1, 0, 0, 1, 0, 1}},
        {EW_I8, 2, {EW_I8, EW_I8}, {0, 0, 0, 1, 1, 1, 0, 1}},
        {EW_F16, 3, {EW_F16, EW_F16, EW_F16}, {0, 0, 0, 1, 0, 1, 0, 1}},
        {EW_F8E4M3, 1, {EW_F32}, {0, 0, 1, 0, 0, 0, 1, 1}},
        {EW_F16, 1, {EW_F32}, {0, 0, 1, 0, 0, 1, 0, 1}},
        {EW_F64, 4, {EW_F64, EW_I8, EW_BOOL, EW_F32}, {1, 1, 0, 0, 0, 0, 0, 1}},
        {EW_U8, 1, {EW_BOOL}, {0, 0, 0, 1, 1, 1, 0, 1}},
    };
    for (size_t c = 0; c < COUNT(cases); ++c) {
        ewi_kernel_spec_t spec = {.source = "return in0;",
                                  .out_dtype = cases[c].out,
                                  .n_inputs = cases[c].n_inputs,
                                  .in_dtypes = cases[c].in};
        ewi_slots_t slots = flat_slots(spec);
        for (int slot = 0; slot < EW_SLOT_COUNT; ++slot)
            if (slots.present[slot] != cases[c].present[slot]) {
                print_error("case %zu: slot %d is %s\n", c, slot, slots.present[slot] ? "present" : "absent");
                fail();
            }
        spec.program = EWI_PROGRAM_STRIDED;
        slots = ewi_kernel_slots(&spec);
        for (int slot = 0; slot < EW_SLOT_COUNT; ++slot)
            assert_int_equal(slots.present[slot], slot >= EW_SLOT_GATHER && slot <= EW_SLOT_TILED);
    }
}

/* The slots a program has past the aligned packs are the catalogue's kernel set's for the same dtypes:
 * one rule (src/plan/plan.h's macros) for both. A program always writes out: amax, which writes none,
 * has no counterpart. */
static void slots_match_the_kernel_sets(void **state)
{
    (void)state;
    int compared = 0;
    FOR_EACH_ENTRY (op, out, in, set) {
        if (op == EW_OP_AMAX)
            continue;
        const ew_dtype_t inputs[2] = {(ew_dtype_t)in, (ew_dtype_t)in};
        const int binary = op == EW_OP_ADD || op == EW_OP_MUL || op == EW_OP_SCALE_ADD;
        const ewi_kernel_spec_t spec = {.source = "return in0;",
                                        .out_dtype = (ew_dtype_t)out,
                                        .n_inputs = binary ? 2 : 1,
                                        .in_dtypes = inputs};
        const ewi_slots_t slots = flat_slots(spec);
        assert_int_equal(slots.widest_pack, set->widest_pack);
        assert_int_equal(slots.access_packs, set->access_packs);
        for (int slot = EW_SLOT_RUNS; slot <= EW_SLOT_BULK; ++slot)
            if (slots.present[slot] != ew_kernel_set_has(set, (ew_slot_t)slot)) {
                print_error("op %d (%s <- %s): slot %d is %s in the program\n", op, ew_dtype_name(out),
                            ew_dtype_name(in), slot, slots.present[slot] ? "present" : "absent");
                fail();
            }
        ++compared;
    }
    assert_int_equal(compared, 3 * 10 + 9 + 13 * 13 + 8 + 8);
}

static void headers_are_embedded(void **state)
{
    (void)state;
    for (int h = 0; h < EWI_DEVICE_HEADER_COUNT; ++h) {
        const ewi_device_header_t *header = &ewi_device_headers[h];
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", EW_SOURCE_SRC_DIR, header->name);
        FILE *file = fopen(path, "rb");
        if (file == NULL)
            print_error("cannot open %s\n", path);
        assert_non_null(file);
        char *text = malloc(header->size + 2);
        assert_non_null(text);
        size_t read = fread(text, 1, header->size + 1, file);
        fclose(file);
        assert_int_equal(read, header->size);
        assert_int_equal(strlen(header->text), header->size);
        assert_memory_equal(text, header->text, header->size);
        free(text);
    }
    /* the caches' keys carry the headers' digest: 16 lowercase hex digits */
    assert_int_equal(strlen(ewi_device_headers_digest), 16);
    assert_int_equal(strspn(ewi_device_headers_digest, "0123456789abcdef"), 16);
}

/* ---- the strided program ---- */

/* The gather, rows and tiled kernels of one to four inputs of mixed widths, on both sides of
 * src/device/strided.cuh's architecture branches; the program names its kernels and the dimensions. */
static void strided_programs(void **state)
{
    (void)state;
    static const ew_dtype_t in[] = {EW_I8, EW_F64, EW_BF16, EW_BOOL};
    const ewi_kernel_spec_t specs[] = {
        {.source = "return ew::add(in0, in1);",
         .out_dtype = EW_F32,
         .n_inputs = 2,
         .in_dtypes = (const ew_dtype_t[]){EW_F32, EW_F32},
         .program = EWI_PROGRAM_STRIDED},
        {.source = "return in0;",
         .out_dtype = EW_F16,
         .n_inputs = 1,
         .in_dtypes = (const ew_dtype_t[]){EW_F32},
         .program = EWI_PROGRAM_STRIDED},
        {.source = "return in3 ? p0 * in0 + in1 : ew::cast<float>(in2) + p1;",
         .out_dtype = EW_F32,
         .n_inputs = 4,
         .in_dtypes = in,
         .n_params = 2,
         .program = EWI_PROGRAM_STRIDED},
    };
    for (size_t c = 0; c < COUNT(specs); ++c)
        expect_spec_compiles(&specs[c], "sm_90");
    expect_spec_compiles(&specs[2], "sm_75");

    char *program = NULL;
    assert_int_equal(ewi_kernel_program(&specs[0], &program), EW_SUCCESS);
    char dims[32];
    snprintf(dims, sizeof dims, "#define EW_MAX_DIMS %d\n", EW_MAX_DIMS);
    const char *fragments[] = {dims, "#include \"device/strided.cuh\""};
    for (size_t i = 0; i < COUNT(fragments); ++i)
        if (strstr(program, fragments[i]) == NULL) {
            print_error("the strided program lacks \"%s\":\n%s\n", fragments[i], program);
            fail();
        }
    assert_null(strstr(program, "direct.cuh"));
    free(program);
    const ewi_slots_t slots = ewi_kernel_slots(&specs[0]);
    assert_string_equal(ewi_kernel_slot_expression(&slots, EW_SLOT_GATHER),
                        "&ew::gather_kernel<ew_op, 4, EW_GATHER_UNROLL>");
    assert_string_equal(ewi_kernel_slot_expression(&slots, EW_SLOT_ROWS), "&ew::rows_kernel<ew_op, 4>");
    assert_string_equal(ewi_kernel_slot_expression(&slots, EW_SLOT_TILED), "&ew::tiled_kernel<ew_op>");
}

/* ---- NVRTC missing ---- */

static void missing_library_refused(void **state)
{
    (void)state;
    assert_int_equal(ewi_nvrtc_load(), EW_ERROR_NOT_SUPPORTED);
    const char *message = ew_get_last_error_message();
    const char *fragments[] = {"EW_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.99", "cannot be loaded",
                               "nvidia-cuda-nvrtc"};
    for (size_t i = 0; i < COUNT(fragments); ++i)
        if (strstr(message, fragments[i]) == NULL) {
            print_error("message lacks \"%s\": %s\n", fragments[i], message);
            fail();
        }
    /* Every later call says the same; argument errors still come first. */
    const ew_dtype_t in[] = {EW_F32};
    ewi_kernel_spec_t spec = {.source = "return in0;", .out_dtype = EW_F32, .n_inputs = 1, .in_dtypes = in};
    ewi_kernel_binary_t binary;
    assert_int_equal(ewi_kernel_compile(&spec, "sm_90", &binary), EW_ERROR_NOT_SUPPORTED);
    assert_non_null(strstr(ew_get_last_error_message(), "EW_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.99"));
    assert_null(binary.cubin);
    spec.n_inputs = 0;
    assert_int_equal(ewi_kernel_compile(&spec, "sm_90", &binary), EW_ERROR_INVALID_VALUE);
    /* a program no cache holds cannot be filled in either; nothing is written */
    char root[] = "/tmp/ew-cache-fill-XXXXXX";
    assert_non_null(mkdtemp(root));
    setenv("EW_KERNEL_CACHE_DIR", root, 1);
    assert_int_equal(ew_kernel_cache_fill("return in0;", EW_F32, 1, in, 0, "sm_90"), EW_ERROR_NOT_SUPPORTED);
    assert_non_null(strstr(ew_get_last_error_message(), "EW_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.99"));
    assert_int_equal(cache_files(root), 0);
    assert_int_equal(rmdir(root), 0);
    unsetenv("EW_KERNEL_CACHE_DIR");
}

static int summary(void **state)
{
    (void)state;
    if (timed == 0)
        return 0;
    qsort(times, (size_t)timed, sizeof times[0], compare_doubles);
    printf("NVRTC compiles for sm_90: %d, median %.1f ms, max %.1f ms\n", timed, times[timed / 2], times[timed - 1]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "missing") == 0) {
        setenv("EW_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so.99", 1);
        const struct CMUnitTest tests[] = {cmocka_unit_test(missing_library_refused)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    /* "architectures": every_architecture alone, the longest, which ctest runs beside the rest */
    if (argc > 1 && strcmp(argv[1], "architectures") == 0)
        cmocka_set_test_filter("every_architecture");
    else
        cmocka_set_skip_filter("every_architecture");
    double start = now_ms();
    if (ewi_nvrtc_load() != EW_SUCCESS)
        return gu_skip_allowed(GU_SKIP, ew_get_last_error_message()) ? 77 : 1;
    int major, minor;
    ewi_nvrtc_version(&major, &minor);
    printf("NVRTC %d.%d from %s, loaded in %.1f ms\n", major, minor, ewi_nvrtc_path(), now_ms() - start);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slots_follow_the_catalogue),
        cmocka_unit_test(slots_match_the_kernel_sets),
        cmocka_unit_test(reduction_outputs),
        cmocka_unit_test(several_array_outputs),
        cmocka_unit_test(headers_are_embedded),
        cmocka_unit_test(program_text),
        cmocka_unit_test(arguments_refused),
        cmocka_unit_test(fused_chain),
        cmocka_unit_test(strided_programs),
        cmocka_unit_test(leaky_relu_on_every_float),
        cmocka_unit_test(ternary_and_widest),
        cmocka_unit_test(ops_over_their_dtypes),
        cmocka_unit_test(return_converts),
        cmocka_unit_test(every_cast_compiles),
        cmocka_unit_test(every_architecture),
        cmocka_unit_test(compile_errors),
        cmocka_unit_test(ops_refuse_what_the_catalogue_refuses),
        cmocka_unit_test(unknown_architecture),
        cmocka_unit_test(cache_fill),
    };
    return cmocka_run_group_tests(tests, NULL, summary);
}
