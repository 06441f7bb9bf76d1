/* SPDX-License-Identifier: Apache-2.0 */
/* Run-time compiled kernels (src/rtc/rtc.h): NVRTC through dlopen, the generated program, its
 * compilation. Nothing here touches a GPU: the CUBIN is for the caller to load. */
#define _GNU_SOURCE /* dladdr */
#include "rtc/rtc.h"

#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h> /* CUDART_VERSION: the runtime, and so the NVRTC major, of this build */

#include "catalogue/catalogue.h"
#include "abi/error.h"
#include "plan/layout.h"
#include "plan/plan.h"

#define EW_NVRTC_MAJOR (CUDART_VERSION / 1000)

/* The few NVRTC types this file uses, as nvrtc.h declares them in every release since CUDA 7: the
 * library is never linked against NVRTC, and a toolkit without its header (the CUDA 12 PyPI wheels
 * the CI build uses) builds it too. */
typedef struct _nvrtcProgram *nvrtcProgram;
typedef enum {
    NVRTC_SUCCESS = 0,
    NVRTC_ERROR_OUT_OF_MEMORY = 1,
    NVRTC_ERROR_INVALID_OPTION = 5,
    NVRTC_ERROR_COMPILATION = 6,
} nvrtcResult;

/* ---- loading ---- */

static struct {
    nvrtcResult (*version)(int *, int *);
    nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                          const char *const *);
    nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*log_size)(nvrtcProgram, size_t *);
    nvrtcResult (*log)(nvrtcProgram, char *);
    nvrtcResult (*cubin_size)(nvrtcProgram, size_t *);
    nvrtcResult (*cubin)(nvrtcProgram, char *);
    nvrtcResult (*destroy)(nvrtcProgram *);
    nvrtcResult (*add_name)(nvrtcProgram, const char *);
    nvrtcResult (*lowered_name)(nvrtcProgram, const char *, const char **);
    const char *(*error_string)(nvrtcResult);
    int major, minor;
    char path[1024];
    ew_status_t status;
    char message[512]; /* why it is not loaded, repeated by every call */
} nvrtc;
static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;

/* The functions of an opened library; 0 (and the message) when one is missing. */
static int bind_functions(void *library, const char *path)
{
    static const struct {
        const char *name;
        size_t offset;
    } functions[] = {
        {"nvrtcVersion", offsetof(__typeof__(nvrtc), version)},
        {"nvrtcCreateProgram", offsetof(__typeof__(nvrtc), create)},
        {"nvrtcCompileProgram", offsetof(__typeof__(nvrtc), compile)},
        {"nvrtcGetProgramLogSize", offsetof(__typeof__(nvrtc), log_size)},
        {"nvrtcGetProgramLog", offsetof(__typeof__(nvrtc), log)},
        {"nvrtcGetCUBINSize", offsetof(__typeof__(nvrtc), cubin_size)},
        {"nvrtcGetCUBIN", offsetof(__typeof__(nvrtc), cubin)},
        {"nvrtcDestroyProgram", offsetof(__typeof__(nvrtc), destroy)},
        {"nvrtcAddNameExpression", offsetof(__typeof__(nvrtc), add_name)},
        {"nvrtcGetLoweredName", offsetof(__typeof__(nvrtc), lowered_name)},
        {"nvrtcGetErrorString", offsetof(__typeof__(nvrtc), error_string)},
    };
    for (size_t i = 0; i < sizeof functions / sizeof functions[0]; ++i) {
        void *function = dlsym(library, functions[i].name);
        if (function == NULL) {
            snprintf(nvrtc.message, sizeof nvrtc.message, "%.300s is not a usable NVRTC: it lacks %s", path,
                     functions[i].name);
            return 0;
        }
        memcpy((char *)&nvrtc + functions[i].offset, &function, sizeof function);
    }
    return 1;
}

/* dlopen(path), first loading the libnvrtc-builtins of path's directory when path has one: NVRTC
 * opens its builtins by SONAME, which the loader would not find beside a wheel's copy. */
static void *open_nvrtc(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash != NULL) {
        char pattern[1100];
        snprintf(pattern, sizeof pattern, "%.*s/libnvrtc-builtins.so.*", (int)(slash - path), path);
        glob_t found;
        if (glob(pattern, 0, NULL, &found) == 0) {
            for (size_t i = 0; i < found.gl_pathc; ++i)
                if (dlopen(found.gl_pathv[i], RTLD_NOW | RTLD_LOCAL) != NULL)
                    break;
        }
        globfree(&found);
    }
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

/* Opens the first match of a glob pattern that loads; NULL if none. */
static void *open_glob(const char *pattern, char *path, size_t path_size)
{
    glob_t found;
    void *library = NULL;
    if (glob(pattern, 0, NULL, &found) == 0) {
        for (size_t i = 0; i < found.gl_pathc && library == NULL; ++i)
            if ((library = open_nvrtc(found.gl_pathv[i])) != NULL)
                snprintf(path, path_size, "%s", found.gl_pathv[i]);
    }
    globfree(&found);
    return library;
}

