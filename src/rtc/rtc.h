/* SPDX-License-Identifier: Apache-2.0 */
/* Run-time compiled elementwise kernels: NVRTC loaded with dlopen on first use,
 * never linked, so the catalogue keeps needing nothing but the driver; the program text generated for
 * a user's body; its compilation to a CUBIN, which src/rtc/modules.c loads (docs/design.md, "Run-time
 * compiled ops"). */
#ifndef EW_RTC_H
#define EW_RTC_H

#include <stddef.h>

#include "elementwise.h"
#include "launch/kernel_set.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { EWI_KERNEL_MAX_INPUTS = EW_KERNEL_MAX_INPUTS, EWI_KERNEL_MAX_PARAMS = EW_KERNEL_MAX_PARAMS };


/* Loads NVRTC once per process: EW_NVRTC_LIBRARY when set (that path only), else the toolkit's
 * libnvrtc.so.<major of the CUDA runtime the library carries> on the loader's path and in the toolkit
 * it was built with, else the nvidia-cuda-nvrtc wheel's copy in the usual site-packages. EW_SUCCESS,
 * or EW_ERROR_NOT_SUPPORTED with a message naming what was searched and how to supply it (the same
 * message on every later call). Thread-safe. */
ew_status_t ewi_nvrtc_load(void);

/* After a successful load: the path that was loaded and NVRTC's version. */
const char *ewi_nvrtc_path(void);
void ewi_nvrtc_version(int *major, int *minor);

/* A kernel's programs, each compiled at its first use: the flat launches' aligned direct kernels (at
 * create); their direct kernels through shifted windows, and the bulk-copy kernel (each at the first
 * flat launch whose plan picks it: pointers at other phases, a large call), which would otherwise
 * take most of a create's compile; the strided launches'; the lists'. */
typedef enum {
    EWI_PROGRAM_FLAT,
    EWI_PROGRAM_SHIFTED,
    EWI_PROGRAM_BULK,
    EWI_PROGRAM_STRIDED,
    EWI_PROGRAM_BATCHED,
    EWI_PROGRAMS
} ewi_program_t;

/* A kernel: out = body(in0 .. in{n_inputs-1}, p0 .. p{n_params-1}) elementwise, where `source` is
 * the body of a device function taking the inputs as their dtypes' user types (bool, int8_t, ...,
 * __half, __nv_bfloat16, float, double, __nv_fp8_e4m3, __nv_fp8_e5m2) and the params as doubles, and
 * returning a value of any dtype's type, converted to out_dtype as ew_cast converts; or, a kernel of
 * outputs (n_outputs > 0), assigning out0 .. out{n_outputs-1}: arrays, and at most one reduction. */
typedef struct {
    const char *source;
    ew_dtype_t
        out_dtype; /* n_outputs 0 (ew_kernel_create's kernels): the one output, which the body returns */
    int n_inputs;  /* 1 to EWI_KERNEL_MAX_INPUTS */
    const ew_dtype_t *in_dtypes;
    int n_params; /* 0 to EWI_KERNEL_MAX_PARAMS */
    ewi_program_t program; /* which of its programs */
    int n_outputs; /* 0, or ew_kernel_create_outputs' outputs: 1 to EW_KERNEL_MAX_OUTPUTS */
    ew_kernel_output_t outputs[EW_KERNEL_MAX_OUTPUTS];
} ewi_kernel_spec_t;

/* EW_SUCCESS, or EW_ERROR_INVALID_VALUE / EW_ERROR_NOT_SUPPORTED (a dtype outside the enum, outputs
 * this release does not take) with the message. Needs no NVRTC. */
ew_status_t ewi_kernel_check(const ewi_kernel_spec_t *spec);

/* ew_kernel_create_outputs' outputs: 1 to EW_KERNEL_MAX_OUTPUTS of them, each reduction inside its
 * enum (EW_ERROR_INVALID_VALUE), at least one array and at most one reduction (EW_ERROR_NOT_SUPPORTED).
 * The first of ewi_kernel_check's checks for a kernel of outputs. */
ew_status_t ewi_kernel_check_outputs(int n_outputs, const ew_kernel_output_t *outputs);