/* The NVRTC wheel of this build's CUDA major and its directory below site-packages: nvidia-cuda-nvrtc
 * (nvidia/cu13/lib) from CUDA 13 on, nvidia-cuda-nvrtc-cu12 (nvidia/cuda_nvrtc/lib) for CUDA 12. */
#if EW_NVRTC_MAJOR >= 13
#define NVRTC_WHEEL "nvidia-cuda-nvrtc"
#else
#define NVRTC_WHEEL "nvidia-cuda-nvrtc-cu12"
#endif
static void wheel_directory(char *out, size_t size)
{
    if (EW_NVRTC_MAJOR >= 13)
        snprintf(out, size, "nvidia/cu%d/lib", EW_NVRTC_MAJOR);
    else
        snprintf(out, size, "nvidia/cuda_nvrtc/lib");
}

/* The search, in order; the path found in nvrtc.path. */
static void *search(const char *soname)
{
    char candidate[sizeof nvrtc.path], wheel[64];
    void *library;
    /* 1. The loader's path (LD_LIBRARY_PATH, the ld.so cache: a toolkit or distribution package). */
    if ((library = dlopen(soname, RTLD_NOW | RTLD_LOCAL)) != NULL) {
        snprintf(nvrtc.path, sizeof nvrtc.path, "%s", soname);
        return library;
    }
    /* 2. The toolkit this library was built with, and the usual toolkit places: each as a library
     * directory and as a toolkit root (its lib64). */
    const char *toolkits[] = {
#ifdef EW_CUDA_TOOLKIT_LIBRARY_DIR
        EW_CUDA_TOOLKIT_LIBRARY_DIR,
#endif
        getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda/lib64"};
    for (size_t i = 0; i < sizeof toolkits / sizeof toolkits[0]; ++i) {
        if (toolkits[i] == NULL || toolkits[i][0] == '\0')
            continue;
        snprintf(candidate, sizeof candidate, "%s/%s", toolkits[i], soname);
        if ((library = open_nvrtc(candidate)) != NULL)
            goto found;
        snprintf(candidate, sizeof candidate, "%s/lib64/%s", toolkits[i], soname);
        if ((library = open_nvrtc(candidate)) != NULL)
            goto found;
    }
    /* 3. The nvidia-cuda-nvrtc wheel: beside this library when it is itself in site-packages, then in
     * the site-packages of the active environment, the user and the system. */
    wheel_directory(wheel, sizeof wheel);
    Dl_info self;
    if (dladdr((void *)ewi_nvrtc_load, &self) != 0 && self.dli_fname != NULL) {
        const char *slash = strrchr(self.dli_fname, '/');
        if (slash != NULL) {
            snprintf(candidate, sizeof candidate, "%.*s/../%s/%s", (int)(slash - self.dli_fname), self.dli_fname,
                     wheel, soname);
            if ((library = open_nvrtc(candidate)) != NULL)
                goto found;
        }
    }
    const char *home = getenv("HOME");
    char user[512] = "";
    if (home != NULL && home[0] != '\0')
        snprintf(user, sizeof user, "%s/.local", home);
    const char *prefixes[] = {getenv("VIRTUAL_ENV"), getenv("CONDA_PREFIX"), user, "/usr/local", "/usr"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; ++i) {
        if (prefixes[i] == NULL || prefixes[i][0] == '\0')
            continue;
        for (int dist = 0; dist < 2; ++dist) {
            snprintf(candidate, sizeof candidate, "%s/lib/python3*/%s-packages/%s/%s", prefixes[i],
                     dist ? "dist" : "site", wheel, soname);
            if ((library = open_glob(candidate, nvrtc.path, sizeof nvrtc.path)) != NULL)
                return library;
        }
    }
    /* 4. A Conda environment's own NVRTC package (cuda-nvrtc), in $CONDA_PREFIX/lib: last, so that no
     * NVRTC found before it changes. */
    const char *conda = getenv("CONDA_PREFIX");
    if (conda != NULL && conda[0] != '\0') {
        snprintf(candidate, sizeof candidate, "%s/lib/%s", conda, soname);
        if ((library = open_nvrtc(candidate)) != NULL)
            goto found;
    }
    return NULL;
found:
    snprintf(nvrtc.path, sizeof nvrtc.path, "%s", candidate);
    return library;
}

static void load(void)
{
    char soname[32], wheel[64];
    snprintf(soname, sizeof soname, "libnvrtc.so.%d", EW_NVRTC_MAJOR);
    wheel_directory(wheel, sizeof wheel);
    nvrtc.status = EW_ERROR_NOT_SUPPORTED;
    void *library;
    const char *named = getenv("EW_NVRTC_LIBRARY");
    if (named != NULL && named[0] != '\0') {
        /* Named by the user: that library or nothing, so a wrong path is an error, not a silent
         * fallback to another NVRTC. */
        if ((library = open_nvrtc(named)) == NULL) {
            snprintf(nvrtc.message, sizeof nvrtc.message,
                     "EW_NVRTC_LIBRARY=%.200s cannot be loaded (%.150s); point it at a %s, or unset it to search "
                     "the CUDA toolkit and the " NVRTC_WHEEL " wheel",
                     named, dlerror(), soname);
            return;
        }
        snprintf(nvrtc.path, sizeof nvrtc.path, "%s", named);
    } else if ((library = search(soname)) == NULL) {
        snprintf(nvrtc.message, sizeof nvrtc.message,
                 "run-time compiled kernels need NVRTC (%s), not found on the loader's path, in the CUDA toolkit "
                 "(%s, $CUDA_HOME, /usr/local/cuda), the " NVRTC_WHEEL " wheel (site-packages/%s under "
                 "$VIRTUAL_ENV, $CONDA_PREFIX, ~/.local, /usr/local, /usr) or $CONDA_PREFIX/lib; install the "
                 "toolkit's NVRTC or `pip install " NVRTC_WHEEL "`, or set EW_NVRTC_LIBRARY to its path",
                 soname,
#ifdef EW_CUDA_TOOLKIT_LIBRARY_DIR
                 EW_CUDA_TOOLKIT_LIBRARY_DIR,
#else
                 "the build's",
#endif
                 wheel);
        return;
    }
    if (!bind_functions(library, nvrtc.path))
        return; /* the library stays open: something in the process may hold its symbols */
    if (nvrtc.version(&nvrtc.major, &nvrtc.minor) != NVRTC_SUCCESS) {
        snprintf(nvrtc.message, sizeof nvrtc.message, "%.300s: nvrtcVersion failed", nvrtc.path);
        return;
    }
    nvrtc.status = EW_SUCCESS;
}

ew_status_t ewi_nvrtc_load(void)
{
    pthread_once(&nvrtc_once, load);
    if (nvrtc.status != EW_SUCCESS)
        return ewi_fail(nvrtc.status, "%s", nvrtc.message);
    return EW_SUCCESS;
}

const char *ewi_nvrtc_path(void) { return nvrtc.path; }

void ewi_nvrtc_version(int *major, int *minor)
{
    *major = nvrtc.major;
    *minor = nvrtc.minor;
}

/* ---- the program ---- */

/* The catalogue's device type of each dtype, as the generated program names it (inside namespace
 * ew, where Bool8 and F8E4M3 are found); ew::UserOf gives the user's type (bool for Bool8). */
#define EW_DTYPE_DEVICE_TYPE(value, name, type, size, kind) [value] = #type,
static const char *const device_types[EW_DTYPE_END] = {EW_CATALOGUE_DTYPES(EW_DTYPE_DEVICE_TYPE)};
#undef EW_DTYPE_DEVICE_TYPE

static int dtype_valid(ew_dtype_t dtype) { return (int)dtype > 0 && (int)dtype < EW_DTYPE_END; }

ew_status_t ewi_kernel_check_outputs(int n_outputs, const ew_kernel_output_t *outputs)
{
    if (n_outputs < 1 || n_outputs > EW_KERNEL_MAX_OUTPUTS)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "n_outputs = %d: a kernel takes 1 to %d outputs", n_outputs,
                        EW_KERNEL_MAX_OUTPUTS);
    if (outputs == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "outputs is NULL with n_outputs = %d", n_outputs);
    int arrays = 0, reductions = 0;
    for (int k = 0; k < n_outputs; ++k) {
        if ((int)outputs[k].reduce < EW_REDUCE_NONE || (int)outputs[k].reduce > EW_REDUCE_SUM)
            return ewi_fail(EW_ERROR_INVALID_VALUE, "outputs[%d].reduce = %d is not an ew_reduce_op_t", k,
                            (int)outputs[k].reduce);
        arrays += outputs[k].reduce == EW_REDUCE_NONE;
        reductions += outputs[k].reduce != EW_REDUCE_NONE;
    }
    if (arrays < 1 || reductions > 1)
        return ewi_fail(EW_ERROR_NOT_SUPPORTED,
                        "outputs: %d arrays and %d reductions; a kernel of outputs writes at least one array "
                        "and at most one reduction",
                        arrays, reductions);
    return EW_SUCCESS;
}

ew_status_t ewi_kernel_check(const ewi_kernel_spec_t *spec)
{
    if (spec == NULL || spec->source == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "the kernel's source is NULL");
    if (spec->n_inputs < 1 || spec->n_inputs > EWI_KERNEL_MAX_INPUTS)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "n_inputs = %d: a kernel takes 1 to %d inputs", spec->n_inputs,
                        EWI_KERNEL_MAX_INPUTS);
    if (spec->in_dtypes == NULL)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "in_dtypes is NULL with n_inputs = %d", spec->n_inputs);
    if (spec->n_params < 0 || spec->n_params > EWI_KERNEL_MAX_PARAMS)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "n_params = %d: a kernel takes 0 to %d params", spec->n_params,
                        EWI_KERNEL_MAX_PARAMS);
    ew_status_t status =
        spec->n_outputs != 0 ? ewi_kernel_check_outputs(spec->n_outputs, spec->outputs) : EW_SUCCESS;
    if (status != EW_SUCCESS)
        return status;
    if (spec->n_outputs == 0 && !dtype_valid(spec->out_dtype))
        return ewi_fail(EW_ERROR_NOT_SUPPORTED, "out_dtype %d is not a dtype of user kernels", (int)spec->out_dtype);
    for (int k = 0; k < spec->n_outputs; ++k)
        if (spec->outputs[k].reduce == EW_REDUCE_NONE && !dtype_valid(spec->outputs[k].dtype))
            return ewi_fail(EW_ERROR_NOT_SUPPORTED, "outputs[%d].dtype = %d is not a dtype of user kernels",
                            k, (int)spec->outputs[k].dtype);
    for (int i = 0; i < spec->n_inputs; ++i)
        if (!dtype_valid(spec->in_dtypes[i]))
            return ewi_fail(EW_ERROR_NOT_SUPPORTED, "in_dtypes[%d] = %d is not a dtype of user kernels", i, (int)spec->in_dtypes[i]);
    const int reduction = ewi_kernel_reduction(spec);
    if (reduction >= 0 && spec->outputs[reduction].dtype != EW_F32 &&
        spec->outputs[reduction].dtype != EW_F64)
        return ewi_fail(EW_ERROR_NOT_SUPPORTED,
                        "outputs[%d] is a reduction into %s: reductions are into EW_F32 or EW_F64", reduction,
                        dtype_valid(spec->outputs[reduction].dtype)
                            ? ew_dtype_name(spec->outputs[reduction].dtype)
                            : "no dtype");
    return EW_SUCCESS;
}