/* A checked spec's array outputs (1 for n_outputs 0), their dtypes in order into dtypes (may be NULL),
 * and the index of its reduction output among all its outputs (-1: none). */
int ewi_kernel_arrays(const ewi_kernel_spec_t *spec, ew_dtype_t dtypes[EW_KERNEL_MAX_OUTPUTS]);
int ewi_kernel_reduction(const ewi_kernel_spec_t *spec);

/* The whole program NVRTC compiles for spec (it #includes the embedded device header), in *program,
 * malloc'ed, NUL-terminated; the caller frees it. Needs no NVRTC. */
ew_status_t ewi_kernel_program(const ewi_kernel_spec_t *spec, char **program);

/* A compiled program: the CUBIN, the lowered (mangled) name of each slot's kernel in it (NULL where the
 * program has none), and NVRTC's log (warnings or errors; NULL when empty). */
typedef struct {
    void *cubin;
    size_t cubin_size;
    char *lowered[EW_SLOT_COUNT];
    char *log;
} ewi_kernel_binary_t;

/* Which kernels spec's program has, one per slot a plan can pick (src/launch/kernel_set.h), by the rules the
 * catalogue's sets are built by (src/plan/plan.h's macros): the flat program the direct kernel aligned at
 * each pack width and in runs of two packs an access (1-byte types); the shifted program the direct
 * kernel with inputs through shifted windows, or with out stored element by element (none where
 * neither exists); the bulk program the bulk-copy kernel; the strided program the gather, rows and
 * tiled kernels at the widest pack; the lists' program the list kernel of each descriptor block. */
typedef struct {
    int present[EW_SLOT_COUNT];
    int widest_pack;  /* EW_PLAN_MAX_PACK of the widest operand */
    int access_packs; /* EW_PLAN_ACCESS_PACKS of it: the runs slot's packs an access */
} ewi_slots_t;
ewi_slots_t ewi_kernel_slots(const ewi_kernel_spec_t *spec);

/* The kernels spec's flat launches can run: its flat, shifted and bulk programs'. */
ewi_slots_t ewi_kernel_flat_slots(const ewi_kernel_spec_t *spec);

/* The program that holds a flat launch's slot. */
ewi_program_t ewi_flat_slot_program(ew_slot_t slot);

/* The name expression of a slot's kernel in the program, the kernel template the catalogue's set has in
 * that slot (src/launch/kernel_set.h: EW_KERNEL_ALIGNED, ...) instantiated for the program's functor,
 * which NVRTC instantiates by it; NULL where the program has none. */
const char *ewi_kernel_slot_expression(const ewi_slots_t *slots, int slot);

/* Compiles spec for `arch` ("sm_90": a real architecture, since the result is a CUBIN). EW_SUCCESS
 * with the CUBIN; EW_ERROR_INVALID_VALUE when the source does not compile (the log's first lines in
 * the message, the whole log in binary->log) or arch is not an architecture NVRTC takes;
 * EW_ERROR_NOT_SUPPORTED without NVRTC; EW_ERROR_OUT_OF_MEMORY. Release with ewi_kernel_binary_free,
 * whatever the status. Thread-safe. */
ew_status_t ewi_kernel_compile(const ewi_kernel_spec_t *spec, const char *arch, ewi_kernel_binary_t *binary);
/* The same for a program ewi_kernel_program made for a spec of these slots (the caller has it already:
 * the caches' key holds it). */
ew_status_t ewi_kernel_compile_program(const char *program, const ewi_slots_t *slots, const char *arch,
                                       ewi_kernel_binary_t *binary);
void ewi_kernel_binary_free(ewi_kernel_binary_t *binary);


/* The device headers a program includes, embedded at build time (src/device_header.c.in): the
 * catalogue's own scalar semantics and kernels, NUL-terminated texts under their include names. */
typedef struct {
    const char *name;
    const char *text;
    size_t size; /* without the NUL */
} ewi_device_header_t;
enum { EWI_DEVICE_HEADER_COUNT = 14 };
extern const ewi_device_header_t ewi_device_headers[EWI_DEVICE_HEADER_COUNT];
/* The first 16 hex digits of a SHA-256 over the embedded names and bytes, taken at build time. */
extern const char ewi_device_headers_digest[];

#ifdef __cplusplus
}
#endif

#endif