int ewi_kernel_arrays(const ewi_kernel_spec_t *spec, ew_dtype_t dtypes[EW_KERNEL_MAX_OUTPUTS])
{
    if (spec->n_outputs == 0) {
        if (dtypes != NULL)
            dtypes[0] = spec->out_dtype;
        return 1;
    }
    int arrays = 0;
    for (int k = 0; k < spec->n_outputs; ++k)
        if (spec->outputs[k].reduce == EW_REDUCE_NONE) {
            if (dtypes != NULL)
                dtypes[arrays] = spec->outputs[k].dtype;
            ++arrays;
        }
    return arrays;
}

int ewi_kernel_reduction(const ewi_kernel_spec_t *spec)
{
    for (int k = 0; k < spec->n_outputs; ++k)
        if (spec->outputs[k].reduce != EW_REDUCE_NONE)
            return k;
    return -1;
}

/* A growing string; on failure of an allocation `text` becomes NULL and stays so. */
typedef struct {
    char *text;
    size_t length, capacity;
    int lines; /* newlines so far, for the #line after the user's source */
} buffer_t;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void append(buffer_t *b, const char *format, ...)
{
    if (b->text == NULL)
        return;
    va_list args;
    va_start(args, format);
    int needed = vsnprintf(b->text + b->length, b->capacity - b->length, format, args);
    va_end(args);
    if (needed < 0) {
        free(b->text);
        b->text = NULL;
        return;
    }
    if ((size_t)needed >= b->capacity - b->length) {
        size_t capacity = b->capacity;
        while ((size_t)needed >= capacity - b->length)
            capacity *= 2;
        char *grown = realloc(b->text, capacity);
        if (grown == NULL) {
            free(b->text);
            b->text = NULL;
            return;
        }
        b->text = grown;
        b->capacity = capacity;
        va_start(args, format);
        vsnprintf(b->text + b->length, b->capacity - b->length, format, args);
        va_end(args);
    }
    for (size_t i = b->length; i < b->length + (size_t)needed; ++i)
        b->lines += b->text[i] == '\n';
    b->length += (size_t)needed;
}

/* "in0_t in0, in1_t in1, double p0": the body's arguments. */
static void body_arguments(buffer_t *b, const ewi_kernel_spec_t *spec)
{
    for (int i = 0; i < spec->n_inputs; ++i)
        append(b, "%sin%d_t in%d", i == 0 ? "" : ", ", i, i);
    for (int i = 0; i < spec->n_params; ++i)
        append(b, ", double p%d", i);
}

ew_status_t ewi_kernel_program(const ewi_kernel_spec_t *spec, char **program)
{
    *program = NULL;
    ew_status_t status = ewi_kernel_check(spec);
    if (status != EW_SUCCESS)
        return status;
    buffer_t b = {.text = malloc(4096), .capacity = 4096};
    if (b.text != NULL)
        b.text[0] = '\0';
    append(&b, "// Generated by libelementwise (src/rtc/rtc.c) around a user's kernel body.\n");
    if (spec->program == EWI_PROGRAM_STRIDED)
        append(&b, "#define EW_MAX_DIMS %d\n#include \"device/strided.cuh\"\n", EW_MAX_DIMS);
    else if (spec->program == EWI_PROGRAM_BATCHED)
        append(&b, "#include \"device/batched.cuh\"\n");
    else if (spec->program == EWI_PROGRAM_BULK)
        append(&b, "#include \"device/bulk.cuh\"\n");
    else
        append(&b, "#include \"device/direct.cuh\"\n");
    /* The outputs: ew_kernel_create's one, out_t, which the body returns; or ew_kernel_create_outputs'
     * out<k>, which the body assigns: an array's as ew::Result<out<k>_t>, the reduction's as
     * ew::Given<red_t>. The functor returns the arrays in their order (several: ew::Outputs). */
    const int assigns = spec->n_outputs > 0, reduction = ewi_kernel_reduction(spec);
    ew_dtype_t arrays[EW_KERNEL_MAX_OUTPUTS];
    const int n_arrays = ewi_kernel_arrays(spec, arrays);
    append(&b, "namespace ew {\nnamespace kernel {\n");
    if (!assigns)
        append(&b, "typedef UserOf<%s> out_t;\n", device_types[spec->out_dtype]);
    for (int k = 0; k < spec->n_outputs; ++k)
        if (k != reduction)
            append(&b, "typedef UserOf<%s> out%d_t;\n", device_types[spec->outputs[k].dtype], k);
    if (reduction >= 0)
        append(&b, "typedef %s red_t;\n", spec->outputs[reduction].dtype == EW_F64 ? "double" : "float");
    for (int i = 0; i < spec->n_inputs; ++i)
        append(&b, "typedef UserOf<%s> in%d_t;\n", device_types[spec->in_dtypes[i]], i);
    append(&b, "} // namespace kernel\n} // namespace ew\nusing namespace ew::kernel;\n\n");
    if (assigns) {
        append(&b, "__device__ __forceinline__ void ew_body(");
        for (int k = 0; k < spec->n_outputs; ++k)
            append(&b, k == reduction ? "ew::Given<red_t> &out%d, " : "ew::Result<out%d_t> &out%d, ", k, k);
    } else {
        append(&b, "__device__ __forceinline__ ew::Result<out_t> ew_body(");
    }
    body_arguments(&b, spec);
    append(&b, ")\n{\n#line 1 \"source\"\n%s\n", spec->source);
    append(&b, "#line %d \"ew_kernel.cu\"\n}\n\n", b.lines + 2);

    /* The body as a functor of storage types, the catalogue's form; its parameters come as a fixed
     * array of EWI_KERNEL_MAX_PARAMS doubles (src/abi/user_kernel.c passes them so: ew_functor_t). */
    append(&b, "struct ew_op {\n    using Out = ");
    if (!assigns) {
        append(&b, "ew::StorageOf<out_t>;\n");
    } else {
        append(&b, n_arrays > 1 ? "ew::Outputs<" : "");
        for (int k = 0, a = 0; k < spec->n_outputs; ++k)
            if (k != reduction)
                append(&b, "%sew::StorageOf<out%d_t>", a++ == 0 ? "" : ", ", k);
        append(&b, n_arrays > 1 ? ">;\n" : ";\n");
    }
    static const char *const input_names[] = {"In1", "In2", "In3", "In4"};
    for (int i = 0; i < spec->n_inputs; ++i)
        append(&b, "    using %s = ew::StorageOf<in%d_t>;\n", input_names[i], i);
    if (spec->n_inputs == 1)
        append(&b, "    using In2 = ew::NoInput;\n");
    append(&b,
           "    static constexpr bool kHasPair = false, kHasQuad = false;\n"
           "    static constexpr int kParams = %d; // those of p a list's entry may give "
           "(src/device/batched.cuh)\n"
           "    double p[%d];\n",
           spec->n_params, EWI_KERNEL_MAX_PARAMS);
    static const char *const reduce_ops[] = {[EW_REDUCE_ABS_MAX] = "AbsMax",
                                             [EW_REDUCE_MAX] = "Max",
                                             [EW_REDUCE_MIN] = "Min",
                                             [EW_REDUCE_SUM] = "Sum"};
    if (reduction >= 0) /* after the parameters: src/abi/user_kernel.c writes its target there */
        append(&b, "    mutable ew::Reduce<ew::ReduceOp::%s, red_t> reduction;\n",
               reduce_ops[spec->outputs[reduction].reduce]);
    append(&b, "    __device__ __forceinline__ Out operator()(");
    for (int i = 0; i < spec->n_inputs; ++i)
        append(&b, "%s%s x%d", i == 0 ? "" : ", ", input_names[i], i);
    append(&b, ") const\n    {\n");
    if (assigns) {
        for (int k = 0; k < spec->n_outputs; ++k)
            append(&b,
                   k == reduction ? "        ew::Given<red_t> out%d;\n"
                                  : "        ew::Result<out%d_t> out%d;\n",
                   k, k);
        append(&b, "        ew_body(");
        for (int k = 0; k < spec->n_outputs; ++k)
            append(&b, "out%d, ", k);
    } else {
        append(&b, "        return ew::UserType<out_t>::to_storage(ew_body(");
    }
    for (int i = 0; i < spec->n_inputs; ++i)
        append(&b, "%sew::UserType<in%d_t>::from_storage(x%d)", i == 0 ? "" : ", ", i, i);
    for (int i = 0; i < spec->n_params; ++i)
        append(&b, ", p[%d]", i);
    if (!assigns) {
        append(&b, ").value);\n    }\n};\n");
    } else {
        append(&b, ");\n");
        if (reduction >= 0)
            append(&b, "        if (out%d.given)\n            reduction.fold(out%d.value);\n", reduction,
                   reduction);
        append(&b, "        return {");
        for (int k = 0, a = 0; k < spec->n_outputs; ++k)
            if (k != reduction)
                append(&b, "%sew::UserType<out%d_t>::to_storage(out%d.value)", a++ == 0 ? "" : ", ", k, k);
        append(&b, "};\n    }\n};\n");
    }
    if (b.text == NULL)
        return ewi_fail(EW_ERROR_OUT_OF_MEMORY, "kernel: out of host memory for the program");
    *program = b.text;
    return EW_SUCCESS;
}

/* A kernel template's name expression with functor ew_op, the program's. */
#define EW_NAME(...) EW_NAME_(__VA_ARGS__)
#define EW_NAME_(...) "&" #__VA_ARGS__
#define EW_BY_PACK(KERNEL)                                                                             \
    {                                                                                                  \
        EW_NAME(KERNEL(ew_op, 1)), EW_NAME(KERNEL(ew_op, 2)), EW_NAME(KERNEL(ew_op, 4)), EW_NAME(KERNEL(ew_op, 8)) \
    }
/* Runs of two packs an access: the only runs there are (EW_PLAN_ACCESS_PACKS). */
#define EW_KERNEL_RUNS_OF_TWO(F, P) EW_KERNEL_RUNS(F, P, 2)

const char *ewi_kernel_slot_expression(const ewi_slots_t *slots, int slot)
{
    /* by slot, then by log2 of the slot's pack: its own for PACK1 to PACK8, else the widest */
    static const char *const names[][4] = {
        [EW_SLOT_PACK1] = EW_BY_PACK(EW_KERNEL_ALIGNED),
        [EW_SLOT_PACK2] = EW_BY_PACK(EW_KERNEL_ALIGNED),
        [EW_SLOT_PACK4] = EW_BY_PACK(EW_KERNEL_ALIGNED),
        [EW_SLOT_PACK8] = EW_BY_PACK(EW_KERNEL_ALIGNED),
        [EW_SLOT_RUNS] = EW_BY_PACK(EW_KERNEL_RUNS_OF_TWO),
        [EW_SLOT_SHIFTED] = EW_BY_PACK(EW_KERNEL_SHIFTED),
        [EW_SLOT_OUT_SHIFTED] = EW_BY_PACK(EW_KERNEL_OUT_SHIFTED),
        [EW_SLOT_BULK] = EW_BY_PACK(EW_KERNEL_BULK),
        [EW_SLOT_GATHER] = EW_BY_PACK(EW_KERNEL_GATHER),
        [EW_SLOT_ROWS] = EW_BY_PACK(EW_KERNEL_ROWS),
        [EW_SLOT_TILED] = EW_BY_PACK(EW_KERNEL_TILED),
        [EW_SLOT_BATCHED] = EW_BY_PACK(EW_KERNEL_BATCHED),
        [EW_SLOT_BATCHED_LARGE] = EW_BY_PACK(EW_KERNEL_BATCHED_LARGE),
    };
    if (slot < 0 || slot >= EW_SLOT_BATCHED_LARGE + 1 || !slots->present[slot])
        return NULL;
    const int pack = slot <= EW_SLOT_PACK8 ? 1 << slot : slots->widest_pack;
    return names[slot][ew_pack_slot(pack) - EW_SLOT_PACK1];
}

ewi_slots_t ewi_kernel_slots(const ewi_kernel_spec_t *spec)
{
    ewi_slots_t slots = {0};
    ew_dtype_t arrays[EW_KERNEL_MAX_OUTPUTS];
    const int n_arrays = ewi_kernel_arrays(spec, arrays);
    /* sizes[0]: out's, or the widest output's, where several (never read by ew_plan_can_shift) */
    size_t sizes[EW_PLAN_MAX_POINTERS] = {0};
    for (int k = 0; k < n_arrays; ++k)
        sizes[0] = ew_dtype_size(arrays[k]) > sizes[0] ? ew_dtype_size(arrays[k]) : sizes[0];
    size_t widest = sizes[0];
    for (int i = 0; i < spec->n_inputs; ++i) {
        sizes[1 + i] = ew_dtype_size(spec->in_dtypes[i]);
        widest = sizes[1 + i] > widest ? sizes[1 + i] : widest;
    }
    slots.widest_pack = EW_PLAN_MAX_PACK(widest);
    slots.access_packs = EW_PLAN_ACCESS_PACKS(widest);
    if (spec->program == EWI_PROGRAM_STRIDED) { /* several arrays: the gather kernel alone (src/plan) */
        slots.present[EW_SLOT_GATHER] = 1;
        slots.present[EW_SLOT_ROWS] = slots.present[EW_SLOT_TILED] = n_arrays == 1;
        return slots;
    }
    if (spec->program == EWI_PROGRAM_BATCHED) {
        slots.present[EW_SLOT_BATCHED] = slots.present[EW_SLOT_BATCHED_LARGE] = 1;
        return slots;
    }
    slots.present[EW_SLOT_RUNS] = slots.access_packs > 1;
    if (n_arrays == 1 && EW_PLAN_SHIFTS_OUT(1 + spec->n_inputs, sizes[0], sizes[1]))
        slots.present[EW_SLOT_OUT_SHIFTED] = 1;
    else
        slots.present[EW_SLOT_SHIFTED] = ew_plan_can_shift(slots.widest_pack, 1 + spec->n_inputs, sizes);
    /* ew_plan_make narrows the pack only where pointers at other phases can be neither shifted nor
     * out-shifted, or where several outputs' phases differ: elsewhere the widest pack is the one aligned
     * kernel a plan picks (fewer kernels, a faster compile). */
    const int shifts =
        n_arrays == 1 && (slots.present[EW_SLOT_SHIFTED] || slots.present[EW_SLOT_OUT_SHIFTED]);
    for (int slot = EW_SLOT_PACK1; slot <= EW_SLOT_PACK8; ++slot)
        slots.present[slot] = shifts ? (1 << slot) == slots.widest_pack : (1 << slot) <= slots.widest_pack;
    /* at the widest pack, as the catalogue's; empty below sm_90, where no policy plans it */
    slots.present[EW_SLOT_BULK] = 1;
    /* each of these kernels in one of the flat launches' programs */
    for (int slot = EW_SLOT_PACK1; slot <= EW_SLOT_BULK; ++slot)
        slots.present[slot] &= ewi_flat_slot_program((ew_slot_t)slot) == spec->program;
    return slots;
}

ewi_program_t ewi_flat_slot_program(ew_slot_t slot)
{
    return slot == EW_SLOT_BULK                                     ? EWI_PROGRAM_BULK
           : slot == EW_SLOT_SHIFTED || slot == EW_SLOT_OUT_SHIFTED ? EWI_PROGRAM_SHIFTED
                                                                    : EWI_PROGRAM_FLAT;
}

ewi_slots_t ewi_kernel_flat_slots(const ewi_kernel_spec_t *spec)
{
    static const ewi_program_t programs[] = {EWI_PROGRAM_SHIFTED, EWI_PROGRAM_BULK};
    ewi_kernel_spec_t program = *spec;
    program.program = EWI_PROGRAM_FLAT;
    ewi_slots_t slots = ewi_kernel_slots(&program);
    for (size_t p = 0; p < sizeof programs / sizeof programs[0]; ++p) {
        program.program = programs[p];
        const ewi_slots_t more = ewi_kernel_slots(&program);
        for (int slot = 0; slot < EW_SLOT_COUNT; ++slot)
            slots.present[slot] |= more.present[slot];
    }
    return slots;
}

/* ---- compilation ---- */

void ewi_kernel_binary_free(ewi_kernel_binary_t *binary)
{
    free(binary->cubin);
    free(binary->log);
    for (int slot = 0; slot < EW_SLOT_COUNT; ++slot)
        free(binary->lowered[slot]);
    *binary = (ewi_kernel_binary_t){0};
}

/* "sm_" and digits, with an optional letter suffix (sm_90a, sm_100f): a real architecture. */
static int arch_valid(const char *arch)
{
    if (arch == NULL || strncmp(arch, "sm_", 3) != 0 || arch[3] < '0' || arch[3] > '9')
        return 0;
    size_t i = 3;
    while (arch[i] >= '0' && arch[i] <= '9')
        ++i;
    if (arch[i] >= 'a' && arch[i] <= 'z')
        ++i;
    return arch[i] == '\0' && i < 16;
}

/* The message of a failed compile: the log's first lines, as many as the message holds. */
static ew_status_t fail_compile(const char *arch, const char *log)
{
    char head[360];
    size_t length = 0;
    int lines = 0;
    for (const char *p = log != NULL ? log : ""; *p != '\0' && lines < 8 && length + 1 < sizeof head; ++p) {
        head[length++] = *p;
        lines += *p == '\n';
    }
    while (length > 0 && (head[length - 1] == '\n' || head[length - 1] == ' '))
        --length;
    head[length] = '\0';
    return ewi_fail(EW_ERROR_INVALID_VALUE, "the kernel's source does not compile (NVRTC %d.%d, %s):\n%s", nvrtc.major,
                    nvrtc.minor, arch, head);
}

ew_status_t ewi_kernel_compile(const ewi_kernel_spec_t *spec, const char *arch, ewi_kernel_binary_t *binary)
{
    *binary = (ewi_kernel_binary_t){0};
    char *program;
    ew_status_t status = ewi_kernel_program(spec, &program);
    if (status != EW_SUCCESS)
        return status;
    const ewi_slots_t slots = ewi_kernel_slots(spec);
    status = ewi_kernel_compile_program(program, &slots, arch, binary);
    free(program);
    return status;
}

/* The CUBIN of a compiled program, and the lowered name of each slot's kernel in it. */
static ew_status_t take_results(nvrtcProgram handle, const ewi_slots_t *slots, const char *arch,
                                ewi_kernel_binary_t *binary)
{
    if (nvrtc.cubin_size(handle, &binary->cubin_size) != NVRTC_SUCCESS || binary->cubin_size == 0)
        return ewi_fail(EW_ERROR_NOT_SUPPORTED, "NVRTC gave no CUBIN for %s", arch);
    if ((binary->cubin = malloc(binary->cubin_size)) == NULL)
        return ewi_fail(EW_ERROR_OUT_OF_MEMORY, "kernel: out of host memory for the CUBIN");
    if (nvrtc.cubin(handle, binary->cubin) != NVRTC_SUCCESS)
        return ewi_fail(EW_ERROR_NOT_SUPPORTED, "nvrtcGetCUBIN failed");
    for (int slot = 0; slot < EW_SLOT_COUNT; ++slot) {
        const char *lowered = NULL, *expression = ewi_kernel_slot_expression(slots, slot);
        if (expression == NULL)
            continue;
        if (nvrtc.lowered_name(handle, expression, &lowered) != NVRTC_SUCCESS || lowered == NULL)
            return ewi_fail(EW_ERROR_NOT_SUPPORTED, "nvrtcGetLoweredName failed for %s", expression);
        if ((binary->lowered[slot] = strdup(lowered)) == NULL) /* NVRTC's until the program goes */
            return ewi_fail(EW_ERROR_OUT_OF_MEMORY, "kernel: out of host memory for the kernels' names");
    }
    return EW_SUCCESS;
}

/* Compiles handle for arch: EW_SUCCESS, or the failure with NVRTC's log in binary->log. */
static ew_status_t compile(nvrtcProgram handle, const char *arch, ewi_kernel_binary_t *binary)
{
    char architecture[32];
    snprintf(architecture, sizeof architecture, "--gpu-architecture=%s", arch);
    /* -default-device: the program is device code, so the plan's C prototypes and a user's helper
     * functions need no __device__; --diag-error=940: a body that can end without returning is an
     * error, not garbage at run time */
    const char *options[6] = {architecture, "-std=c++17", "--diag-error=940", "-default-device"};
    int count = 4;
#ifdef EW_GENERIC_CONVERSIONS
    options[count++] = "-DEW_GENERIC_CONVERSIONS"; /* the catalogue's conversion paths in this build */
#endif
    /* NVRTC 12.9 and later also keep each program in the driver's compute cache (~/.nv), looked up and
     * stored on every compile: the library's caches already hold it, where the user put them. */
    if (nvrtc.major > 12 || (nvrtc.major == 12 && nvrtc.minor >= 9))
        options[count++] = "--no-cache";
    const nvrtcResult result = nvrtc.compile(handle, count, options);
    size_t log_size = 0;
    if (nvrtc.log_size(handle, &log_size) == NVRTC_SUCCESS && log_size > 1 &&
        (binary->log = malloc(log_size)) != NULL && nvrtc.log(handle, binary->log) != NVRTC_SUCCESS) {
        free(binary->log);
        binary->log = NULL;
    }
    if (result == NVRTC_ERROR_COMPILATION)
        return fail_compile(arch, binary->log);
    if (result == NVRTC_ERROR_INVALID_OPTION)
        return ewi_fail(EW_ERROR_INVALID_VALUE, "NVRTC %d.%d refuses the options (arch %s): %.300s", nvrtc.major,
                        nvrtc.minor, arch, binary->log != NULL ? binary->log : "");
    if (result != NVRTC_SUCCESS)
        return ewi_fail(result == NVRTC_ERROR_OUT_OF_MEMORY ? EW_ERROR_OUT_OF_MEMORY : EW_ERROR_NOT_SUPPORTED,
                        "nvrtcCompileProgram failed: %s", nvrtc.error_string(result));
    return EW_SUCCESS;
}

ew_status_t ewi_kernel_compile_program(const char *program, const ewi_slots_t *slots, const char *arch,
                                       ewi_kernel_binary_t *binary)
{
    *binary = (ewi_kernel_binary_t){0};
    if (!arch_valid(arch))
        return ewi_fail(EW_ERROR_INVALID_VALUE, "arch \"%.40s\" is not a real GPU architecture such as \"sm_90\"",
                        arch != NULL ? arch : "(null)");
    ew_status_t status = ewi_nvrtc_load();
    if (status != EW_SUCCESS)
        return status;

    nvrtcProgram handle;
    const char *header_names[EWI_DEVICE_HEADER_COUNT], *headers[EWI_DEVICE_HEADER_COUNT];
    for (int i = 0; i < EWI_DEVICE_HEADER_COUNT; ++i) {
        header_names[i] = ewi_device_headers[i].name;
        headers[i] = ewi_device_headers[i].text;
    }
    nvrtcResult result = nvrtc.create(&handle, program, "ew_kernel.cu", EWI_DEVICE_HEADER_COUNT, headers, header_names);
    if (result != NVRTC_SUCCESS)
        return ewi_fail(result == NVRTC_ERROR_OUT_OF_MEMORY ? EW_ERROR_OUT_OF_MEMORY : EW_ERROR_NOT_SUPPORTED,
                        "nvrtcCreateProgram failed: %s", nvrtc.error_string(result));
    /* the kernels the plans can pick, instantiated by name: the catalogue's own templates */
    for (int slot = 0; slot < EW_SLOT_COUNT && result == NVRTC_SUCCESS; ++slot)
        if (slots->present[slot])
            result = nvrtc.add_name(handle, ewi_kernel_slot_expression(slots, slot));
    status = result != NVRTC_SUCCESS
                 ? ewi_fail(EW_ERROR_NOT_SUPPORTED, "nvrtcAddNameExpression failed: %s", nvrtc.error_string(result))
                 : compile(handle, arch, binary);
    if (status == EW_SUCCESS)
        status = take_results(handle, slots, arch, binary);
    nvrtc.destroy(&handle);
    if (status != EW_SUCCESS) { /* the log stays, for the caller */
        char *log = binary->log;
        binary->log = NULL;
        ewi_kernel_binary_free(binary);
        binary->log = log;
    }
    return status;
}
