/* SPDX-License-Identifier: Apache-2.0 */
/* elementwise._elementwise: the Python binding's compiled half, against CPython's stable ABI.
 *
 * Operands are read in C: through the DLPack C exchange API where the array's type offers it
 * (__dlpack_c_exchange_api__: PyTorch), else __cuda_array_interface__ (CuPy, Numba, older PyTorch),
 * else __dlpack__ capsules. Shapes broadcast as NumPy's do; every other layout rule (merging
 * dimensions, overlap, alignment, the most dimensions) is the library's own: an operand that is not
 * contiguous over the output's shape goes to the strided call as it is, and the library refuses
 * what it cannot take. The library is loaded with dlopen from the path the Python loader chose (the
 * copy bundled beside this module, or ELEMENTWISE_LIBRARY); it must have every call of 1.1, and the
 * calls of 1.2 (the scaled casts per tensor and in blocks, kernels of several outputs and over tensor
 * lists) are bound when present (their calls say so when not).
 *
 * Py_LIMITED_API 3.10: METH_FASTCALL | METH_KEYWORDS entered the stable ABI in 3.10. */
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030A0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "dlpack.h"
#include "elementwise.h"

/* The most dimensions an operand may have here (NumPy's limit); the library takes EW_MAX_DIMS. */
#define MAX_NDIM 64
#define MAX_DEVICES 64
#define MAX_INPUTS 4

/* ---- the library, loaded at import ---- */

#define LIBRARY_FUNCTIONS(X)                                                                                 \
    X(ew_get_version) X(ew_handle_create) X(ew_handle_destroy) X(ew_handle_get_sm_count)                     \
    X(ew_handle_get_max_threads_per_sm) X(ew_unary) X(ew_binary) X(ew_cast) X(ew_scale_add)                  \
    X(ew_is_supported) X(ew_status_string) X(ew_dtype_name) X(ew_dtype_size) X(ew_get_last_error_message)    \
    X(ew_unary_strided) X(ew_binary_strided) X(ew_cast_strided) X(ew_scale_add_strided) X(ew_unary_batched)  \
    X(ew_binary_batched) X(ew_cast_batched) X(ew_scale_add_batched) X(ew_kernel_create) X(ew_kernel_launch)  \
    X(ew_kernel_launch_strided) X(ew_kernel_destroy)

/* Since 1.2: bound when the library has them, else NULL. */
#define SCALED_FUNCTIONS(X)                                                                                 \
    X(ew_quantize) X(ew_quantize_strided) X(ew_dequantize) X(ew_dequantize_strided) X(ew_amax)              \
    X(ew_block_scales_shape) X(ew_quantize_blocks) X(ew_dequantize_blocks) X(ew_dtype_bits)                  \
    X(ew_kernel_cache_get_count) X(ew_kernel_cache_fill) X(ew_kernel_create_outputs) X(ew_kernel_launch_outputs) \
    X(ew_kernel_cache_fill_outputs) X(ew_kernel_launch_outputs_strided) X(ew_kernel_launch_batched)           \
    X(ew_quantize_batched) X(ew_dequantize_batched) X(ew_amax_batched)

static struct {
#define FIELD(name) __typeof__(name) *name;
    LIBRARY_FUNCTIONS(FIELD)
    SCALED_FUNCTIONS(FIELD)
#undef FIELD
} lib;
static void *lib_handle;

/* Set by _configure from the Python layer. */
static PyObject *error_class;  /* ElementwiseError(status, message, function) */
static PyObject *allocate_fn;  /* allocate(like, shape, dtype or None): outputs of frameworks without the exchange API */
static PyObject *recorder;     /* tests: recorder(name, args) stands in for the library's operation calls */

static PyObject *s_cai, *s_dlpack, *s_dlpack_device, *s_exchange, *s_dtype, *s_name, *s_ptr_attr, *s_device,
    *s_id, *s_index, *s_cuda_stream, *s_ptr, *s_handle, *s_value, *s_stream_protocol, *s_stream, *s_max_version,
    *s_copy, *s_typestr, *s_shape, *s_strides, *s_data, *s_mask, *s_version, *s_out_dtype, *s_in_dtypes,
    *s_n_params, *s_handle_attr, *s_outputs_attr, *max_version_value, *empty_tuple;

/* ew dtype -> DLPack code (kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6, kDLFloat8_e4m3fn 10,
 * kDLFloat8_e5m2 12, kDLFloat8_e8m0fnu 14, kDLFloat4_e2m1fn 17); the bits are the library's ew_dtype_size,
 * but for EW_F4E2M1 (below). */
static const uint8_t DLPACK_CODE[] = {0, kDLBool, kDLInt, kDLUInt, kDLInt, kDLInt, kDLInt,
                                      kDLFloat, kDLBfloat, kDLFloat, kDLFloat, kDLFloat8_e4m3fn, kDLFloat8_e5m2,
                                      kDLFloat8_e8m0fnu, kDLFloat4_e2m1fn};
#define N_DTYPES ((int)(sizeof DLPACK_CODE / sizeof DLPACK_CODE[0]) - 1)

/* EW_F4E2M1 arrays hold two elements a byte, as PyTorch's float4_e2m1fn_x2 does: here an array element of
 * EW_F4E2M1 is that byte (DLPack: kDLFloat4_e2m1fn, 4 bits, 2 lanes), and a row of cols elements is an
 * array row of cols / 2 (the library's ew_dtype_size says 0, its ew_dtype_bits 4). */
#define F4_BITS 4
#define F4_LANES 2

/* The library's element sizes and the DLPack types they answer, read once at load: every operand asks,
 * and a call into the library for each of a list's thousands of operands showed in its time. */
static uint8_t dtype_sizes[N_DTYPES + 1];
static int dtype_size(int dtype) { return dtype >= 1 && dtype <= N_DTYPES ? dtype_sizes[dtype] : 0; }
#define DLPACK_CODES 32
static uint8_t dlpack_dtypes[DLPACK_CODES][9]; /* [DLPack code][bytes]: the dtype, 0 for none */

/* A dtype as DType names it (F16, BF16, F8E4M3): the library's ew_dtype_name, upper-cased, in label. */
typedef struct { char text[16]; } dtype_label_t;

static const char *dtype_label(int dtype, dtype_label_t *label)
{
    const char *name = lib.ew_dtype_name((ew_dtype_t)dtype);
    size_t i = 0;
    for (; name[i] && i < sizeof label->text - 1; i++)
        label->text[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 'a' + 'A' : name[i]);
    label->text[i] = '\0';
    return label->text;
}

/* Names a dtype argument may take beyond the library's own (ew_dtype_name): NumPy's and PyTorch's. */
static const struct { const char *name; int dtype; } DTYPE_NAMES[] = {
    {"bool_", EW_BOOL}, {"int8", EW_I8}, {"uint8", EW_U8}, {"int16", EW_I16}, {"short", EW_I16},
    {"int32", EW_I32}, {"int", EW_I32}, {"int64", EW_I64}, {"long", EW_I64}, {"float16", EW_F16},
    {"half", EW_F16}, {"bfloat16", EW_BF16}, {"float32", EW_F32}, {"float", EW_F32}, {"float64", EW_F64},
    {"double", EW_F64}, {"float8_e4m3fn", EW_F8E4M3}, {"e4m3", EW_F8E4M3}, {"float8_e5m2", EW_F8E5M2},
    {"e5m2", EW_F8E5M2}, {"float8_e8m0fnu", EW_F8E8M0}, {"e8m0", EW_F8E8M0}, {"float4_e2m1fn_x2", EW_F4E2M1},
    {"e2m1", EW_F4E2M1}};

static int dlpack_to_dtype(uint8_t code, uint8_t bits)
{
    return code < DLPACK_CODES && bits % 8 == 0 && bits / 8 <= 8 ? dlpack_dtypes[code][bits / 8] : 0;
}

/* The library's status as ElementwiseError, its message read now, on the failing thread. */
static void raise_status(int status, const char *function)
{
    const char *message = lib.ew_get_last_error_message();
    PyObject *error = PyObject_CallFunction(error_class, "iss", status, message ? message : "", function);
    if (error) {
        PyErr_SetObject(error_class, error);
        Py_DECREF(error);
    }
}

static PyObject *type_name(PyObject *obj)
{
    PyObject *name = PyObject_GetAttrString((PyObject *)Py_TYPE(obj), "__name__");
    if (!name) {
        PyErr_Clear();
        name = PyUnicode_FromString("?");
    }
    return name;
}

static PyObject *int64_tuple(int n, const int64_t *values)
{
    PyObject *tuple = PyTuple_New(n);
    for (int i = 0; tuple && i < n; i++) {
        PyObject *item = PyLong_FromLongLong(values[i]);
        if (!item) {
            Py_CLEAR(tuple);
            break;
        }
        PyTuple_SetItem(tuple, i, item);
    }
    return tuple;
}

static PyObject *pointer_object(const void *p)
{
    if (!p)
        Py_RETURN_NONE;
    return PyLong_FromVoidPtr((void *)p);
}

/* A raw pointer argument: an int, or None for NULL. */
static int pointer_arg(PyObject *arg, void **p)
{
    *p = arg == Py_None ? NULL : PyLong_AsVoidPtr(arg);
    return PyErr_Occurred() ? -1 : 0;
}

/* The raw pointer (_ptr) of a live Handle or Kernel; ValueError "the <what> is closed" once closed. */
static int live_pointer(PyObject *obj, const char *what, void **p)
{
    PyObject *raw = PyObject_GetAttr(obj, s_ptr_attr);
    if (!raw)
        return -1;
    int status = raw == Py_None ? -1 : pointer_arg(raw, p);
    if (raw == Py_None)
        PyErr_Format(PyExc_ValueError, "the %s is closed", what);
    Py_DECREF(raw);
    return status;
}

/* An int argument. */
static int int_arg(PyObject *arg, int *value)
{
    *value = (int)PyLong_AsLong(arg);
    return PyErr_Occurred() ? -1 : 0;
}

/* ---- dtypes ---- */

/* A dtype from a DType / int, a name ("f16", "bfloat16", "torch.bfloat16"), or an object whose .name
 * or str() is one. 0 with an exception set when none. */
static int as_dtype(PyObject *value)
{
    if (PyLong_Check(value) && !PyBool_Check(value)) {
        long d = PyLong_AsLong(value);
        if (d >= 1 && d <= N_DTYPES)
            return (int)d;
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "%ld is not a valid DType", d);
        return 0;
    }
    PyObject *text;
    if (PyUnicode_Check(value)) {
        text = value;
        Py_INCREF(text);
    } else {
        text = PyObject_GetAttr(value, s_name);
        if (!text || !PyUnicode_Check(text)) {
            PyErr_Clear();
            Py_XDECREF(text);
            text = PyObject_Str(value);
            if (!text)
                return 0;
        }
    }
    Py_ssize_t size;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &size);
    int found = 0;
    if (utf8 && size < 32) {
        char key[32];
        for (Py_ssize_t i = 0; i <= size; i++)
            key[i] = (char)(utf8[i] >= 'A' && utf8[i] <= 'Z' ? utf8[i] - 'A' + 'a' : utf8[i]);
        const char *bare = strncmp(key, "torch.", 6) == 0 ? key + 6 : key;
        for (int d = 1; d <= N_DTYPES && !found; d++)
            if (strcmp(bare, lib.ew_dtype_name((ew_dtype_t)d)) == 0)
                found = d;
        for (size_t i = 0; i < sizeof DTYPE_NAMES / sizeof DTYPE_NAMES[0] && !found; i++)
            if (strcmp(bare, DTYPE_NAMES[i].name) == 0)
                found = DTYPE_NAMES[i].dtype;
    }
    Py_DECREF(text);
    if (!found && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "unknown dtype %R; use elementwise.DType or a name such as 'f16', "
                     "'bfloat16', 'float8_e4m3fn'", value);
    return found;
}

/* bfloat16 / float8 / packed float4, named only by the array's own dtype (torch, ml_dtypes): 0 for anything
 * else. */
static int named_dtype(PyObject *obj)
{
    PyObject *declared = PyObject_GetAttr(obj, s_dtype);
    if (!declared) {
        PyErr_Clear();
        return 0;
    }
    int dtype = as_dtype(declared);
    Py_DECREF(declared);
    if (!dtype)
        PyErr_Clear();
    return dtype == EW_BF16 || dtype == EW_F8E4M3 || dtype == EW_F8E5M2 || dtype == EW_F8E8M0 || dtype == EW_F4E2M1
               ? dtype
               : 0;
}

/* ---- operands ---- */

enum { FROM_EXCHANGE = 1, FROM_INTERFACE, FROM_DLPACK };

typedef struct {
    PyObject *obj;          /* borrowed (an output this call made: owned by the call) */
    const char *what;       /* "a", "out", "xs" ... with index >= 0 for a list's entry */
    Py_ssize_t index;
    int source;
    const DLPackExchangeAPI *api;
    int requested;          /* dtype= given for it, else 0 */
    int writable;
    int dtype;
    int ndim;
    int64_t count;
    char *data;
    int read_only;
    int device;             /* CUDA ordinal, -1 when the array does not say */
    int has_stream;         /* __cuda_array_interface__ v3 named a stream */
    intptr_t stream;
    int pending;            /* a DLPack producer, exported once the call's stream is known */
    PyObject *capsule;      /* owned: the unconsumed export, released (by its destructor) after the call */
    DLManagedTensorVersioned *managed; /* owned: an exchange-API export, deleted after the call */
    int64_t shape[MAX_NDIM];
    int64_t strides[MAX_NDIM];
} operand_t;

static PyObject *operand_name(const operand_t *op)
{
    return op->index >= 0 ? PyUnicode_FromFormat("%s[%zd]", op->what, op->index) : PyUnicode_FromString(op->what);
}

/* Raise exc with "<operand name>: <message>" or "<operand name> <message>" (sep). */
static int operand_error(const operand_t *op, PyObject *exc, const char *sep, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    PyObject *message = PyUnicode_FromFormatV(format, args);
    va_end(args);
    PyObject *name = operand_name(op);
    if (message && name)
        PyErr_Format(exc, "%U%s%U", name, sep, message);
    Py_XDECREF(message);
    Py_XDECREF(name);
    return -1;
}

/* op on the call's device, or a ValueError naming both (an operand of no known device passes). */
static int check_device(const operand_t *op, int device)
{
    if (op->device < 0 || op->device == device)
        return 0;
    return operand_error(op, PyExc_ValueError, " ", "is on device %d but the call runs on device %d",
                         op->device, device);
}

static PyObject *operand_shape(const operand_t *op)
{
    return int64_tuple(op->ndim, op->shape);
}

/* Raise ValueError "<op> <format>", format taking op's shape (%R), other's name (%U) and shape (%R). */
static int shapes_error(const operand_t *op, const operand_t *other, const char *format)
{
    PyObject *a = operand_shape(op), *name = operand_name(other), *b = operand_shape(other);
    if (a && name && b)
        operand_error(op, PyExc_ValueError, " ", format, a, name, b);
    Py_XDECREF(a);
    Py_XDECREF(name);
    Py_XDECREF(b);
    return -1;
}

static void operand_release(operand_t *op)
{
    Py_CLEAR(op->capsule);
    if (op->managed) {
        if (op->managed->deleter)
            op->managed->deleter(op->managed);
        op->managed = NULL;
    }
}

static int set_layout_count(operand_t *op)
{
    int64_t count = 1;
    for (int i = 0; i < op->ndim; i++) {
        if (op->shape[i] < 0)
            return operand_error(op, PyExc_ValueError, ": ", "negative extent in shape");
        if (__builtin_mul_overflow(count, op->shape[i], &count))
            return operand_error(op, PyExc_ValueError, ": ", "its element count overflows int64");
    }
    op->count = count;
    if (count == 0)
        op->data = NULL; /* an empty operand passes NULL, as the C API allows */
    return 0;
}

static void contiguous_strides(int ndim, const int64_t *shape, int64_t *strides)
{
    int64_t step = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = step;
        step *= shape[i] > 1 ? shape[i] : 1;
    }
}

/* dtype from what the array says (found; 0: nothing the library has) and its element size, unless dtype=
 * overrides it (same size). */
static int settle_dtype(operand_t *op, int found, int itemsize, PyObject *(*describe)(const void *), const void *arg)
{
    int dtype = op->requested ? op->requested : found;
    if (!dtype || dtype_size(dtype) != itemsize) {
        dtype_label_t label;
        PyObject *described = describe(arg);
        if (!described)
            return -1;
        if (!dtype)
            operand_error(op, PyExc_TypeError, ": ",
                          "%U has no libelementwise dtype; if it holds bfloat16 or float8 data, say which with dtype=",
                          described);
        else
            operand_error(op, PyExc_TypeError, ": ", "dtype %s has %d-byte elements but the array's %U has %d",
                          dtype_label(dtype, &label), dtype_size(dtype), described, itemsize);
        Py_DECREF(described);
        return -1;
    }
    op->dtype = dtype;
    return 0;
}

static PyObject *describe_dldtype(const void *arg)
{
    const DLDataType *t = arg;
    return PyUnicode_FromFormat("DLPack dtype (code %d, %d bits, %d lanes)", t->code, t->bits, t->lanes);
}

static PyObject *describe_typestr(const void *arg)
{
    return PyUnicode_FromFormat("typestr %R", (PyObject *)arg);
}

static const char *dlpack_device_name(int type)
{
    switch (type) {
    case kDLCPU: return "CPU";
    case kDLCUDA: return "CUDA";
    case kDLCUDAHost: return "CUDA host (pinned)";
    case kDLOpenCL: return "OpenCL";
    case kDLVulkan: return "Vulkan";
    case kDLMetal: return "Metal";
    case kDLROCM: return "ROCm";
    case kDLROCMHost: return "ROCm host";
    case kDLCUDAManaged: return "CUDA managed";
    case kDLOneAPI: return "oneAPI";
    default: return NULL;
    }
}

static int refuse_device(operand_t *op, int type)
{
    PyObject *name = type_name(op->obj);
    const char *device = dlpack_device_name(type);
    if (device)
        operand_error(op, PyExc_TypeError, ": ", "%U is a %s array (DLPack); elementwise works on CUDA device memory: "
                      "move it to the GPU first", name, device);
    else
        operand_error(op, PyExc_TypeError, ": ", "%U is a device type %d array (DLPack); elementwise works on CUDA "
                      "device memory: move it to the GPU first", name, type);
    Py_XDECREF(name);
    return -1;
}

static int is_gpu(int type) { return type == kDLCUDA || type == kDLCUDAManaged; }

/* A DLTensor (exchange API or capsule) read into op. */
static int read_dltensor(operand_t *op, const DLTensor *t, int read_only)
{
    if (!is_gpu(t->device.device_type))
        return refuse_device(op, t->device.device_type);
    /* PyTorch's float4_e2m1fn_x2: a byte of two e2m1 lanes, one array element. */
    const int packed_f4 = t->dtype.code == kDLFloat4_e2m1fn && t->dtype.bits == F4_BITS && t->dtype.lanes == F4_LANES;
    if (!packed_f4 && (t->dtype.lanes != 1 || t->dtype.bits % 8)) {
        PyObject *described = describe_dldtype(&t->dtype);
        operand_error(op, PyExc_TypeError, ": ", "%U is not a scalar element type", described);
        Py_XDECREF(described);
        return -1;
    }
    if (settle_dtype(op, packed_f4 ? EW_F4E2M1 : dlpack_to_dtype(t->dtype.code, t->dtype.bits),
                     packed_f4 ? 1 : t->dtype.bits / 8, describe_dldtype, &t->dtype))
        return -1;
    if (t->ndim < 0 || t->ndim > MAX_NDIM)
        return operand_error(op, PyExc_ValueError, ": ", "%d dimensions; at most %d are taken", t->ndim, MAX_NDIM);
    op->ndim = t->ndim;
    for (int i = 0; i < t->ndim; i++)
        op->shape[i] = t->shape[i];
    if (t->strides)
        for (int i = 0; i < t->ndim; i++)
            op->strides[i] = t->strides[i];
    else /* before DLPack 1.2: NULL means C-contiguous */
        contiguous_strides(op->ndim, op->shape, op->strides);
    op->data = (char *)t->data + t->byte_offset;
    op->device = t->device.device_id;
    op->read_only = read_only;
    if (op->writable && read_only)
        return operand_error(op, PyExc_ValueError, ": ", "the output array is read-only");
    return set_layout_count(op);
}

/* The exchange API of obj's type, cached per type (a type holds it for the process's life): NULL when
 * the type has none. */
#define TYPE_CACHE 16
static struct { PyObject *type; const DLPackExchangeAPI *api; } type_cache[TYPE_CACHE];
static int type_cached;

static int exchange_api(PyObject *obj, const DLPackExchangeAPI **api)
{
    PyObject *type = (PyObject *)Py_TYPE(obj);
    for (int i = 0; i < type_cached; i++)
        if (type_cache[i].type == type) {
            *api = type_cache[i].api;
            return 0;
        }
    *api = NULL;
    PyObject *capsule = PyObject_GetAttr(type, s_exchange);
    if (!capsule) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
    } else {
        if (PyCapsule_IsValid(capsule, "dlpack_exchange_api")) {
            const DLPackExchangeAPIHeader *header = PyCapsule_GetPointer(capsule, "dlpack_exchange_api");
            while (header && header->version.major != DLPACK_MAJOR_VERSION)
                header = header->prev_api;
            *api = (const DLPackExchangeAPI *)header;
        }
        Py_DECREF(capsule);
    }
    if (type_cached < TYPE_CACHE) {
        Py_INCREF(type);
        type_cache[type_cached].type = type;
        type_cache[type_cached].api = *api;
        type_cached++;
    }
    return 0;
}

static int read_exchange(operand_t *op)
{
    const DLPackExchangeAPI *api = op->api;
    if (api->dltensor_from_py_object_no_sync) {
        DLTensor t;
        if (api->dltensor_from_py_object_no_sync(op->obj, &t))
            return -1;
        return read_dltensor(op, &t, 0);
    }
    if (api->managed_tensor_from_py_object_no_sync(op->obj, &op->managed))
        return -1;
    return read_dltensor(op, &op->managed->dl_tensor, (op->managed->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0);
}

static int dict_item(PyObject *dict, PyObject *key, PyObject **value)
{
    *value = PyDict_GetItemWithError(dict, key);
    return *value || !PyErr_Occurred() ? 0 : -1;
}

static int int64_sequence(operand_t *op, PyObject *seq, const char *field, int64_t *values, int *n)
{
    PyObject *tuple = PySequence_Tuple(seq);
    if (!tuple)
        return -1;
    Py_ssize_t size = PyTuple_Size(tuple);
    if (size > MAX_NDIM) {
        Py_DECREF(tuple);
        return operand_error(op, PyExc_ValueError, ": ", "%zd dimensions; at most %d are taken", size, MAX_NDIM);
    }
    for (Py_ssize_t i = 0; i < size; i++) {
        values[i] = PyLong_AsLongLong(PyTuple_GetItem(tuple, i));
        if (values[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(tuple);
            return operand_error(op, PyExc_TypeError, ": ", "%s must hold integers", field);
        }
    }
    Py_DECREF(tuple);
    *n = (int)size;
    return 0;
}

static int read_interface(operand_t *op, PyObject *cai)
{
    if (!PyDict_Check(cai))
        return operand_error(op, PyExc_TypeError, ": ", "__cuda_array_interface__ is not a dict");
    PyObject *typestr, *shape, *strides, *data, *mask, *version, *stream;
    if (dict_item(cai, s_typestr, &typestr) || dict_item(cai, s_shape, &shape) || dict_item(cai, s_strides, &strides)
        || dict_item(cai, s_data, &data) || dict_item(cai, s_mask, &mask) || dict_item(cai, s_version, &version)
        || dict_item(cai, s_stream, &stream))
        return -1;
    if (!typestr || !shape || !data || !PyUnicode_Check(typestr))
        return operand_error(op, PyExc_TypeError, ": ", "__cuda_array_interface__ lacks typestr, shape or data");
    Py_ssize_t length;
    const char *text = PyUnicode_AsUTF8AndSize(typestr, &length);
    if (!text)
        return -1;
    char *end = NULL;
    long itemsize = length >= 3 ? strtol(text + 2, &end, 10) : 0;
    if (length < 3 || !strchr("<|=", text[0]) || !end || *end || itemsize <= 0)
        return operand_error(op, PyExc_TypeError, ": ", "typestr %R is not a little-endian element type", typestr);
    char kind = text[1];
    int found = 0;
    if (kind == 'b' && itemsize == 1)
        found = EW_BOOL;
    else if (kind == 'i')
        found = itemsize == 1 ? EW_I8 : itemsize == 2 ? EW_I16 : itemsize == 4 ? EW_I32 : itemsize == 8 ? EW_I64 : 0;
    else if (kind == 'u' && itemsize == 1)
        found = EW_U8;
    else if (kind == 'f')
        found = itemsize == 2 ? EW_F16 : itemsize == 4 ? EW_F32 : itemsize == 8 ? EW_F64 : 0;
    /* bfloat16 and float8 have no typestr of their own (void, or an integer view): the array's dtype
     * names them. Only small non-float elements can be one, so only those ask. */
    if (!op->requested && itemsize <= 2 && kind != 'f' && kind != 'b') {
        int named = named_dtype(op->obj);
        if (named)
            found = named;
    }
    if (settle_dtype(op, found, (int)itemsize, describe_typestr, typestr))
        return -1;
    if (mask && mask != Py_None)
        return operand_error(op, PyExc_ValueError, ": ", "masked arrays are not supported");
    if (int64_sequence(op, shape, "shape", op->shape, &op->ndim))
        return -1;
    if (strides && strides != Py_None) {
        int n;
        if (int64_sequence(op, strides, "strides", op->strides, &n))
            return -1;
        if (n != op->ndim)
            return operand_error(op, PyExc_ValueError, ": ", "strides %R do not match shape %R", strides, shape);
        for (int i = 0; i < n; i++) {
            /* An extent-1 dimension's stride addresses nothing, so any value is allowed there. */
            if (op->shape[i] > 1 && op->strides[i] % itemsize)
                return operand_error(op, PyExc_ValueError, ": ",
                                     "strides %R (bytes) are not multiples of the %ld-byte element", strides, itemsize);
            op->strides[i] /= itemsize;
        }
    } else {
        contiguous_strides(op->ndim, op->shape, op->strides);
    }
    PyObject *pointer = PyTuple_Check(data) && PyTuple_Size(data) == 2 ? PyTuple_GetItem(data, 0) : NULL;
    if (!pointer)
        return operand_error(op, PyExc_TypeError, ": ", "__cuda_array_interface__ data is not (pointer, read_only)");
    op->data = PyLong_AsVoidPtr(pointer);
    if (!op->data && PyErr_Occurred())
        return -1;
    op->read_only = PyObject_IsTrue(PyTuple_GetItem(data, 1));
    if (op->read_only < 0)
        return -1;
    if (op->writable && op->read_only)
        return operand_error(op, PyExc_ValueError, ": ", "the output array is read-only");
    long v = version ? PyLong_AsLong(version) : 0;
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v >= 3 && stream && stream != Py_None) {
        op->stream = (intptr_t)PyLong_AsVoidPtr(stream);
        if (!op->stream && PyErr_Occurred())
            return -1;
        if (op->stream == 0)
            return operand_error(op, PyExc_ValueError, ": ", "__cuda_array_interface__ gives stream 0, which the "
                                 "interface forbids (it would be ambiguous)");
        op->has_stream = 1;
    }
    return set_layout_count(op);
}

static int has_attr(PyObject *obj, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value) {
        Py_DECREF(value);
        return 1;
    }
    PyErr_Clear();
    return 0;
}

/* First look at an array: the exchange API and the interface are read now; a DLPack producer only has
 * its device checked, and is exported by operand_export once the call's stream is known. */
static int operand_open_inner(operand_t *op, PyObject *obj)
{
    if (exchange_api(obj, &op->api))
        return -1;
    if (op->api) {
        op->source = FROM_EXCHANGE;
        return read_exchange(op);
    }
    PyObject *cai = PyObject_GetAttr(obj, s_cai);
    if (cai) {
        op->source = FROM_INTERFACE;
        int status = read_interface(op, cai);
        Py_DECREF(cai);
        return status;
    }
    /* No interface: AttributeError; or one that cannot describe this array (PyTorch's for float8), when
     * DLPack may still. */
    int missing = PyErr_ExceptionMatches(PyExc_AttributeError);
    PyObject *error_type, *error_value, *error_traceback;
    PyErr_Fetch(&error_type, &error_value, &error_traceback);
    int dlpack = has_attr(obj, s_dlpack) && has_attr(obj, s_dlpack_device);
    if (!dlpack && !missing) {
        PyErr_Restore(error_type, error_value, error_traceback);
        return -1;
    }
    Py_XDECREF(error_type);
    Py_XDECREF(error_value);
    Py_XDECREF(error_traceback);
    if (!dlpack) {
        PyObject *name = type_name(obj);
        operand_error(op, PyExc_TypeError, ": ", "%U has neither __cuda_array_interface__ nor __dlpack__ (is it a GPU "
                      "array?)", name);
        Py_XDECREF(name);
        return -1;
    }
    op->source = FROM_DLPACK;
    PyObject *device = PyObject_CallMethodObjArgs(obj, s_dlpack_device, NULL);
    if (!device)
        return -1;
    int type = -1, id = -1;
    if (!PyArg_ParseTuple(device, "ii", &type, &id)) {
        Py_DECREF(device);
        return -1;
    }
    Py_DECREF(device);
    if (!is_gpu(type))
        return refuse_device(op, type);
    op->device = id;
    op->pending = 1;
    return 0;
}

/* Failing, it leaves nothing to release. */
static int operand_open(operand_t *op, PyObject *obj, const char *what, Py_ssize_t index, int requested,
                        int writable)
{
    op->obj = obj;
    op->what = what;
    op->index = index;
    op->requested = requested;
    op->writable = writable;
    op->source = 0;
    op->api = NULL;
    op->read_only = 0;
    op->device = -1;
    op->has_stream = 0;
    op->pending = 0;
    op->capsule = NULL;
    op->managed = NULL;
    if (operand_open_inner(op, obj)) {
        operand_release(op);
        return -1;
    }
    return 0;
}

/* obj.__dlpack__ for a consumer on `stream`, the newest form the producer takes: versioned capsules
 * (max_version) and copy=False (refuse rather than copy), then the plain 2021 form. */
static PyObject *dlpack_export(PyObject *obj, intptr_t stream)
{
    /* DLPack's stream values: 1 is the legacy default stream, the library's NULL stream; 0 is forbidden. */
    PyObject *method = PyObject_GetAttr(obj, s_dlpack);
    PyObject *kwargs = PyDict_New();
    PyObject *value = PyLong_FromVoidPtr((void *)(stream ? stream : 1));
    PyObject *capsule = NULL;
    if (!method || !kwargs || !value || PyDict_SetItem(kwargs, s_stream, value))
        goto done;
    if (PyDict_SetItem(kwargs, s_max_version, max_version_value) || PyDict_SetItem(kwargs, s_copy, Py_False))
        goto done;
    for (int attempt = 0; attempt < 3; attempt++) {
        capsule = PyObject_Call(method, empty_tuple, kwargs);
        if (capsule || !PyErr_ExceptionMatches(PyExc_TypeError) || attempt == 2)
            break;
        PyErr_Clear();
        PyDict_DelItem(kwargs, attempt == 0 ? s_copy : s_max_version);
    }
done:
    Py_XDECREF(method);
    Py_XDECREF(kwargs);
    Py_XDECREF(value);
    return capsule;
}

static int operand_export(operand_t *op, intptr_t stream)
{
    if (!op->pending)
        return 0;
    op->pending = 0;
    op->capsule = dlpack_export(op->obj, stream);
    if (!op->capsule)
        return -1;
    if (PyCapsule_IsValid(op->capsule, "dltensor_versioned")) {
        DLManagedTensorVersioned *managed = PyCapsule_GetPointer(op->capsule, "dltensor_versioned");
        if (managed->version.major != DLPACK_MAJOR_VERSION)
            return operand_error(op, PyExc_TypeError, ": ", "DLPack version %u.%u is not understood (1.x is)",
                                 managed->version.major, managed->version.minor);
        return read_dltensor(op, &managed->dl_tensor, (managed->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0);
    }
    if (PyCapsule_IsValid(op->capsule, "dltensor")) {
        DLManagedTensor *managed = PyCapsule_GetPointer(op->capsule, "dltensor");
        return read_dltensor(op, &managed->dl_tensor, 0);
    }
    PyObject *name = type_name(op->capsule);
    operand_error(op, PyExc_TypeError, ": ", "__dlpack__ returned %U, not an unconsumed DLPack capsule", name);
    Py_XDECREF(name);
    return -1;
}

/* C-contiguous, extent-1 dimensions aside (their strides address nothing). */
static int is_contiguous(const operand_t *op)
{
    int64_t expected = 1;
    for (int i = op->ndim - 1; i >= 0; i--) {
        if (op->shape[i] == 0)
            return 1;
        if (op->shape[i] != 1 && op->strides[i] != expected)
            return 0;
        expected *= op->shape[i];
    }
    return 1;
}

static int same_shape(const operand_t *a, const operand_t *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int i = 0; i < a->ndim; i++) /* a loop, not memcmp: a list compares thousands of short shapes */
        if (a->shape[i] != b->shape[i])
            return 0;
    return 1;
}

/* ---- streams ---- */

/* A cudaStream_t from an int or a stream object of PyTorch, CuPy, Numba or cuda.core. */
static int stream_value(PyObject *stream, intptr_t *value)
{
    if (PyLong_Check(stream) && !PyBool_Check(stream)) {
        *value = (intptr_t)PyLong_AsVoidPtr(stream);
        return *value == 0 && PyErr_Occurred() ? -1 : 0;
    }
    PyObject *found = NULL;
    if (has_attr(stream, s_stream_protocol)) { /* the CUDA stream protocol: (version, handle) */
        PyObject *pair = PyObject_CallMethodObjArgs(stream, s_stream_protocol, NULL);
        if (!pair)
            return -1;
        found = PyTuple_Check(pair) && PyTuple_Size(pair) == 2 ? PyTuple_GetItem(pair, 1) : NULL;
        Py_XINCREF(found);
        Py_DECREF(pair);
    } else {
        PyObject *names[] = {s_cuda_stream, s_ptr, s_handle}; /* PyTorch, CuPy, Numba */
        for (int i = 0; i < 3 && !found; i++) {
            found = PyObject_GetAttr(stream, names[i]);
            if (!found)
                PyErr_Clear();
        }
        if (found && !PyLong_Check(found) && has_attr(found, s_value)) { /* ctypes.c_void_p */
            PyObject *inner = PyObject_GetAttr(found, s_value);
            Py_DECREF(found);
            found = inner;
        }
    }
    if (!found || (found != Py_None && !PyLong_Check(found))) {
        Py_XDECREF(found);
        PyErr_Format(PyExc_TypeError, "stream: %R is not an int or a known CUDA stream object", stream);
        return -1;
    }
    *value = found == Py_None ? 0 : (intptr_t)PyLong_AsVoidPtr(found);
    Py_DECREF(found);
    return PyErr_Occurred() ? -1 : 0;
}

/* An operand on the stream already chosen (by an earlier operand, or a list's first entry). */
static int check_stream(const operand_t *op, PyObject *stream, intptr_t chosen)
{
    if (stream == Py_None && op->has_stream && op->stream != chosen) {
        PyErr_Format(PyExc_ValueError, "the arrays name different streams [%zd, %zd] in __cuda_array_interface__; "
                     "synchronize them and pass stream= explicitly", (Py_ssize_t)chosen, (Py_ssize_t)op->stream);
        return -1;
    }
    return 0;
}

/* The call's stream: stream= if given; else the one the arrays' interfaces name (v3: 1 legacy default, 2
 * per-thread default, others a cudaStream_t), all alike; else the exchange API's current stream of the
 * first such operand's device (PyTorch's current stream); else the legacy default stream (0). */
static int resolve_stream(PyObject *stream, operand_t **ops, int n, intptr_t *chosen)
{
    if (stream != Py_None)
        return stream_value(stream, chosen);
    const operand_t *named = NULL, *exchange = NULL;
    for (int i = 0; i < n; i++) {
        if (!ops[i])
            continue;
        if (ops[i]->has_stream) {
            if (named && check_stream(ops[i], stream, named->stream))
                return -1;
            named = ops[i];
        }
        if (!exchange && ops[i]->source == FROM_EXCHANGE)
            exchange = ops[i];
    }
    *chosen = 0;
    if (named) {
        *chosen = named->stream;
    } else if (exchange) {
        void *current = NULL;
        if (exchange->api->current_work_stream(kDLCUDA, exchange->device, &current))
            return -1;
        *chosen = (intptr_t)current;
    }
    return 0;
}

/* ---- handles: one per device, made on first use and kept ---- */

static ew_handle_t default_handles[MAX_DEVICES];

static int default_handle(int device, ew_handle_t *handle)
{
    if (device < 0 || device >= MAX_DEVICES) {
        PyErr_Format(PyExc_ValueError, "device %d: at most %d devices have default handles", device, MAX_DEVICES);
        return -1;
    }
    if (!default_handles[device]) { /* under the GIL: one thread creates it */
        ew_handle_t made = NULL;
        int status = lib.ew_handle_create(device, &made);
        if (status) {
            raise_status(status, "ew_handle_create");
            return -1;
        }
        default_handles[device] = made;
    }
    *handle = default_handles[device];
    return 0;
}

/* The CUDA device of an interface array, which the interface does not name: PyTorch's and CuPy's say
 * (device.index, device.id); 0 when it does not. */
static int interface_device(PyObject *obj)
{
    PyObject *device = PyObject_GetAttr(obj, s_device);
    int found = 0;
    if (!device) {
        PyErr_Clear();
        return 0;
    }
    PyObject *names[] = {s_index, s_id};
    for (int i = 0; i < 2; i++) {
        PyObject *value = PyObject_GetAttr(device, names[i]);
        if (value && PyLong_Check(value)) {
            found = (int)PyLong_AsLong(value);
            Py_DECREF(value);
            break;
        }
        Py_XDECREF(value);
        PyErr_Clear();
    }
    Py_DECREF(device);
    return found;
}

/* The handle of a call: handle= (an elementwise.Handle), else the default handle of the first operand's
 * device. Every operand that names its device must be on the handle's. */
static int pick_handle(PyObject *handle_obj, operand_t **ops, int n, ew_handle_t *handle, int *device)
{
    if (handle_obj != Py_None) {
        if (live_pointer(handle_obj, "handle", (void **)handle))
            return -1;
        PyObject *number = PyObject_GetAttr(handle_obj, s_device);
        if (!number)
            return -1;
        int status = int_arg(number, device);
        Py_DECREF(number);
        if (status)
            return -1;
    } else {
        *device = -1;
        for (int i = 0; i < n && *device < 0; i++)
            if (ops[i] && ops[i]->device >= 0)
                *device = ops[i]->device;
        for (int i = 0; i < n && *device < 0; i++)
            if (ops[i])
                *device = interface_device(ops[i]->obj);
        if (*device < 0)
            *device = 0;
        if (default_handle(*device, handle))
            return -1;
    }
    for (int i = 0; i < n; i++)
        if (ops[i] && check_device(ops[i], *device))
            return -1;
    return 0;
}

/* ---- outputs made for out=None ---- */

typedef struct { char message[512]; } alloc_error_t;

static void alloc_set_error(void *context, const char *kind, const char *message)
{
    alloc_error_t *error = context;
    snprintf(error->message, sizeof error->message, "%s: %s", kind ? kind : "error", message ? message : "");
}

/* out: a new array of `shape` and `dtype` on like's device, by like's own framework, opened as an
 * operand: like's memory layout when it has like's shape, else C-contiguous (the 1.1 rule). The
 * exchange API's allocator makes only C-contiguous tensors, so it serves where that is the rule's
 * answer; the Python layer's allocate(like, shape, dtype) serves the rest. The new array is
 * returned (owned by the caller) and out->obj points at it. */
static PyObject *allocate_output(operand_t *out, const operand_t *like, int ndim, const int64_t *shape, int dtype,
                                 const char *what, Py_ssize_t index, intptr_t stream)
{
    const int keeps_layout = like->ndim == ndim &&
                             memcmp(like->shape, shape, sizeof(int64_t) * (size_t)ndim) == 0 && !is_contiguous(like);
    if (like->source == FROM_EXCHANGE && like->api->managed_tensor_allocator && !keeps_layout) {
        DLTensor prototype = {0};
        prototype.device.device_type = kDLCUDA;
        prototype.device.device_id = like->device;
        prototype.ndim = ndim;
        prototype.dtype.code = DLPACK_CODE[dtype];
        prototype.dtype.bits = (uint8_t)(dtype == EW_F4E2M1 ? F4_BITS : dtype_size(dtype) * 8);
        prototype.dtype.lanes = dtype == EW_F4E2M1 ? F4_LANES : 1;
        prototype.shape = (int64_t *)shape;
        DLManagedTensorVersioned *managed = NULL;
        alloc_error_t error = {{0}};
        if (like->api->managed_tensor_allocator(&prototype, &managed, &error, alloc_set_error) || !managed) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_RuntimeError, "out=None: the array's framework could not allocate the output: %s",
                             error.message);
            return NULL;
        }
        /* Read before the tensor changes hands: the new tensor owns the memory from then on. */
        memset(out, 0, offsetof(operand_t, shape));
        out->what = what;
        out->index = index;
        out->source = FROM_EXCHANGE;
        out->api = like->api;
        out->writable = 1;
        out->dtype = dtype;
        out->device = like->device;
        out->ndim = ndim;
        memcpy(out->shape, shape, sizeof(int64_t) * (size_t)ndim);
        contiguous_strides(ndim, shape, out->strides);
        out->data = (char *)managed->dl_tensor.data + managed->dl_tensor.byte_offset;
        void *made = NULL;
        if (like->api->managed_tensor_to_py_object_no_sync(managed, &made))
            return NULL;
        out->obj = made;
        if (set_layout_count(out)) {
            Py_DECREF((PyObject *)made);
            return NULL;
        }
        return made;
    }
    if (!allocate_fn) {
        PyErr_SetString(PyExc_RuntimeError, "elementwise._elementwise is not configured");
        return NULL;
    }
    PyObject *shape_tuple = int64_tuple(ndim, shape);
    PyObject *dtype_value = dtype ? PyLong_FromLong(dtype) : Py_NewRef(Py_None);
    PyObject *made = shape_tuple && dtype_value
                         ? PyObject_CallFunctionObjArgs(allocate_fn, like->obj, shape_tuple, dtype_value, NULL)
                         : NULL;
    Py_XDECREF(shape_tuple);
    Py_XDECREF(dtype_value);
    if (!made)
        return NULL;
    if (operand_open(out, made, what, index, 0, 1) || operand_export(out, stream)) {
        operand_release(out);
        Py_DECREF(made);
        return NULL;
    }
    return made;
}

/* ---- what reaches the library ---- */

/* AMAX: the lists' alone (amax_batched; amax() calls ew_amax itself). */
enum { UNARY, BINARY, CAST, SCALE_ADD, QUANTIZE, DEQUANTIZE, AMAX };

/* The families whose out has a dtype of its own (dtype= names the input's, the target names out's). */
static int converts(int family) { return family == CAST || family == QUANTIZE || family == DEQUANTIZE; }

/* A device scalar of a call: a scaled call's scale, scale_inv, amax (float32), a kernel's reduction
 * output (float32 or float64); None: absent. */
typedef struct {
    PyObject *obj;
    const char *name;
    int writable;
    int dtype;
} scalar_arg_t;

typedef struct {
    int family;
    int op;
    int out_dtype, in_dtype;
    double alpha;
    int n_inputs;
    /* The scaled casts: their scalars (scale first, then amax), read into scale and amax; a list's scale
     * is its column (entry i's at scale[i]), its amax scalars amaxes (entry i's at amaxes[i]; NULL: none). */
    int n_scalars;
    scalar_arg_t scalars[2];
    int amax_mode;
    const float *scale;
    float *amax;
    float *const *amaxes;
} call_t;

/* The arguments between the handle and the element count, in the C signatures' order. */
static PyObject *head_args(const call_t *c)
{
    switch (c->family) {
    case CAST:
    case QUANTIZE:
    case DEQUANTIZE: return Py_BuildValue("(ii)", c->out_dtype, c->in_dtype);
    case SCALE_ADD: return Py_BuildValue("(id)", c->out_dtype, c->alpha);
    case AMAX: return Py_BuildValue("(i)", c->out_dtype);
    default: return Py_BuildValue("(ii)", c->op, c->out_dtype);
    }
}

/* (handle, the arguments before the element count) of an operation call, for the recorder. */
static PyObject *front_args(ew_handle_t handle, const call_t *c)
{
    PyObject *head = head_args(c), *handle_value = pointer_object(handle);
    PyObject *first = head && handle_value ? PyTuple_Pack(1, handle_value) : NULL;
    PyObject *front = first ? PySequence_Concat(first, head) : NULL;
    Py_XDECREF(head);
    Py_XDECREF(handle_value);
    Py_XDECREF(first);
    return front;
}

/* Tests: recorder(name, args) answers in the library's place, args as the C call takes them (pointers
 * as ints, NULL as None; shapes and lists as tuples), with a status, or (status, pointer) for a call
 * that makes something (ew_kernel_create), the pointer then stored in *made. front and rest are
 * stolen. -1 with an exception, else the status. */
static int record_making(const char *name, PyObject *front, PyObject *rest, void **made)
{
    PyObject *args = front && rest ? PySequence_Concat(front, rest) : NULL;
    PyObject *result = args ? PyObject_CallFunction(recorder, "sO", name, args) : NULL;
    Py_XDECREF(front);
    Py_XDECREF(rest);
    Py_XDECREF(args);
    if (!result)
        return -1;
    long status;
    if (made && PyTuple_Check(result) && PyTuple_Size(result) == 2) {
        status = PyLong_AsLong(PyTuple_GetItem(result, 0));
        *made = PyLong_AsVoidPtr(PyTuple_GetItem(result, 1));
    } else {
        status = PyLong_AsLong(result);
    }
    Py_DECREF(result);
    return PyErr_Occurred() ? -1 : (int)status;
}

static int record(const char *name, PyObject *front, PyObject *rest)
{
    return record_making(name, front, rest, NULL);
}

static int finish(int status, const char *name)
{
    if (status > 0)
        raise_status(status, name);
    return status ? -1 : 0;
}

/* A function of 1.2 on a library that lacks it (ELEMENTWISE_LIBRARY naming an older one): -1 with a
 * RuntimeError, else 0. */
static int absent(const void *function, const char *name)
{
    if (function)
        return 0;
    PyErr_Format(PyExc_RuntimeError, "the loaded libelementwise (%u) has no %s: it needs 1.2 or later",
                 lib.ew_get_version(), name);
    return -1;
}

/* The same for an operation, which the recorder stands in for. */
static int missing(const void *function, const char *name) { return recorder ? 0 : absent(function, name); }

static int call_flat(ew_handle_t h, const call_t *c, int64_t n, const operand_t *out, operand_t *const *in,
                     intptr_t stream)
{
    static const char *const names[] = {"ew_unary", "ew_binary", "ew_cast", "ew_scale_add", "ew_quantize",
                                        "ew_dequantize"};
    const char *name = names[c->family];
    ew_stream_t s = (ew_stream_t)stream;
    void *o = out->data;
    const void *x = in[0]->data, *y = c->n_inputs > 1 ? in[1]->data : NULL;
    int status;
    if (c->family == QUANTIZE ? missing(lib.ew_quantize, name)
                              : c->family == DEQUANTIZE && missing(lib.ew_dequantize, name))
        return -1;
    if (recorder) {
        PyObject *rest;
        if (c->family == QUANTIZE)
            rest = Py_BuildValue("(LNNNNin)", (long long)n, pointer_object(o), pointer_object(x),
                                 pointer_object(c->scale), pointer_object(c->amax), c->amax_mode, (Py_ssize_t)stream);
        else if (c->family == DEQUANTIZE)
            rest = Py_BuildValue("(LNNNn)", (long long)n, pointer_object(o), pointer_object(x),
                                 pointer_object(c->scale), (Py_ssize_t)stream);
        else if (c->n_inputs > 1)
            rest = Py_BuildValue("(LNNNn)", (long long)n, pointer_object(o), pointer_object(x), pointer_object(y),
                                 (Py_ssize_t)stream);
        else
            rest = Py_BuildValue("(LNNn)", (long long)n, pointer_object(o), pointer_object(x), (Py_ssize_t)stream);
        status = record(name, front_args(h, c), rest);
    } else {
        switch (c->family) {
        case UNARY: status = lib.ew_unary(h, c->op, c->out_dtype, n, o, x, s); break;
        case BINARY: status = lib.ew_binary(h, c->op, c->out_dtype, n, o, x, y, s); break;
        case CAST: status = lib.ew_cast(h, c->out_dtype, c->in_dtype, n, o, x, s); break;
        case QUANTIZE:
            status = lib.ew_quantize(h, c->out_dtype, c->in_dtype, n, o, x, c->scale, c->amax,
                                     (ew_reduce_mode_t)c->amax_mode, s);
            break;
        case DEQUANTIZE: status = lib.ew_dequantize(h, c->out_dtype, c->in_dtype, n, o, x, c->scale, s); break;
        default: status = lib.ew_scale_add(h, c->out_dtype, c->alpha, n, o, x, y, s); break;
        }
    }
    return finish(status, name);
}

static int call_strided(ew_handle_t h, const call_t *c, const operand_t *out, operand_t *const *in,
                        int64_t in_strides[][MAX_NDIM], intptr_t stream)
{
    static const char *const names[] = {"ew_unary_strided", "ew_binary_strided", "ew_cast_strided",
                                        "ew_scale_add_strided", "ew_quantize_strided", "ew_dequantize_strided"};
    const char *name = names[c->family];
    ew_stream_t s = (ew_stream_t)stream;
    int nd = out->ndim;
    const int64_t *shape = out->shape;
    void *o = out->data;
    const void *x = in[0]->data, *y = c->n_inputs > 1 ? in[1]->data : NULL;
    int status;
    if (c->family == QUANTIZE ? missing(lib.ew_quantize_strided, name)
                              : c->family == DEQUANTIZE && missing(lib.ew_dequantize_strided, name))
        return -1;
    if (recorder && c->family == QUANTIZE) {
        PyObject *rest = Py_BuildValue("(iNNNNNNNin)", nd, int64_tuple(nd, shape), pointer_object(o),
                                       int64_tuple(nd, out->strides), pointer_object(x), int64_tuple(nd, in_strides[0]),
                                       pointer_object(c->scale), pointer_object(c->amax), c->amax_mode,
                                       (Py_ssize_t)stream);
        status = record(name, front_args(h, c), rest);
    } else if (recorder && c->family == DEQUANTIZE) {
        PyObject *rest = Py_BuildValue("(iNNNNNNn)", nd, int64_tuple(nd, shape), pointer_object(o),
                                       int64_tuple(nd, out->strides), pointer_object(x), int64_tuple(nd, in_strides[0]),
                                       pointer_object(c->scale), (Py_ssize_t)stream);
        status = record(name, front_args(h, c), rest);
    } else if (recorder) {
        PyObject *rest =
            c->n_inputs > 1
                ? Py_BuildValue("(iNNNNNNNn)", nd, int64_tuple(nd, shape), pointer_object(o), int64_tuple(nd, out->strides),
                                pointer_object(x), int64_tuple(nd, in_strides[0]), pointer_object(y),
                                int64_tuple(nd, in_strides[1]), (Py_ssize_t)stream)
                : Py_BuildValue("(iNNNNNn)", nd, int64_tuple(nd, shape), pointer_object(o), int64_tuple(nd, out->strides),
                                pointer_object(x), int64_tuple(nd, in_strides[0]), (Py_ssize_t)stream);
        status = record(name, front_args(h, c), rest);
    } else {
        switch (c->family) {
        case UNARY:
            status =
                lib.ew_unary_strided(h, c->op, c->out_dtype, nd, shape, o, out->strides, x, in_strides[0], s);
            break;
        case BINARY:
            status = lib.ew_binary_strided(h, c->op, c->out_dtype, nd, shape, o, out->strides, x,
                                           in_strides[0], y, in_strides[1], s);
            break;
        case CAST:
            status = lib.ew_cast_strided(h, c->out_dtype, c->in_dtype, nd, shape, o, out->strides, x,
                                         in_strides[0], s);
            break;
        case QUANTIZE:
            status = lib.ew_quantize_strided(h, c->out_dtype, c->in_dtype, nd, shape, o, out->strides, x,
                                             in_strides[0], c->scale, c->amax, (ew_reduce_mode_t)c->amax_mode, s);
            break;
        case DEQUANTIZE:
            status = lib.ew_dequantize_strided(h, c->out_dtype, c->in_dtype, nd, shape, o, out->strides, x,
                                               in_strides[0], c->scale, s);
            break;
        default:
            status = lib.ew_scale_add_strided(h, c->out_dtype, c->alpha, nd, shape, o, out->strides, x,
                                              in_strides[0], y, in_strides[1], s);
            break;
        }
    }
    return finish(status, name);
}

/* An input's strides over the output's shape (NumPy's broadcasting): 0 along broadcast dimensions. */
static int broadcast_strides(const operand_t *in, const operand_t *out, int64_t *strides)
{
    int lead = out->ndim - in->ndim;
    if (lead < 0)
        return shapes_error(in, out, "has shape %R, more dimensions than %U's %R");
    for (int i = 0; i < lead; i++)
        strides[i] = 0;
    for (int i = 0; i < in->ndim; i++) {
        int64_t extent = in->shape[i], target = out->shape[lead + i];
        if (extent == target)
            strides[lead + i] = extent != 1 ? in->strides[i] : 0;
        else if (extent == 1)
            strides[lead + i] = 0;
        else
            return shapes_error(in, out, "has shape %R, which does not broadcast to %U's shape %R");
    }
    return 0;
}

/* NumPy's broadcast of the inputs' shapes, for an output made here. */
static int broadcast_shape(operand_t *const *in, int n, int *ndim, int64_t *shape)
{
    int nd = 0;
    for (int k = 0; k < n; k++)
        nd = in[k]->ndim > nd ? in[k]->ndim : nd;
    for (int i = 0; i < nd; i++)
        shape[i] = 1;
    for (int k = 0; k < n; k++) {
        int lead = nd - in[k]->ndim;
        for (int i = 0; i < in[k]->ndim; i++) {
            int64_t extent = in[k]->shape[i];
            if (extent == 1)
                continue;
            if (shape[lead + i] != 1 && shape[lead + i] != extent) {
                PyObject *parts = PyList_New(0);
                for (int j = 0; parts && j < n; j++) {
                    PyObject *name = operand_name(in[j]), *dims = operand_shape(in[j]);
                    PyObject *part = name && dims ? PyUnicode_FromFormat("%U %R", name, dims) : NULL;
                    if (!part || PyList_Append(parts, part))
                        Py_CLEAR(parts);
                    Py_XDECREF(name);
                    Py_XDECREF(dims);
                    Py_XDECREF(part);
                }
                PyObject *sep = PyUnicode_FromString(", ");
                PyObject *joined = parts && sep ? PyUnicode_Join(sep, parts) : NULL;
                if (joined)
                    PyErr_Format(PyExc_ValueError, "shapes %U do not broadcast together (NumPy's rules)", joined);
                Py_XDECREF(parts);
                Py_XDECREF(sep);
                Py_XDECREF(joined);
                return -1;
            }
            shape[lead + i] = extent;
        }
    }
    *ndim = nd;
    return 0;
}

static int same_dtype(const operand_t *out, operand_t *const *in, int n)
{
    dtype_label_t have, want;
    for (int k = 0; k < n; k++)
        if (in[k]->dtype != out->dtype)
            return operand_error(in[k], PyExc_TypeError, " ",
                                 "is %s but out is %s; convert with cast() first (or give dtype=)",
                                 dtype_label(in[k]->dtype, &have), dtype_label(out->dtype, &want));
    return 0;
}

static const char *const INPUT_NAMES[][MAX_INPUTS] = {{"x"}, {"a", "b"}, {"x"}, {"a", "b"}, {"x"}, {"q"}};

/* Device scalars of dtype: a call's one (column 0: one element, shape () or (1,)), or a list call's column
 * of count, one an entry, in at most one dimension; shared: or one element, the same for every entry. */
static int check_scalars(const operand_t *op, int dtype, int column, int64_t count, int shared)
{
    dtype_label_t label;
    char held[96] = "one element";
    if (column)
        snprintf(held, sizeof held, "%lld element%s (one an entry)%s", (long long)count, count == 1 ? "" : "s",
                 shared ? " or one (shared by every entry)" : "");
    if (op->dtype != dtype)
        return operand_error(op, PyExc_TypeError, " ", "is %s; it must be a %s array of %s",
                             dtype_label(op->dtype, &label), dtype == EW_F64 ? "float64" : "float32", held);
    if (column ? op->ndim > 1 || (op->count != count && !(shared && op->count == 1)) : op->count != 1) {
        PyObject *shape = operand_shape(op);
        if (shape)
            operand_error(op, PyExc_ValueError, " ", "has shape %R; it must hold %s%s", shape, held,
                          column ? ", in one dimension" : " (shape () or (1,))");
        Py_XDECREF(shape);
        return -1;
    }
    return 0;
}

static int check_scalar(const operand_t *op, int dtype) { return check_scalars(op, dtype, 0, 1, 0); }

#define MAX_SCALARS 2
#define MORE_ARRAYS (EW_KERNEL_MAX_OUTPUTS - 1)
#define BASE_OPERANDS (1 + MAX_INPUTS + MAX_SCALARS)
#define ALL_OPERANDS (BASE_OPERANDS + MORE_ARRAYS)

/* The operands of one call (an operation's or a kernel's): the inputs, out, a scaled call's device
 * scalars, a kernel's further array outputs, and the call's stream. */
typedef struct {
    operand_t in[MAX_INPUTS], out, scalar[MAX_SCALARS], more[MORE_ARRAYS];
    operand_t *all[ALL_OPERANDS];   /* out, the inputs (all + 1), the scalars (all + 1 + MAX_INPUTS), the further
                                       arrays (all + BASE_OPERANDS); NULL until open, one left None too */
    int n, n_all, opened, out_opened, scalars_opened, more_opened;
    PyObject *made;                 /* out, made here for out=None (owned) */
    intptr_t stream;
} operands_t;

/* Read the inputs, the given out (out_requested: out's dtype=; out_name its name), the scalars and a
 * kernel's further arrays (more: None to be made later, n_more of them), pick the stream and export the
 * inputs', the scalars' and the further arrays' DLPack on it. operands_release after, failing or not. */
static int operands_open(operands_t *o, PyObject *const *inputs, int n, const char *const *names,
                         int requested, PyObject *out_obj, int out_requested, PyObject *stream_obj,
                         const scalar_arg_t *scalars, int n_scalars, const char *out_name,
                         const scalar_arg_t *more, int n_more)
{
    memset(o->all, 0, sizeof(operand_t *) * (n_more ? ALL_OPERANDS : BASE_OPERANDS));
    o->n = n;
    o->n_all = n_more ? ALL_OPERANDS : BASE_OPERANDS;
    o->opened = o->out_opened = o->scalars_opened = o->more_opened = 0;
    o->made = NULL;
    for (; o->opened < n; o->opened++) {
        if (operand_open(&o->in[o->opened], inputs[o->opened], names[o->opened], -1, requested, 0))
            return -1;
        o->all[1 + o->opened] = &o->in[o->opened];
    }
    if (out_obj != Py_None) {
        if (operand_open(&o->out, out_obj, out_name, -1, out_requested, 1))
            return -1;
        o->out_opened = 1;
        o->all[0] = &o->out;
    }
    for (int k = 0; k < n_more && k < MORE_ARRAYS; k++) {
        operand_t *op = &o->more[k];
        if (more[k].obj == Py_None) { /* made later, once the call's shape is known: nothing to release yet */
            op->capsule = NULL;
            op->managed = NULL;
        } else {
            if (operand_open(op, more[k].obj, more[k].name, -1, 0, 1))
                return -1;
            o->all[BASE_OPERANDS + k] = op;
        }
        o->more_opened = k + 1;
    }
    for (int k = 0; k < n_scalars && k < MAX_SCALARS; k++) {
        operand_t *op = &o->scalar[k];
        if (scalars[k].obj == Py_None) { /* absent: nothing to release */
            op->capsule = NULL;
            op->managed = NULL;
            op->data = NULL;
        } else {
            if (operand_open(op, scalars[k].obj, scalars[k].name, -1, 0, scalars[k].writable))
                return -1;
            o->all[1 + MAX_INPUTS + k] = op;
        }
        o->scalars_opened = k + 1;
    }
    if (resolve_stream(stream_obj, o->all, o->n_all, &o->stream))
        return -1;
    for (int k = 0; k < n; k++)
        if (operand_export(&o->in[k], o->stream))
            return -1;
    for (int k = 0; k < n_more && k < MORE_ARRAYS; k++)
        if (more[k].obj != Py_None && operand_export(&o->more[k], o->stream))
            return -1;
    for (int k = 0; k < n_scalars; k++)
        if (scalars[k].obj != Py_None && (operand_export(&o->scalar[k], o->stream) ||
                                           check_scalar(&o->scalar[k], scalars[k].dtype)))
            return -1;
    return 0;
}

/* out: the given one exported on the stream, else made like the first input, of the inputs' broadcast
 * shape and `dtype`. */
static int operands_out(operands_t *o, int dtype)
{
    if (o->out_opened)
        return operand_export(&o->out, o->stream);
    int nd;
    int64_t shape[MAX_NDIM];
    if (broadcast_shape(o->all + 1, o->n, &nd, shape))
        return -1;
    o->made = allocate_output(&o->out, &o->in[0], nd, shape, dtype, "out", -1, o->stream);
    if (!o->made)
        return -1;
    o->out_opened = 1;
    o->all[0] = &o->out;
    return 0;
}

/* Each input's strides over out's shape; *flat when every operand is contiguous over that one shape (or
 * out is empty): the flat call, else the strided one, whose layout rules are the library's. */
static int operands_layout(const operands_t *o, int64_t strides[][MAX_NDIM], int *flat)
{
    *flat = is_contiguous(&o->out);
    for (int k = 0; k < o->n; k++) {
        if (broadcast_strides(&o->in[k], &o->out, strides[k]))
            return -1;
        *flat = *flat && same_shape(&o->in[k], &o->out) && is_contiguous(&o->in[k]);
    }
    *flat = *flat || o->out.count == 0;
    return 0;
}

/* The call's result: out (a new reference), and nothing left to release but the operands. */
static PyObject *operands_result(operands_t *o, PyObject *out_obj)
{
    PyObject *result = o->made ? o->made : Py_NewRef(out_obj);
    o->made = NULL;
    return result;
}

static void operands_release(operands_t *o)
{
    for (int k = 0; k < o->opened; k++)
        operand_release(&o->in[k]);
    for (int k = 0; k < o->scalars_opened; k++)
        operand_release(&o->scalar[k]);
    for (int k = 0; k < o->more_opened; k++)
        operand_release(&o->more[k]);
    if (o->out_opened)
        operand_release(&o->out);
    Py_CLEAR(o->made);
}

/* One call: read the inputs (and out), pick the stream and export DLPack operands on it, make out when
 * None, check dtypes and broadcasting, then the flat call when every operand is contiguous over one
 * shape, else the strided one, whose layout rules are the library's. Returns out (new reference). */
static PyObject *run_call(call_t *c, PyObject *out_obj, PyObject *const *inputs, int requested, int alloc_dtype,
                          PyObject *handle_obj, PyObject *stream_obj)
{
    operands_t o;
    PyObject *result = NULL;
    int n = c->n_inputs;
    /* A cast reads out as the dtype converted to (a uint8 view of float8 data, say). */
    if (operands_open(&o, inputs, n, INPUT_NAMES[c->family], requested, out_obj,
                      converts(c->family) ? alloc_dtype : requested, stream_obj, c->scalars, c->n_scalars, "out", NULL,
                      0) ||
        operands_out(&o, alloc_dtype ? alloc_dtype : o.in[0].dtype))
        goto done;
    operand_t *const *in = o.all + 1;
    if (c->n_scalars) {
        c->scale = (const float *)o.scalar[0].data;
        c->amax = c->n_scalars > 1 ? (float *)o.scalar[1].data : NULL;
    }
    if (converts(c->family)) {
        c->out_dtype = o.out.dtype;
        c->in_dtype = in[0]->dtype;
    } else {
        if (same_dtype(&o.out, in, n))
            goto done;
        c->out_dtype = c->in_dtype = o.out.dtype;
    }
    ew_handle_t handle;
    int device, flat;
    int64_t strides[2][MAX_NDIM];
    if (operands_layout(&o, strides, &flat) || pick_handle(handle_obj, o.all, o.n_all, &handle, &device))
        goto done;
    if (flat ? call_flat(handle, c, o.out.count, &o.out, in, o.stream)
             : call_strided(handle, c, &o.out, in, strides, o.stream))
        goto done;
    result = operands_result(&o, out_obj);
done:
    operands_release(&o);
    return result;
}

/* ---- argument parsing ---- */

enum { KW_OUT, KW_STREAM, KW_DTYPE, KW_HANDLE, KW_IN_DTYPE, KW_OUT_DTYPE, KW_OUTS, KW_PARAMS, KW_SCALE,
       KW_SCALE_INV, KW_AMAX, KW_AMAX_MODE, KW_ACCUMULATE, KW_FORMAT, KW_ROUND_UP, KW_SWIZZLED, KW_GLOBAL_SCALE,
       KW_SCALES, KW_ENTRY_PARAMS, KW_COUNT };
static const char *const KW_NAMES[KW_COUNT] = {"out", "stream", "dtype", "handle", "in_dtype", "out_dtype", "outs",
                                               "params", "scale", "scale_inv", "amax", "amax_mode", "accumulate",
                                               "format", "round_up", "swizzled", "global_scale", "scales",
                                               "entry_params"};
static PyObject *kw_strings[KW_COUNT];

/* Keyword arguments into slots (Py_None when absent); allowed is a bit mask of the KW_ names. */
static int parse_keywords(const char *function, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                          unsigned allowed, PyObject **slots)
{
    for (int k = 0; k < KW_COUNT; k++)
        slots[k] = Py_None;
    if (!kwnames)
        return 0;
    Py_ssize_t count = PyTuple_Size(kwnames);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *name = PyTuple_GetItem(kwnames, i);
        int found = -1;
        for (int k = 0; k < KW_COUNT && found < 0; k++)
            if (name == kw_strings[k])
                found = k;
        for (int k = 0; k < KW_COUNT && found < 0; k++)
            if (PyUnicode_Compare(name, kw_strings[k]) == 0)
                found = k;
        if (found < 0 || !(allowed & (1u << found))) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument %R", function, name);
            return -1;
        }
        slots[found] = args[nargs + i];
    }
    return 0;
}

static int optional_dtype(PyObject *value)
{
    return value == Py_None ? 0 : as_dtype(value);
}

/* old_form and new_form: "%s(...)" formats of the function's name. */
static int deprecated(const char *function, const char *old_form, const char *new_form)
{
    char old_text[96], new_text[96];
    snprintf(old_text, sizeof old_text, old_form, function);
    snprintf(new_text, sizeof new_text, new_form, function);
    return PyErr_WarnFormat(PyExc_DeprecationWarning, 1,
                            "elementwise.%s, the output first, is deprecated; call elementwise.%s (inputs first, out= "
                            "a keyword, as in NumPy, CuPy and PyTorch)", old_text, new_text);
}

static int wrong_count(const char *function, Py_ssize_t n_new, const char *new_form, Py_ssize_t nargs)
{
    char text[96];
    snprintf(text, sizeof text, new_form, function);
    PyErr_Format(PyExc_TypeError, "%s() takes %zd positional arguments (%s) but %zd were given", function, n_new, text,
                 nargs);
    return -1;
}

static int is_list_like(PyObject *obj)
{
    return obj == Py_None || PyList_Check(obj) || PyTuple_Check(obj);
}

/* cast's second argument: an array (or None: the deprecated form's x) or a dtype. The dtypes named by
 * str or int (DType) are told at once, sparing a str two failed attribute lookups on every call; then
 * __dlpack__ before __cuda_array_interface__, which PyTorch computes as a new dict. */
static int is_array_like(PyObject *obj)
{
    if (obj == Py_None)
        return 1;
    if (PyUnicode_Check(obj) || PyLong_Check(obj))
        return 0;
    return has_attr(obj, s_dlpack) || has_attr(obj, s_cai);
}

static int op_value(PyObject *value, int *op)
{
    long v = PyLong_AsLong(value);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *op = (int)v;
    return 0;
}

#define KW(name) (1u << KW_##name)
#define OP_KEYWORDS (KW(OUT) | KW(STREAM) | KW(DTYPE) | KW(HANDLE))
#define BATCHED_KEYWORDS (KW(OUTS) | KW(STREAM) | KW(DTYPE) | KW(HANDLE))

/* The inputs and out of the new form (inputs..., out=) or of the deprecated one (out, inputs...). */
static int split_out(const char *function, PyObject *const *args, Py_ssize_t nargs, Py_ssize_t n_new, PyObject **slots,
                     PyObject *const **inputs, const char *old_form, const char *new_form)
{
    /* Lists take outs= where single calls take out=. */
    int slot = strstr(new_form, "outs=") ? KW_OUTS : KW_OUT;
    if (nargs == n_new) {
        *inputs = args;
        return 0;
    }
    if (nargs == n_new + 1) {
        if (slots[slot] != Py_None) {
            PyErr_Format(PyExc_TypeError, "%s() got %s both first and as %s=", function, KW_NAMES[slot],
                         KW_NAMES[slot]);
            return -1;
        }
        if (deprecated(function, old_form, new_form))
            return -1;
        slots[slot] = args[0];
        *inputs = args + 1;
        return 0;
    }
    return wrong_count(function, n_new, new_form, nargs);
}

static PyObject *run_batched(call_t *c, PyObject *outs_obj, PyObject *const *list_objs, int requested, int alloc_dtype,
                             PyObject *handle_obj, PyObject *stream_obj);

/* add, mul, relu and the op-taking unary/binary, one call or lists of them: (inputs..., out=) or the
 * deprecated (out, inputs...); lists take outs=. */
static PyObject *op_common(const char *function, int family, int op, int lists, PyObject *const *args,
                           Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const old_forms[2][2] = {{"%s(out, x)", "%s(out, a, b)"}, {"%s(outs, xs)", "%s(outs, as_, bs)"}};
    static const char *const new_forms[2][2] = {{"%s(x, out=out)", "%s(a, b, out=out)"},
                                                {"%s(xs, outs=outs)", "%s(as_, bs, outs=outs)"}};
    PyObject *slots[KW_COUNT];
    PyObject *const *inputs;
    int n = family == BINARY ? 2 : 1;
    if (parse_keywords(function, args, nargs, kwnames, lists ? BATCHED_KEYWORDS : OP_KEYWORDS, slots) ||
        split_out(function, args, nargs, n, slots, &inputs, old_forms[lists][n - 1], new_forms[lists][n - 1]))
        return NULL;
    int dtype = optional_dtype(slots[KW_DTYPE]);
    if (!dtype && PyErr_Occurred())
        return NULL;
    call_t c = {.family = family, .op = op, .n_inputs = n};
    return lists ? run_batched(&c, slots[KW_OUTS], inputs, dtype, 0, slots[KW_HANDLE], slots[KW_STREAM])
                 : run_call(&c, slots[KW_OUT], inputs, dtype, 0, slots[KW_HANDLE], slots[KW_STREAM]);
}

/* unary(op, ...) and binary(op, ...): the op first. */
static PyObject *op_first(const char *function, int family, int lists, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames)
{
    int op;
    if (nargs < 1) {
        PyErr_Format(PyExc_TypeError, "%s() takes the op first", function);
        return NULL;
    }
    if (op_value(args[0], &op))
        return NULL;
    return op_common(function, family, op, lists, args + 1, nargs - 1, kwnames);
}

/* The entry points: METH_FASTCALL needs a function each. */
#define OP_ENTRY(name, family, op, lists)                                                                   \
    static PyObject *py_##name(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)  \
    {                                                                                                        \
        return op_common(#name, family, op, lists, args, nargs, kwnames);                                    \
    }
#define OP_FIRST_ENTRY(name, family, lists)                                                                 \
    static PyObject *py_##name(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)  \
    {                                                                                                        \
        return op_first(#name, family, lists, args, nargs, kwnames);                                         \
    }
OP_ENTRY(add, BINARY, EW_OP_ADD, 0)
OP_ENTRY(mul, BINARY, EW_OP_MUL, 0)
OP_ENTRY(relu, UNARY, EW_OP_RELU, 0)
OP_FIRST_ENTRY(binary, BINARY, 0)
OP_FIRST_ENTRY(unary, UNARY, 0)
OP_ENTRY(add_batched, BINARY, EW_OP_ADD, 1)
OP_ENTRY(mul_batched, BINARY, EW_OP_MUL, 1)
OP_ENTRY(relu_batched, UNARY, EW_OP_RELU, 1)
OP_FIRST_ENTRY(binary_batched, BINARY, 1)
OP_FIRST_ENTRY(unary_batched, UNARY, 1)

static int alpha_value(PyObject *value, double *alpha)
{
    *alpha = PyFloat_AsDouble(value);
    return *alpha == -1.0 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *py_scale_add(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *slots[KW_COUNT];
    if (parse_keywords("scale_add", args, nargs, kwnames, OP_KEYWORDS, slots))
        return NULL;
    PyObject *const *rest;
    /* (alpha, a, b) or the deprecated (out, alpha, a, b) */
    if (split_out("scale_add", args, nargs, 3, slots, &rest, "%s(out, alpha, a, b)", "%s(alpha, a, b, out=out)"))
        return NULL;
    call_t c = {.family = SCALE_ADD, .n_inputs = 2};
    if (alpha_value(rest[0], &c.alpha))
        return NULL;
    int dtype = optional_dtype(slots[KW_DTYPE]);
    if (!dtype && PyErr_Occurred())
        return NULL;
    return run_call(&c, slots[KW_OUT], rest + 1, dtype, 0, slots[KW_HANDLE], slots[KW_STREAM]);
}

/* cast(x, dtype, out=) and cast_batched(xs, dtype, outs=), or the deprecated (out, x, out_dtype=) forms,
 * told apart by an array (a list) or None where the new form takes the dtype. */
static PyObject *cast_common(const char *function, int lists, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    PyObject *slots[KW_COUNT];
    int slot = lists ? KW_OUTS : KW_OUT;
    if (parse_keywords(function, args, nargs, kwnames,
                       (lists ? BATCHED_KEYWORDS : OP_KEYWORDS) | KW(IN_DTYPE) | KW(OUT_DTYPE), slots))
        return NULL;
    PyObject *x, *target = slots[KW_DTYPE] != Py_None ? slots[KW_DTYPE] : slots[KW_OUT_DTYPE];
    if (nargs == 2 && (lists ? is_list_like(args[1]) : is_array_like(args[1]))) {
        if (slots[slot] != Py_None) {
            PyErr_Format(PyExc_TypeError, "%s() got %s both first and as %s=", function, KW_NAMES[slot], KW_NAMES[slot]);
            return NULL;
        }
        if (deprecated(function, lists ? "%s(outs, xs)" : "%s(out, x)",
                       lists ? "%s(xs, dtype, outs=outs)" : "%s(x, dtype, out=out)"))
            return NULL;
        slots[slot] = args[0];
        x = args[1];
    } else if (nargs == 1 || nargs == 2) {
        x = args[0];
        if (nargs == 2) {
            if (target != Py_None) {
                PyErr_Format(PyExc_TypeError, "%s() got the dtype both as an argument and as a keyword", function);
                return NULL;
            }
            target = args[1];
        }
    } else {
        PyErr_Format(PyExc_TypeError, "%s() takes 2 positional arguments (x, dtype) but %zd were given", function,
                     nargs);
        return NULL;
    }
    int out_dtype = optional_dtype(target), in_dtype = optional_dtype(slots[KW_IN_DTYPE]);
    if (PyErr_Occurred())
        return NULL;
    if (!out_dtype && slots[slot] == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s with %s=None needs the dtype to convert to (%s(x, dtype); the "
                     "deprecated form: out_dtype=)", function, KW_NAMES[slot], function);
        return NULL;
    }
    call_t c = {.family = CAST, .op = EW_OP_CAST, .n_inputs = 1};
    return lists ? run_batched(&c, slots[slot], &x, in_dtype, out_dtype, slots[KW_HANDLE], slots[KW_STREAM])
                 : run_call(&c, slots[slot], &x, in_dtype, out_dtype, slots[KW_HANDLE], slots[KW_STREAM]);
}

static PyObject *py_cast(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return cast_common("cast", 0, args, nargs, kwnames);
}

/* ---- scaled casts (1.2) ---- */

/* The parameters of form (e.g. "quantize(x, dtype, scale)"), positional or, where kw[i] >= 0, by
 * keyword; values[i] NULL when neither (a keyword given as None counts as absent). */
static int bind_params(const char *function, const char *form, PyObject *const *args, Py_ssize_t nargs,
                       PyObject **slots, const int *kw, int n, PyObject **values)
{
    if (nargs > n) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d positional arguments (%s) but %zd were given", function, n, form,
                     nargs);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *keyword = kw[i] >= 0 && slots[kw[i]] != Py_None ? slots[kw[i]] : NULL;
        if (i < nargs && keyword) {
            PyErr_Format(PyExc_TypeError, "%s() got the %s both as an argument and as a keyword", function,
                         KW_NAMES[kw[i]]);
            return -1;
        }
        values[i] = i < nargs ? args[i] : keyword;
    }
    if (!values[0]) {
        PyErr_Format(PyExc_TypeError, "%s() takes %s", function, form);
        return -1;
    }
    return 0;
}

/* One of an enum's two values, given by name (names[k] for values[k]) or as the int itself (a bool is
 * neither): 0 with it in *choice, or -1 with a ValueError naming the argument and the Python enum. */
static int one_of_two(PyObject *value, const char *argument, const char *const names[2], const int values[2],
                      const char *enum_name, int *choice)
{
    long v = -1;
    if (PyUnicode_Check(value)) {
        for (int k = 0; k < 2; ++k)
            if (PyUnicode_CompareWithASCIIString(value, names[k]) == 0)
                v = values[k];
    } else if (PyLong_Check(value) && !PyBool_Check(value)) {
        v = PyLong_AsLong(value);
        if (v == -1 && PyErr_Occurred())
            PyErr_Clear();
    }
    if (v == values[0] || v == values[1]) {
        *choice = (int)v;
        return 0;
    }
    PyErr_Format(PyExc_ValueError, "%s must be '%s' or '%s' (or elementwise.%s), not %R", argument, names[0],
                 names[1], enum_name, value);
    return -1;
}

/* amax_mode: "overwrite" or "accumulate", or ReduceMode (an int, 0 or 1). */
static int reduce_mode(PyObject *value, int *mode)
{
    static const char *const names[2] = {"overwrite", "accumulate"};
    static const int values[2] = {EW_REDUCE_OVERWRITE, EW_REDUCE_ACCUMULATE};
    return one_of_two(value, "amax_mode", names, values, "ReduceMode", mode);
}

/* quantize(x, dtype, scale, *, amax=None, amax_mode="overwrite", out=None, ...) and dequantize(q, dtype,
 * scale_inv, *, out=None, ...): cast's call (the target dtype, out=None made as cast makes it, in_dtype=
 * for the input, flat or strided) with the device scalars. lists: quantize_batched(xs, dtype, scale, *,
 * amax=None, amax_mode=, outs=None, ...) and dequantize_batched(qs, dtype, scale_inv, *, outs=None, ...),
 * cast_batched's call with the scalars as columns (count floats; amax also one, shared). */
static PyObject *scaled_common(const char *function, int family, int lists, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    static const char *const forms[2][2] = {{"quantize(x, dtype, scale)", "dequantize(q, dtype, scale_inv)"},
                                            {"quantize_batched(xs, dtype, scale)",
                                             "dequantize_batched(qs, dtype, scale_inv)"}};
    int quantize = family == QUANTIZE, slot = lists ? KW_OUTS : KW_OUT;
    unsigned allowed = (1u << slot) | KW(STREAM) | KW(HANDLE) | KW(DTYPE) | KW(IN_DTYPE) |
                       (quantize ? KW(SCALE) | KW(AMAX) | KW(AMAX_MODE) : KW(SCALE_INV));
    const char *form = forms[lists][!quantize];
    const int kw[3] = {-1, KW_DTYPE, quantize ? KW_SCALE : KW_SCALE_INV};
    PyObject *slots[KW_COUNT], *values[3];
    if (parse_keywords(function, args, nargs, kwnames, allowed, slots) ||
        bind_params(function, form, args, nargs, slots, kw, 3, values))
        return NULL;
    const char *scale_name = quantize ? "scale" : "scale_inv";
    if (!values[2] || values[2] == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s() needs %s, a float32 device array of %s (%s)", function, scale_name,
                     lists ? "one element an entry" : "one element", form);
        return NULL;
    }
    int out_dtype = values[1] ? optional_dtype(values[1]) : 0, in_dtype = optional_dtype(slots[KW_IN_DTYPE]);
    if (PyErr_Occurred())
        return NULL;
    if (!out_dtype && slots[slot] == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s with %s=None needs the dtype to convert to (%s)", function, KW_NAMES[slot],
                     form);
        return NULL;
    }
    call_t c = {.family = family, .op = quantize ? EW_OP_QUANTIZE : EW_OP_DEQUANTIZE, .n_inputs = 1,
                .n_scalars = quantize ? 2 : 1};
    c.scalars[0] = (scalar_arg_t){values[2], scale_name, 0, EW_F32};
    c.scalars[1] = (scalar_arg_t){quantize ? slots[KW_AMAX] : Py_None, "amax", 1, EW_F32};
    if (quantize && slots[KW_AMAX_MODE] != Py_None && reduce_mode(slots[KW_AMAX_MODE], &c.amax_mode))
        return NULL;
    return lists ? run_batched(&c, slots[slot], values, in_dtype, out_dtype, slots[KW_HANDLE], slots[KW_STREAM])
                 : run_call(&c, slots[slot], values, in_dtype, out_dtype, slots[KW_HANDLE], slots[KW_STREAM]);
}

static PyObject *py_quantize(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return scaled_common("quantize", QUANTIZE, 0, args, nargs, kwnames);
}

static PyObject *py_dequantize(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return scaled_common("dequantize", DEQUANTIZE, 0, args, nargs, kwnames);
}

static PyObject *py_quantize_batched(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return scaled_common("quantize_batched", QUANTIZE, 1, args, nargs, kwnames);
}

static PyObject *py_dequantize_batched(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return scaled_common("dequantize_batched", DEQUANTIZE, 1, args, nargs, kwnames);
}

/* amax(x, *, out=None, accumulate=False, stream=None, handle=None): max |x| into out, a float32 device
 * scalar, made (shape (), float32, on x's device) when None; accumulate folds into out's old value.
 * The library has no strided amax: x must be contiguous. lists: amax_batched(xs, *, out=None, ...), out
 * count floats (entry i's max at out[i]) or one (the whole list's), made (count, like xs[0]) when None. */
static PyObject *amax_common(const char *function, int lists, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    PyObject *slots[KW_COUNT], *values[1];
    const int kw[1] = {-1};
    if (parse_keywords(function, args, nargs, kwnames, KW(OUT) | KW(STREAM) | KW(HANDLE) | KW(ACCUMULATE), slots) ||
        bind_params(function, lists ? "amax_batched(xs)" : "amax(x)", args, nargs, slots, kw, 1, values))
        return NULL;
    int accumulate = slots[KW_ACCUMULATE] == Py_None ? 0 : PyObject_IsTrue(slots[KW_ACCUMULATE]);
    if (accumulate < 0)
        return NULL;
    PyObject *out_obj = slots[KW_OUT];
    if (accumulate && out_obj == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s(accumulate=True) needs out=, the running maximum%s to fold into", function,
                     lists ? "s" : "");
        return NULL;
    }
    int mode = accumulate ? EW_REDUCE_ACCUMULATE : EW_REDUCE_OVERWRITE;
    if (lists) {
        call_t c = {.family = AMAX, .op = EW_OP_AMAX, .n_inputs = 1, .n_scalars = 2, .amax_mode = mode};
        c.scalars[0] = (scalar_arg_t){Py_None, "scale", 0, EW_F32};
        c.scalars[1] = (scalar_arg_t){out_obj, "out", 1, EW_F32};
        return run_batched(&c, Py_None, values, 0, 0, slots[KW_HANDLE], slots[KW_STREAM]);
    }
    if (missing(lib.ew_amax, "ew_amax"))
        return NULL;
    static const char *const names[] = {"x"};
    operands_t o;
    PyObject *result = NULL;
    if (operands_open(&o, values, 1, names, 0, out_obj, 0, slots[KW_STREAM], NULL, 0, "out", NULL, 0))
        goto done;
    const operand_t *x = &o.in[0];
    if (!is_contiguous(x)) {
        PyObject *strides = int64_tuple(x->ndim, x->strides);
        if (strides)
            operand_error(x, PyExc_ValueError, " ", "is not contiguous (strides %R in elements); amax takes a "
                          "contiguous array (the library has no strided amax): pass a contiguous copy", strides);
        Py_XDECREF(strides);
        goto done;
    }
    if (o.out_opened) {
        if (operand_export(&o.out, o.stream))
            goto done;
    } else {
        int64_t none[1] = {0};
        if (!(o.made = allocate_output(&o.out, x, 0, none, EW_F32, "out", -1, o.stream)))
            goto done;
        o.out_opened = 1;
        o.all[0] = &o.out;
    }
    ew_handle_t handle;
    int device;
    if (check_scalar(&o.out, EW_F32) || pick_handle(slots[KW_HANDLE], o.all, 2, &handle, &device))
        goto done;
    int status;
    if (recorder)
        status = record("ew_amax", Py_BuildValue("(N)", pointer_object(handle)),
                        Py_BuildValue("(iLNNin)", x->dtype, (long long)x->count, pointer_object(x->data),
                                      pointer_object(o.out.data), mode, (Py_ssize_t)o.stream));
    else
        status = lib.ew_amax(handle, (ew_dtype_t)x->dtype, x->count, x->data, (float *)o.out.data,
                             (ew_reduce_mode_t)mode, (ew_stream_t)o.stream);
    if (finish(status, "ew_amax"))
        goto done;
    result = operands_result(&o, out_obj);
done:
    operands_release(&o);
    return result;
}

static PyObject *py_amax(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return amax_common("amax", 0, args, nargs, kwnames);
}

static PyObject *py_amax_batched(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return amax_common("amax_batched", 1, args, nargs, kwnames);
}

/* ---- block-scaled casts (1.2) ---- */

/* format: "mx" or "nvfp4", or BlockFormat (an int, 1 or 2); None: "mx". */
static int block_format(PyObject *value, int *format)
{
    static const char *const names[2] = {"mx", "nvfp4"};
    static const int values[2] = {EW_BLOCKS_MX, EW_BLOCKS_NVFP4};
    if (value == Py_None) {
        *format = EW_BLOCKS_MX;
        return 0;
    }
    return one_of_two(value, "format", names, values, "BlockFormat", format);
}

static const char *format_name(int format) { return format == EW_BLOCKS_NVFP4 ? "NVFP4" : "MX"; }

/* The scales' dtype of a format: e8m0 (MX), e4m3 (NVFP4). */
static int block_scale_dtype(int format) { return format == EW_BLOCKS_NVFP4 ? EW_F8E4M3 : EW_F8E8M0; }

/* A keyword flag: None (absent) is false. -1 with an exception when truth fails. */
static int flag(PyObject *value) { return value == Py_None ? 0 : PyObject_IsTrue(value); }

/* ew_block_scales_shape, which needs no GPU and no handle: always the library's own (the recorder stands in
 * for operations only). */
static int block_scales_shape(int format, int64_t rows, int64_t cols, unsigned options, int64_t *scale_rows,
                              int64_t *scale_cols)
{
    if (absent(lib.ew_block_scales_shape, "ew_block_scales_shape"))
        return -1;
    return finish(
        lib.ew_block_scales_shape((ew_block_format_t)format, rows, cols, options, scale_rows, scale_cols),
        "ew_block_scales_shape");
}

#define ROWS_RULE                                                                                     \
    "rows: the product of the leading dimensions, cols: the last, an F4E2M1 array's in bytes of two " \
    "elements"

/* A data operand of a block call as the library reads it: rows x cols elements, row-major and contiguous;
 * rows the product of the leading dimensions, cols the last (an F4E2M1 array's counts bytes of two). */
static int block_matrix(const operand_t *op, int64_t *rows, int64_t *cols)
{
    if (op->ndim < 1)
        return operand_error(op, PyExc_ValueError, " ",
                             "has shape (); the block calls take arrays of rows x cols "
                             "elements, of one dimension or more (" ROWS_RULE ")");
    if (!is_contiguous(op)) {
        PyObject *strides = int64_tuple(op->ndim, op->strides);
        if (strides)
            operand_error(op, PyExc_ValueError, " ",
                          "is not contiguous (strides %R in elements); the block calls "
                          "take contiguous arrays: pass a contiguous copy",
                          strides);
        Py_XDECREF(strides);
        return -1;
    }
    int64_t r = 1, c = op->shape[op->ndim - 1];
    for (int i = 0; i < op->ndim - 1; i++)
        if (__builtin_mul_overflow(r, op->shape[i], &r))
            return operand_error(op, PyExc_ValueError, ": ", "its row count overflows int64");
    if (op->dtype == EW_F4E2M1 && __builtin_mul_overflow(c, 2, &c))
        return operand_error(op, PyExc_ValueError, ": ", "its element count overflows int64");
    *rows = r;
    *cols = c;
    return 0;
}

/* out (quantize's elements, dequantize's result) holds the rows x cols of the input. */
static int block_same_matrix(const operand_t *op, const operand_t *input, int64_t rows, int64_t cols)
{
    int64_t r, c;
    if (block_matrix(op, &r, &c))
        return -1;
    if (r == rows && c == cols)
        return 0;
    dtype_label_t have, other;
    PyObject *a = operand_shape(op), *name = operand_name(input), *b = operand_shape(input);
    if (a && name && b)
        operand_error(op, PyExc_ValueError, " ",
                      "has shape %R (%s): %lld rows of %lld elements, but %U's %R (%s) "
                      "is %lld rows of %lld (" ROWS_RULE ")",
                      a, dtype_label(op->dtype, &have), (long long)r, (long long)c, name, b,
                      dtype_label(input->dtype, &other), (long long)rows, (long long)cols);
    Py_XDECREF(a);
    Py_XDECREF(name);
    Py_XDECREF(b);
    return -1;
}

/* The scales: the format's scale dtype or uint8, contiguous, of exactly ew_block_scales_shape's count; any
 * shape (torchao's, row-major (*leading, cols / block), or swizzled tiles flattened, say). */
static int block_scales_check(const operand_t *op, int format, int64_t rows, int64_t cols, int64_t scale_rows,
                              int64_t scale_cols, int swizzled)
{
    dtype_label_t have, want;
    const int expected = block_scale_dtype(format);
    if (op->dtype != expected && op->dtype != EW_U8)
        return operand_error(op, PyExc_TypeError, " ", "is %s; %s scales are %s (or uint8)",
                             dtype_label(op->dtype, &have), format_name(format),
                             dtype_label(expected, &want));
    if (!is_contiguous(op)) {
        PyObject *strides = int64_tuple(op->ndim, op->strides);
        if (strides)
            operand_error(op, PyExc_ValueError, " ",
                          "is not contiguous (strides %R in elements); the block calls "
                          "take contiguous arrays",
                          strides);
        Py_XDECREF(strides);
        return -1;
    }
    int64_t count;
    if (!__builtin_mul_overflow(scale_rows, scale_cols, &count) && op->count == count)
        return 0;
    PyObject *shape = operand_shape(op);
    if (shape)
        operand_error(
            op, PyExc_ValueError, " ",
            "has shape %R, %lld scales, but %lld rows of %lld elements have "
            "%lld x %lld %s%s scales (block_scales_shape): a contiguous array of %lld one-byte elements, "
            "of any shape",
            shape, (long long)op->count, (long long)rows, (long long)cols, (long long)scale_rows,
            (long long)scale_cols, swizzled ? "swizzled " : "", format_name(format), (long long)count);
    Py_XDECREF(shape);
    return -1;
}

enum { B_OUT, B_IN, B_SCALES, B_GLOBAL, B_OPERANDS };

/* quantize_blocks(x, dtype=None, *, format="mx", round_up=False, swizzled=False, global_scale=None, out=None,
 * scales=None, stream=None, in_dtype=None, handle=None) -> (out, scales) and dequantize_blocks(q, scales,
 * dtype=None, *, format="mx", swizzled=False, global_scale=None, out=None, stream=None, in_dtype=None,
 * handle=None) -> out: ew_quantize_blocks and ew_dequantize_blocks on rows x cols arrays (rows the product of
 * the leading dimensions, cols the last). Every size is checked here (the C calls take bare pointers);
 * formats, dtypes, options and overlaps are the library's to refuse. */
static PyObject *blocks_common(const char *function, int quantize, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    const unsigned allowed = KW(OUT) | KW(STREAM) | KW(HANDLE) | KW(DTYPE) | KW(IN_DTYPE) | KW(FORMAT) |
                             KW(SWIZZLED) | KW(GLOBAL_SCALE) | KW(SCALES) | (quantize ? KW(ROUND_UP) : 0);
    const char *form = quantize ? "quantize_blocks(x, dtype)" : "dequantize_blocks(q, scales, dtype)";
    const char *name = quantize ? "ew_quantize_blocks" : "ew_dequantize_blocks";
    const int kw_quantize[2] = {-1, KW_DTYPE}, kw_dequantize[3] = {-1, KW_SCALES, KW_DTYPE};
    const int n_params = quantize ? 2 : 3;
    PyObject *slots[KW_COUNT], *values[3] = {NULL, NULL, NULL};
    if (parse_keywords(function, args, nargs, kwnames, allowed, slots) ||
        bind_params(function, form, args, nargs, slots, quantize ? kw_quantize : kw_dequantize, n_params,
                    values))
        return NULL;
    PyObject *scales_obj = quantize ? slots[KW_SCALES] : values[1], *dtype_obj = values[n_params - 1];
    if (!scales_obj || scales_obj == Py_None) {
        if (!quantize) {
            PyErr_Format(PyExc_TypeError, "%s() needs scales, the block scales of q (%s)", function, form);
            return NULL;
        }
        scales_obj = Py_None;
    }
    int format = 0, swizzled = flag(slots[KW_SWIZZLED]), round_up = quantize ? flag(slots[KW_ROUND_UP]) : 0;
    if (swizzled < 0 || round_up < 0 || block_format(slots[KW_FORMAT], &format))
        return NULL;
    const unsigned options = (round_up ? EW_BLOCKS_ROUND_UP : 0u) | (swizzled ? EW_BLOCKS_SWIZZLED : 0u);
    int target = dtype_obj ? optional_dtype(dtype_obj) : 0, in_dtype = optional_dtype(slots[KW_IN_DTYPE]);
    if (PyErr_Occurred() ||
        missing(quantize ? (const void *)lib.ew_quantize_blocks : (const void *)lib.ew_dequantize_blocks,
                name))
        return NULL;
    /* What out=None makes: quantize's elements (NVFP4's are F4E2M1 alone), dequantize's dtype. */
    const int made_dtype = target ? target : quantize && format == EW_BLOCKS_NVFP4 ? EW_F4E2M1 : 0;
    if (!made_dtype && slots[KW_OUT] == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s with out=None needs the dtype to %s (%s)", function,
                     quantize ? "quantize to: 'f8e4m3', 'f8e5m2' or 'f4e2m1'" : "dequantize to", form);
        return NULL;
    }

    operand_t ops[B_OPERANDS];
    operand_t *all[B_OPERANDS] = {NULL, NULL, NULL, NULL};
    PyObject *made_out = NULL, *made_scales = NULL, *result = NULL;
    if (operand_open(&ops[B_IN], values[0], quantize ? "x" : "q", -1, in_dtype, 0))
        goto done;
    all[B_IN] = &ops[B_IN];
    if (slots[KW_OUT] != Py_None) { /* read as the dtype named, as cast reads its out */
        if (operand_open(&ops[B_OUT], slots[KW_OUT], "out", -1, target, 1))
            goto done;
        all[B_OUT] = &ops[B_OUT];
    }
    if (scales_obj != Py_None) {
        if (operand_open(&ops[B_SCALES], scales_obj, "scales", -1, 0, quantize))
            goto done;
        all[B_SCALES] = &ops[B_SCALES];
    }
    if (slots[KW_GLOBAL_SCALE] != Py_None) {
        if (operand_open(&ops[B_GLOBAL], slots[KW_GLOBAL_SCALE], "global_scale", -1, 0, 0))
            goto done;
        all[B_GLOBAL] = &ops[B_GLOBAL];
    }
    intptr_t stream;
    if (resolve_stream(slots[KW_STREAM], all, B_OPERANDS, &stream))
        goto done;
    for (int k = 0; k < B_OPERANDS; k++)
        if (all[k] && operand_export(all[k], stream))
            goto done;
    if (all[B_GLOBAL] && check_scalar(all[B_GLOBAL], EW_F32))
        goto done;
    /* A uint8 array of elements (CuPy has no float8 or float4; torchao's fp4 data): NVFP4's are F4E2M1, MX's
     * say which with dtype= (quantize's out) or in_dtype= (dequantize's q). */
    operand_t *elements = quantize ? all[B_OUT] : all[B_IN];
    if (elements && elements->dtype == EW_U8 && !(quantize ? target : in_dtype)) {
        if (format != EW_BLOCKS_NVFP4) {
            operand_error(elements, PyExc_TypeError, " ",
                          "is a uint8 array: say which elements it %s with %s= "
                          "('f8e4m3', 'f8e5m2' or 'f4e2m1'; format='nvfp4' reads uint8 as f4e2m1)",
                          quantize ? "receives" : "holds", quantize ? "dtype" : "in_dtype");
            goto done;
        }
        elements->dtype = EW_F4E2M1;
    }
    int64_t rows, cols, scale_rows, scale_cols;
    if (block_matrix(&ops[B_IN], &rows, &cols) ||
        block_scales_shape(format, rows, cols, options & EW_BLOCKS_SWIZZLED, &scale_rows, &scale_cols) ||
        (all[B_OUT] && block_same_matrix(all[B_OUT], &ops[B_IN], rows, cols)) ||
        (all[B_SCALES] &&
         block_scales_check(all[B_SCALES], format, rows, cols, scale_rows, scale_cols, swizzled)))
        goto done;
    if (!all[B_OUT]) { /* the input's shape, its last dimension in made_dtype's array elements */
        int64_t shape[MAX_NDIM];
        memcpy(shape, ops[B_IN].shape, sizeof(int64_t) * (size_t)ops[B_IN].ndim);
        shape[ops[B_IN].ndim - 1] = made_dtype == EW_F4E2M1 ? cols / 2 : cols;
        if (!(made_out = allocate_output(&ops[B_OUT], &ops[B_IN], ops[B_IN].ndim, shape, made_dtype, "out",
                                         -1, stream)))
            goto done;
        all[B_OUT] = &ops[B_OUT];
    }
    if (!all[B_SCALES]) { /* quantize's: block_scales_shape's, of the format's scale dtype */
        const int64_t shape[2] = {scale_rows, scale_cols};
        if (!(made_scales = allocate_output(&ops[B_SCALES], &ops[B_IN], 2, shape, block_scale_dtype(format),
                                            "scales", -1, stream)))
            goto done;
        all[B_SCALES] = &ops[B_SCALES];
    }
    ew_handle_t handle;
    int device, status;
    if (pick_handle(slots[KW_HANDLE], all, B_OPERANDS, &handle, &device))
        goto done;
    const float *global_scale = all[B_GLOBAL] ? (const float *)ops[B_GLOBAL].data : NULL;
    const int out_dtype = ops[B_OUT].dtype, input_dtype = ops[B_IN].dtype;
    void *out = ops[B_OUT].data, *scales = ops[B_SCALES].data;
    const void *in = ops[B_IN].data;
    if (recorder) {
        /* quantize: (out, scales, x); dequantize: (out, q, scales), the C signatures' orders */
        PyObject *rest =
            Py_BuildValue("(iiiLLNNNNIn)", format, out_dtype, input_dtype, (long long)rows, (long long)cols,
                          pointer_object(out), pointer_object(quantize ? scales : in),
                          pointer_object(quantize ? in : scales), pointer_object(global_scale), options,
                          (Py_ssize_t)stream);
        status = record(name, Py_BuildValue("(N)", pointer_object(handle)), rest);
    } else if (quantize) {
        status = lib.ew_quantize_blocks(handle, (ew_block_format_t)format, (ew_dtype_t)out_dtype,
                                        (ew_dtype_t)input_dtype, rows, cols, out, scales, in, global_scale,
                                        options, (ew_stream_t)stream);
    } else {
        status = lib.ew_dequantize_blocks(handle, (ew_block_format_t)format, (ew_dtype_t)out_dtype,
                                          (ew_dtype_t)input_dtype, rows, cols, out, in, scales, global_scale,
                                          options, (ew_stream_t)stream);
    }
    if (finish(status, name))
        goto done;
    PyObject *out_obj = made_out ? made_out : slots[KW_OUT];
    result = quantize ? PyTuple_Pack(2, out_obj, made_scales ? made_scales : scales_obj) : Py_NewRef(out_obj);
done:
    for (int k = 0; k < B_OPERANDS; k++)
        if (all[k])
            operand_release(all[k]);
    Py_XDECREF(made_out);
    Py_XDECREF(made_scales);
    return result;
}

static PyObject *py_quantize_blocks(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames)
{
    return blocks_common("quantize_blocks", 1, args, nargs, kwnames);
}

static PyObject *py_dequantize_blocks(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                      PyObject *kwnames)
{
    return blocks_common("dequantize_blocks", 0, args, nargs, kwnames);
}

/* block_scales_shape(shape, format="mx", *, swizzled=False) -> (scale_rows, scale_cols):
 * ew_block_scales_shape of the rows x cols that shape holds (rows the product of its leading dimensions, cols
 * the last, in elements). */
static PyObject *py_block_scales_shape(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                       PyObject *kwnames)
{
    PyObject *slots[KW_COUNT], *values[2];
    const int kw[2] = {-1, KW_FORMAT};
    if (parse_keywords("block_scales_shape", args, nargs, kwnames, KW(FORMAT) | KW(SWIZZLED), slots) ||
        bind_params("block_scales_shape", "block_scales_shape(shape, format)", args, nargs, slots, kw, 2,
                    values))
        return NULL;
    int format = 0, swizzled = flag(slots[KW_SWIZZLED]);
    if (swizzled < 0 || block_format(values[1] ? values[1] : Py_None, &format))
        return NULL;
    PyObject *shape =
        PySequence_Check(values[0]) && !PyUnicode_Check(values[0]) ? PySequence_Tuple(values[0]) : NULL;
    if (!shape) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError,
                         "block_scales_shape(): shape must be a sequence of ints (the data's shape in "
                         "elements), not %R",
                         values[0]);
        return NULL;
    }
    Py_ssize_t ndim = PyTuple_Size(shape);
    int64_t rows = 1, cols = 0;
    for (Py_ssize_t i = 0; i < ndim; i++) {
        long long extent = PyLong_AsLongLong(PyTuple_GetItem(shape, i));
        if (extent == -1 && PyErr_Occurred()) {
            Py_DECREF(shape);
            return NULL;
        }
        if (i == ndim - 1)
            cols = extent;
        else if (__builtin_mul_overflow(rows, (int64_t)extent, &rows)) {
            Py_DECREF(shape);
            PyErr_SetString(PyExc_ValueError, "block_scales_shape(): the row count overflows int64");
            return NULL;
        }
    }
    Py_DECREF(shape);
    if (ndim < 1) {
        PyErr_SetString(PyExc_ValueError,
                        "block_scales_shape(): shape () has no last dimension (rows x cols: cols the "
                        "last dimension, rows the product of the others)");
        return NULL;
    }
    int64_t scale_rows, scale_cols;
    if (block_scales_shape(format, rows, cols, swizzled ? EW_BLOCKS_SWIZZLED : 0u, &scale_rows, &scale_cols))
        return NULL;
    return Py_BuildValue("(LL)", (long long)scale_rows, (long long)scale_cols);
}

/* ---- lists ---- */

static const char *const LIST_NAMES[][2] = {{"xs"}, {"as_", "bs"}, {"xs"}, {"as_", "bs"}, {"xs"}, {"qs"}, {"xs"}};
static const char *const BATCHED_NAMES[] = {"ew_unary_batched", "ew_binary_batched", "ew_cast_batched",
                                            "ew_scale_add_batched", "ew_quantize_batched", "ew_dequantize_batched",
                                            "ew_amax_batched"};

static PyObject *pointer_tuple(void *const *pointers, Py_ssize_t n)
{
    PyObject *tuple = PyTuple_New(n);
    for (Py_ssize_t i = 0; tuple && i < n; i++)
        PyTuple_SetItem(tuple, i, pointer_object(pointers[i]));
    return tuple;
}

/* The list calls of 1.2 on a library that lacks them: -1 with a RuntimeError, else 0. */
static int batched_missing(const call_t *c)
{
    const void *function = c->family == QUANTIZE     ? (const void *)lib.ew_quantize_batched
                           : c->family == DEQUANTIZE ? (const void *)lib.ew_dequantize_batched
                           : c->family == AMAX       ? (const void *)lib.ew_amax_batched
                                                     : (const void *)lib.ew_unary_batched;
    return missing(function, BATCHED_NAMES[c->family]);
}

static int call_batched(ew_handle_t h, const call_t *c, Py_ssize_t count, const int64_t *n, void **outs,
                        const void **xs, const void **ys, intptr_t stream)
{
    const char *name = BATCHED_NAMES[c->family];
    ew_stream_t s = (ew_stream_t)stream;
    if (recorder) {
        /* As the C call takes them: amax_batched has no outs; a list's amax is its tuple of pointers or None. */
        PyObject *n_tuple = int64_tuple((int)count, n), *rest = NULL;
        PyObject *out_tuple = c->family == AMAX ? Py_NewRef(Py_None) : pointer_tuple(outs, count);
        PyObject *x_tuple = pointer_tuple((void *const *)xs, count);
        PyObject *y_tuple = c->n_inputs > 1 ? pointer_tuple((void *const *)ys, count) : Py_NewRef(Py_None);
        PyObject *amax_tuple = c->amaxes ? pointer_tuple((void *const *)c->amaxes, count) : Py_NewRef(Py_None);
        if (n_tuple && out_tuple && x_tuple && y_tuple && amax_tuple) {
            switch (c->family) {
            case QUANTIZE:
                rest = Py_BuildValue("(nOOONOin)", count, n_tuple, out_tuple, x_tuple, pointer_object(c->scale),
                                     amax_tuple, c->amax_mode, (Py_ssize_t)stream);
                break;
            case DEQUANTIZE:
                rest = Py_BuildValue("(nOOONn)", count, n_tuple, out_tuple, x_tuple, pointer_object(c->scale),
                                     (Py_ssize_t)stream);
                break;
            case AMAX:
                rest = Py_BuildValue("(nOOOin)", count, n_tuple, x_tuple, amax_tuple, c->amax_mode, (Py_ssize_t)stream);
                break;
            default:
                rest = c->n_inputs > 1 ? Py_BuildValue("(nOOOOn)", count, n_tuple, out_tuple, x_tuple, y_tuple,
                                                       (Py_ssize_t)stream)
                                       : Py_BuildValue("(nOOOn)", count, n_tuple, out_tuple, x_tuple, (Py_ssize_t)stream);
            }
        }
        Py_XDECREF(n_tuple);
        Py_XDECREF(out_tuple);
        Py_XDECREF(x_tuple);
        Py_XDECREF(y_tuple);
        Py_XDECREF(amax_tuple);
        return rest ? finish(record(name, front_args(h, c), rest), name) : -1;
    }
    ew_reduce_mode_t mode = (ew_reduce_mode_t)c->amax_mode;
    switch (c->family) {
    case UNARY: return finish(lib.ew_unary_batched(h, c->op, c->out_dtype, count, n, outs, xs, s), name);
    case BINARY:
        return finish(lib.ew_binary_batched(h, c->op, c->out_dtype, count, n, outs, xs, ys, s), name);
    case CAST: return finish(lib.ew_cast_batched(h, c->out_dtype, c->in_dtype, count, n, outs, xs, s), name);
    case QUANTIZE:
        return finish(lib.ew_quantize_batched(h, c->out_dtype, c->in_dtype, count, n, outs, xs, c->scale, c->amaxes,
                                              mode, s),
                      name);
    case DEQUANTIZE:
        return finish(lib.ew_dequantize_batched(h, c->out_dtype, c->in_dtype, count, n, outs, xs, c->scale, s), name);
    case AMAX: return finish(lib.ew_amax_batched(h, c->out_dtype, count, n, xs, c->amaxes, mode, s), name);
    default:
        return finish(lib.ew_scale_add_batched(h, c->out_dtype, c->alpha, count, n, outs, xs, ys, s), name);
    }
}

/* One list entry: out and inputs of one shape, contiguous, on the call's device, of the first entry's dtypes
 * (whose inputs' dtype the first entry checks against its out's: later entries match them). amax_batched's
 * entries have no out: x stands in its place. */
static int check_entry(const call_t *c, operand_t *const *entry, int n_lists, const int *dtypes, int device,
                       int first)
{
    const operand_t *out = entry[0];
    for (int k = 0; k < 1 + n_lists; k++) {
        const operand_t *op = entry[k];
        if (k && !same_shape(op, out))
            return shapes_error(op, out, "has shape %R but %U has %R; list entries are not broadcast");
        if (!is_contiguous(op)) {
            PyObject *strides = int64_tuple(op->ndim, op->strides);
            if (strides)
                operand_error(op, PyExc_ValueError, " ", "is not contiguous (strides %R in elements); the list calls take "
                              "contiguous arrays: make a call per strided view instead", strides);
            Py_XDECREF(strides);
            return -1;
        }
        if (check_device(op, device))
            return -1;
    }
    if (first && !converts(c->family) && same_dtype(out, entry + 1, n_lists))
        return -1;
    for (int k = 0; k < 1 + n_lists; k++) {
        dtype_label_t have, want;
        int expected = dtypes[k == 0 ? 0 : 1];
        if (entry[k]->dtype != expected)
            return operand_error(entry[k], PyExc_TypeError, " ",
                                 "is %s but the first entry's is %s; one list call takes one dtype%s",
                                 dtype_label(entry[k]->dtype, &have), dtype_label(expected, &want),
                                 converts(c->family) ? " pair" : "");
    }
    return 0;
}

/* A scaled list's device scalars (opened before the entries; absent ones NULL in ops), once the call's
 * stream is chosen: exported on it and checked, the scale a contiguous column of count floats, the amax
 * count floats (any stride) or one shared by every entry; amax_batched's out made (count floats, like the
 * first entry's x) when None. */
static int settle_scalars(call_t *c, operand_t *scalar, operand_t **ops, Py_ssize_t count, const operand_t *like,
                          intptr_t stream, PyObject **made)
{
    for (int k = 0; k < c->n_scalars; k++) {
        if (!ops[k] && k == 1 && c->family == AMAX) {
            if (!like) {
                PyErr_SetString(PyExc_TypeError, "amax_batched of an empty list with out=None has nothing to make out "
                                "like: pass out");
                return -1;
            }
            int64_t shape[1] = {count};
            if (!(*made = allocate_output(&scalar[k], like, 1, shape, EW_F32, "out", -1, stream)))
                return -1;
            ops[k] = &scalar[k];
        }
        if (!ops[k])
            continue;
        if (operand_export(ops[k], stream) || check_scalars(ops[k], c->scalars[k].dtype, 1, count, k == 1))
            return -1;
        if (k == 0 && !is_contiguous(ops[k])) {
            PyObject *strides = int64_tuple(ops[k]->ndim, ops[k]->strides);
            if (strides)
                operand_error(ops[k], PyExc_ValueError, " ", "is not contiguous (strides %R in elements); the list "
                              "calls read entry i's at %s[i]: pass a contiguous copy", strides, c->scalars[k].name);
            Py_XDECREF(strides);
            return -1;
        }
    }
    return 0;
}

/* Lists: entry i is exactly the flat call on outs[i] and the inputs' i-th arrays, all in one launch.
 * Entries are contiguous, of one shape each (no broadcasting), one dtype (pair) for the list. The
 * stream is chosen from the first entry (and a scaled list's scalars); later entries naming another
 * one are refused. Returns the outs, or amax_batched's amax array. */
static PyObject *run_batched(call_t *c, PyObject *outs_obj, PyObject *const *list_objs, int requested, int alloc_dtype,
                             PyObject *handle_obj, PyObject *stream_obj)
{
    int n_lists = c->n_inputs, no_outs = c->family == AMAX;
    PyObject *lists[2] = {NULL, NULL}, *outs = NULL, *results = NULL, *made_scalar = NULL;
    int64_t *counts = NULL;
    void **pointers = NULL;
    PyObject *answer = NULL;
    operand_t scalar[MAX_SCALARS];
    operand_t *scalar_ops[MAX_SCALARS] = {NULL, NULL};
    int scalars_opened = 0;
    if (batched_missing(c))
        return NULL;
    for (int k = 0; k < n_lists; k++)
        if (!(lists[k] = PySequence_Tuple(list_objs[k])))
            goto done;
    Py_ssize_t count = PyTuple_Size(lists[0]);
    for (int k = 1; k < n_lists; k++)
        if (PyTuple_Size(lists[k]) != count) {
            PyErr_Format(PyExc_ValueError, "%s has %zd entries but %s has %zd", LIST_NAMES[c->family][k],
                         PyTuple_Size(lists[k]), LIST_NAMES[c->family][0], count);
            goto done;
        }
    if (outs_obj != Py_None) {
        if (!(outs = PySequence_Tuple(outs_obj)))
            goto done;
        if (PyTuple_Size(outs) != count) {
            PyErr_Format(PyExc_ValueError, "outs has %zd entries but %s has %zd", PyTuple_Size(outs),
                         LIST_NAMES[c->family][0], count);
            goto done;
        }
    }
    for (; scalars_opened < c->n_scalars; scalars_opened++) {
        operand_t *op = &scalar[scalars_opened];
        const scalar_arg_t *arg = &c->scalars[scalars_opened];
        op->capsule = NULL; /* absent (or made later): nothing to release yet */
        op->managed = NULL;
        if (arg->obj == Py_None)
            continue;
        if (operand_open(op, arg->obj, arg->name, -1, 0, arg->writable))
            goto done;
        scalar_ops[scalars_opened] = op;
    }
    if (!(results = PyList_New(no_outs ? 0 : count)))
        goto done;
    counts = PyMem_Malloc(sizeof(int64_t) * (size_t)(count ? count : 1));
    pointers = PyMem_Malloc(sizeof(void *) * (size_t)(count ? count : 1) * 4);
    if (!counts || !pointers) {
        PyErr_NoMemory();
        goto done;
    }
    operand_t ops[3];
    intptr_t stream = 0;
    int dtypes[2] = {0, 0};
    if (!count) { /* nothing runs; the library still checks the handle and the dtypes */
        dtypes[0] = alloc_dtype ? alloc_dtype : requested ? requested : EW_F32;
        dtypes[1] = requested                  ? requested
                    : c->family == QUANTIZE   ? EW_F32
                    : c->family == DEQUANTIZE ? EW_F8E4M3
                                              : dtypes[0];
    }
    ew_handle_t handle = NULL;
    int device = -1;
    for (Py_ssize_t i = 0; i < count; i++) {
        int opened = 0, out_open = 0, ok = 0;
        operand_t *entry[3 + MAX_SCALARS] = {NULL, NULL, NULL, scalar_ops[0], scalar_ops[1]}; /* out, inputs, scalars */
        PyObject *given = outs ? PyTuple_GetItem(outs, i) : Py_None, *made = NULL;
        for (; opened < n_lists; opened++) {
            if (operand_open(&ops[1 + opened], PyTuple_GetItem(lists[opened], i), LIST_NAMES[c->family][opened], i,
                             requested, 0))
                goto entry_done;
            entry[1 + opened] = &ops[1 + opened];
        }
        if (given != Py_None) {
            if (operand_open(&ops[0], given, "outs", i, converts(c->family) ? alloc_dtype : requested, 1))
                goto entry_done;
            out_open = 1;
            entry[0] = &ops[0];
        }
        if (i == 0 && resolve_stream(stream_obj, entry, 3 + MAX_SCALARS, &stream))
            goto entry_done;
        for (int k = 0; k < 3; k++)
            if (entry[k] && (check_stream(entry[k], stream_obj, stream) || operand_export(entry[k], stream)))
                goto entry_done;
        if (no_outs) {
            entry[0] = entry[1]; /* amax_batched: x stands in out's place (as in the library) */
        } else if (given == Py_None) {
            made = allocate_output(&ops[0], entry[1], entry[1]->ndim, entry[1]->shape,
                                   alloc_dtype ? alloc_dtype : entry[1]->dtype, "outs", i, stream);
            if (!made)
                goto entry_done;
            out_open = 1;
            entry[0] = &ops[0];
        }
        if (i == 0) {
            dtypes[0] = entry[0]->dtype;
            dtypes[1] = entry[1]->dtype;
            if (settle_scalars(c, scalar, entry + 3, count, entry[1], stream, &made_scalar))
                goto entry_done;
            scalar_ops[0] = entry[3];
            scalar_ops[1] = entry[4];
            if (pick_handle(handle_obj, entry, 3 + MAX_SCALARS, &handle, &device))
                goto entry_done;
        }
        if (check_entry(c, entry, n_lists, dtypes, device, i == 0))
            goto entry_done;
        counts[i] = entry[0]->count;
        pointers[i] = entry[0]->data;
        pointers[count + i] = entry[1]->data;
        pointers[2 * count + i] = n_lists > 1 ? entry[2]->data : NULL;
        if (!no_outs)
            PyList_SetItem(results, i, made ? made : Py_NewRef(given));
        made = NULL;
        ok = 1;
    entry_done:
        if (out_open)
            operand_release(&ops[0]);
        for (int k = 0; k < opened; k++)
            operand_release(&ops[1 + k]);
        Py_XDECREF(made);
        if (!ok)
            goto done;
    }
    if (!count) {
        operand_t **scalars = scalar_ops;
        if (resolve_stream(stream_obj, scalars, MAX_SCALARS, &stream) ||
            settle_scalars(c, scalar, scalars, 0, NULL, stream, &made_scalar) ||
            pick_handle(handle_obj, scalars, MAX_SCALARS, &handle, &device))
            goto done;
    }
    c->out_dtype = dtypes[0];
    c->in_dtype = dtypes[1];
    if (c->n_scalars) {
        const operand_t *amax = scalar_ops[1];
        c->scale = scalar_ops[0] ? (const float *)scalar_ops[0]->data : NULL;
        c->amaxes = amax ? (float *const *)(pointers + 3 * count) : NULL;
        /* entry i's amax: element i of a column (its stride in elements), or the one shared element */
        int64_t step = amax && amax->count != 1 ? amax->strides[0] : 0;
        for (Py_ssize_t i = 0; amax && i < count; i++)
            pointers[3 * count + i] = (float *)amax->data + step * i;
    }
    if (call_batched(handle, c, count, counts, pointers, (const void **)pointers + count,
                     (const void **)pointers + 2 * count, stream))
        goto done;
    if (no_outs) {
        answer = made_scalar ? made_scalar : Py_NewRef(c->scalars[1].obj);
        made_scalar = NULL;
    } else {
        answer = results;
        results = NULL;
    }
done:
    for (int k = 0; k < scalars_opened; k++)
        operand_release(&scalar[k]);
    Py_XDECREF(made_scalar);
    Py_XDECREF(lists[0]);
    Py_XDECREF(lists[1]);
    Py_XDECREF(outs);
    Py_XDECREF(results);
    PyMem_Free(counts);
    PyMem_Free(pointers);
    return answer;
}

static PyObject *py_scale_add_batched(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *slots[KW_COUNT];
    PyObject *const *rest;
    if (parse_keywords("scale_add_batched", args, nargs, kwnames, BATCHED_KEYWORDS, slots) ||
        split_out("scale_add_batched", args, nargs, 3, slots, &rest, "%s(outs, alpha, as_, bs)",
                   "%s(alpha, as_, bs, outs=outs)"))
        return NULL;
    call_t c = {.family = SCALE_ADD, .n_inputs = 2};
    if (alpha_value(rest[0], &c.alpha))
        return NULL;
    int dtype = optional_dtype(slots[KW_DTYPE]);
    if (!dtype && PyErr_Occurred())
        return NULL;
    return run_batched(&c, slots[KW_OUTS], rest + 1, dtype, 0, slots[KW_HANDLE], slots[KW_STREAM]);
}

static PyObject *py_cast_batched(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return cast_common("cast_batched", 1, args, nargs, kwnames);
}

/* ---- user-defined kernels ---- */

static int attr_int(PyObject *obj, PyObject *name, long *value)
{
    PyObject *v = PyObject_GetAttr(obj, name);
    if (!v)
        return -1;
    *value = PyLong_AsLong(v);
    Py_DECREF(v);
    return *value == -1 && PyErr_Occurred() ? -1 : 0;
}

/* A kernel's out argument: an int, the one output of ew_kernel_create (*n = 0); else a sequence of (dtype,
 * reduction) pairs, ew_kernel_create_outputs' outputs, the first 16 in values (a kernel takes fewer; the
 * library refuses more), how many in *n. 0, or -1 with the exception set. */
static int kernel_outputs_arg(PyObject *out, int *out_dtype, ew_kernel_output_t values[16], Py_ssize_t *n)
{
    *n = 0;
    if (PyLong_Check(out))
        return int_arg(out, out_dtype);
    PyObject *pairs = PySequence_Tuple(out);
    if (!pairs)
        return -1;
    *n = PyTuple_Size(pairs);
    for (Py_ssize_t k = 0; k < *n && k < 16 && !PyErr_Occurred(); k++) {
        int dtype, reduce;
        if (!PyArg_ParseTuple(PyTuple_GetItem(pairs, k), "ii", &dtype, &reduce))
            break;
        values[k] = (ew_kernel_output_t){(ew_dtype_t)dtype, (ew_reduce_op_t)reduce};
    }
    Py_DECREF(pairs);
    return PyErr_Occurred() ? -1 : 0;
}

/* A kernel's outputs as a launch takes them: its _outputs ((dtype, reduction), ...), in the library's order, a
 * reduction 0 for an array; a kernel of ew_kernel_create as its one array. */
typedef struct {
    int n, n_arrays, n_scalars;
    int dtype[EW_KERNEL_MAX_OUTPUTS], reduce[EW_KERNEL_MAX_OUTPUTS];
} kernel_outputs_t;

static int read_kernel_outputs(PyObject *value, kernel_outputs_t *k)
{
    ew_kernel_output_t values[16];
    Py_ssize_t n;
    int one;
    if (kernel_outputs_arg(value, &one, values, &n))
        return -1;
    k->n_arrays = k->n_scalars = 0;
    for (Py_ssize_t i = 0; i < n && i < EW_KERNEL_MAX_OUTPUTS; i++) {
        k->dtype[i] = (int)values[i].dtype;
        k->reduce[i] = (int)values[i].reduce;
        if (k->reduce[i])
            k->n_scalars++;
        else
            k->n_arrays++;
    }
    if (n > EW_KERNEL_MAX_OUTPUTS || k->n_arrays < 1 || k->n_arrays > 1 + MORE_ARRAYS || k->n_scalars > MAX_SCALARS) {
        PyErr_SetString(PyExc_ValueError, "the kernel's outputs are not 1 to 4 arrays and reductions");
        return -1;
    }
    k->n = (int)n;
    return 0;
}

/* "(array, array, scalar)": what out= of these outputs is. */
static void outputs_form(const kernel_outputs_t *k, char *text, size_t size)
{
    int at = snprintf(text, size, "(");
    for (int i = 0; i < k->n && at > 0 && (size_t)at < size; i++)
        at += snprintf(text + at, size - (size_t)at, "%s%s", i ? ", " : "", k->reduce[i] ? "scalar" : "array");
    if (at > 0 && (size_t)at < size)
        snprintf(text + at, size - (size_t)at, k->n == 1 ? ",)" : ")");
}

static int kernel_dtype_error(const operand_t *op, int dtype)
{
    dtype_label_t have, want;
    return operand_error(op, PyExc_ValueError, " ", "is %s but the kernel makes %s", dtype_label(op->dtype, &have),
                         dtype_label(dtype, &want));
}

static int kernel_input_error(const operand_t *op, int dtype)
{
    dtype_label_t have, want;
    return operand_error(op, PyExc_ValueError, " ", "is %s but the kernel takes %s",
                         dtype_label(op->dtype, &have), dtype_label(dtype, &want));
}

static const char *const KERNEL_INPUTS[MAX_INPUTS] = {"in0", "in1", "in2", "in3"};
static const char *const KERNEL_OUTPUTS[EW_KERNEL_MAX_OUTPUTS] = {"out[0]", "out[1]", "out[2]", "out[3]"};

/* What a launch reads of a Kernel: its outputs (of_outputs: ew_kernel_create_outputs' kernel, its _outputs;
 * else ew_kernel_create's one array of _out_dtype), its inputs' dtypes (_in_dtypes) and n_params. */
typedef struct {
    int of_outputs;
    kernel_outputs_t ko;
    int n_inputs;
    int in_dtype[MAX_INPUTS];
    long n_params;
} kernel_spec_t;

static int read_kernel_spec(PyObject *kernel, kernel_spec_t *spec)
{
    PyObject *outputs_attr = PyObject_GetAttr(kernel, s_outputs_attr);
    if (!outputs_attr)
        return -1;
    spec->of_outputs = outputs_attr != Py_None;
    long out_dtype = 0;
    int read = spec->of_outputs ? read_kernel_outputs(outputs_attr, &spec->ko)
                                : attr_int(kernel, s_out_dtype, &out_dtype);
    Py_DECREF(outputs_attr);
    if (read || attr_int(kernel, s_n_params, &spec->n_params))
        return -1;
    if (!spec->of_outputs) { /* ew_kernel_create's: one array */
        spec->ko.n = spec->ko.n_arrays = 1;
        spec->ko.n_scalars = 0;
        spec->ko.dtype[0] = (int)out_dtype;
        spec->ko.reduce[0] = 0;
    }
    PyObject *in_dtypes = PyObject_GetAttr(kernel, s_in_dtypes);
    if (!in_dtypes)
        return -1;
    Py_ssize_t n_inputs = PyTuple_Check(in_dtypes) ? PyTuple_Size(in_dtypes) : -1;
    for (Py_ssize_t k = 0; k < n_inputs && k < MAX_INPUTS; k++)
        spec->in_dtype[k] = (int)PyLong_AsLong(PyTuple_GetItem(in_dtypes, k));
    Py_DECREF(in_dtypes);
    if (n_inputs < 1 || n_inputs > MAX_INPUTS || PyErr_Occurred()) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "the kernel's in_dtypes are not 1 to 4 dtypes");
        return -1;
    }
    spec->n_inputs = (int)n_inputs;
    return 0;
}

/* params= of a launch (None: none) into values: exactly the kernel's n_params floats. */
static int read_params(PyObject *value, long n_params, double values[8])
{
    PyObject *tuple = value == Py_None ? Py_NewRef(empty_tuple) : PySequence_Tuple(value);
    if (!tuple)
        return -1;
    Py_ssize_t n_given = PyTuple_Size(tuple);
    if (n_given != n_params || n_given > 8) {
        Py_DECREF(tuple);
        PyErr_Format(PyExc_TypeError, "the kernel takes %ld params, %zd given", n_params, n_given);
        return -1;
    }
    for (Py_ssize_t k = 0; k < n_given; k++)
        values[k] = PyFloat_AsDouble(PyTuple_GetItem(tuple, k));
    Py_DECREF(tuple);
    return PyErr_Occurred() ? -1 : 0;
}

/* kernel_launch(kernel, *inputs, out=None, params=(), stream=None, accumulate=False): out[i] =
 * body(inputs..., params) for every index of out, the inputs broadcast to out's shape; out None: made like
 * the first input, of the inputs' broadcast shape and the kernel's out dtype. Flat when every operand is
 * contiguous over one shape, else ew_kernel_launch_strided. The deprecated kernel(out, *inputs) is told apart
 * by count. A kernel of outputs (its _outputs ((dtype, reduction), ...), not None: ew_kernel_create_outputs)
 * takes out= as a tuple in that order, arrays and scalars, each None to be made (an array of the call's
 * shape, like the first input; a scalar of shape ()), launches through ew_kernel_launch_outputs (or its
 * _strided form, each array through its own strides) and returns that tuple; accumulate folds into the
 * scalars' values. Its arrays are of one shape: the first given one's, else the inputs' broadcast shape. */
static PyObject *py_kernel_launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *slots[KW_COUNT];
    if (parse_keywords("Kernel.__call__", args, nargs, kwnames,
                       KW(OUT) | KW(STREAM) | KW(PARAMS) | KW(ACCUMULATE), slots))
        return NULL;
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "kernel_launch() takes the kernel first");
        return NULL;
    }
    PyObject *kernel = args[0];
    kernel_spec_t spec;
    if (read_kernel_spec(kernel, &spec))
        return NULL;
    const int of_outputs = spec.of_outputs;
    const kernel_outputs_t ko = spec.ko;
    const long n_params = spec.n_params;
    const Py_ssize_t n_inputs = spec.n_inputs;
    const int *expected = spec.in_dtype;
    int accumulate = slots[KW_ACCUMULATE] == Py_None ? 0 : PyObject_IsTrue(slots[KW_ACCUMULATE]);
    if (accumulate < 0)
        return NULL;
    if (accumulate && !ko.n_scalars) {
        PyErr_SetString(PyExc_TypeError, "accumulate= is for a kernel with a reduction output");
        return NULL;
    }
    PyObject *const *inputs = args + 1;
    Py_ssize_t given = nargs - 1;
    if (given == n_inputs + 1 && !of_outputs) {
        if (slots[KW_OUT] != Py_None) {
            PyErr_SetString(PyExc_TypeError, "the kernel got out both first and as out=");
            return NULL;
        }
        if (deprecated("Kernel", "%s(...)(out, *inputs)", "%s(...)(*inputs, out=out)"))
            return NULL;
        slots[KW_OUT] = inputs[0];
        inputs++;
        given--;
    }
    if (given != n_inputs) {
        PyErr_Format(PyExc_TypeError, "the kernel takes %zd inputs, %zd given", n_inputs, given);
        return NULL;
    }
    double params[8];
    if (read_params(slots[KW_PARAMS], n_params, params))
        return NULL;
    ew_kernel_t k_raw;
    if (live_pointer(kernel, "kernel", (void **)&k_raw))
        return NULL;

    /* out=: of a kernel of outputs, its items in the kernel's order, into arrays (the first out, the rest
     * more) and scalars; every object borrowed, as the tuple is for the call. */
    PyObject *out_obj = slots[KW_OUT];
    const char *out_name = "out";
    scalar_arg_t scalars[MAX_SCALARS], more[MORE_ARRAYS];
    int array_dtype[1 + MORE_ARRAYS] = {ko.dtype[0]};
    if (of_outputs) {
        char form[96];
        outputs_form(&ko, form, sizeof form);
        PyObject *outs = out_obj;
        if (outs != Py_None && (!(PyTuple_Check(outs) || PyList_Check(outs)) || PySequence_Size(outs) != ko.n)) {
            PyErr_Format(PyExc_TypeError, "out= of this kernel is a %s %s, %s of them None",
                         ko.n == 2 ? "pair" : "tuple", form, ko.n == 2 ? "either" : "any");
            return NULL;
        }
        PyObject *(*item)(PyObject *, Py_ssize_t) = PyTuple_Check(outs) ? PyTuple_GetItem : PyList_GetItem;
        for (int k = 0, a = 0, c = 0; k < ko.n; k++) {
            PyObject *obj = outs == Py_None ? Py_None : item(outs, k);
            if (ko.reduce[k]) {
                if (accumulate && obj == Py_None) {
                    PyErr_Format(PyExc_TypeError, "accumulate=True needs out=%s: the scalar to fold into", form);
                    return NULL;
                }
                scalars[c++] = (scalar_arg_t){obj, KERNEL_OUTPUTS[k], 1, ko.dtype[k]};
            } else {
                if (a == 0) {
                    out_obj = obj;
                    out_name = ko.n_arrays > 1 ? KERNEL_OUTPUTS[k] : "out";
                } else {
                    more[a - 1] = (scalar_arg_t){obj, KERNEL_OUTPUTS[k], 1, ko.dtype[k]};
                }
                array_dtype[a++] = ko.dtype[k];
            }
        }
        if (missing(lib.ew_kernel_launch_outputs, "ew_kernel_launch_outputs") ||
            missing(lib.ew_kernel_launch_outputs_strided, "ew_kernel_launch_outputs_strided"))
            return NULL;
    }
    const int n_more = ko.n_arrays - 1;

    operands_t o;
    PyObject *result = NULL, *scalar_made[MAX_SCALARS] = {NULL}, *more_made[MORE_ARRAYS] = {NULL};
    int n = (int)n_inputs;
    if (operands_open(&o, inputs, n, KERNEL_INPUTS, 0, out_obj, 0, slots[KW_STREAM], scalars, ko.n_scalars,
                      out_name, more, n_more))
        goto done;
    for (int k = 0; k < n; k++)
        if (o.in[k].dtype != expected[k]) {
            kernel_input_error(&o.in[k], expected[k]);
            goto done;
        }
    /* The first array: given; else made of the first given array's shape, else of the inputs' broadcast shape. */
    const operand_t *shaped = NULL;
    for (int k = 0; k < n_more && !shaped; k++)
        if (more[k].obj != Py_None)
            shaped = &o.more[k];
    if (!o.out_opened && shaped) {
        if (!(o.made = allocate_output(&o.out, &o.in[0], shaped->ndim, shaped->shape, array_dtype[0], out_name, -1,
                                       o.stream)))
            goto done;
        o.out_opened = 1;
        o.all[0] = &o.out;
    } else if (operands_out(&o, array_dtype[0])) {
        goto done;
    }
    o.out.what = out_name;
    if (o.out.dtype != array_dtype[0]) {
        kernel_dtype_error(&o.out, array_dtype[0]);
        goto done;
    }
    for (int k = 0; k < n_more; k++) {
        if (more[k].obj == Py_None)
            continue;
        if (o.more[k].dtype != array_dtype[1 + k]) {
            kernel_dtype_error(&o.more[k], array_dtype[1 + k]);
            goto done;
        }
        if (!same_shape(&o.more[k], &o.out)) {
            shapes_error(&o.more[k], &o.out, "has shape %R but %U has shape %R: a kernel's arrays are of one shape");
            goto done;
        }
    }
    int64_t strides[MAX_INPUTS][MAX_NDIM];
    const int64_t *stride_ptrs[MAX_INPUTS];
    const void *pointers[MAX_INPUTS];
    int flat;
    if (operands_layout(&o, strides, &flat))
        goto done;
    for (int k = 0; k < n_more; k++) {
        if (more[k].obj == Py_None) {
            if (!(more_made[k] = allocate_output(&o.more[k], &o.in[0], o.out.ndim, o.out.shape, array_dtype[1 + k],
                                                 more[k].name, -1, o.stream)))
                goto done;
            o.all[BASE_OPERANDS + k] = &o.more[k];
        }
        flat = flat && (is_contiguous(&o.more[k]) || o.out.count == 0);
    }
    for (int c = 0; c < ko.n_scalars; c++)
        if (scalars[c].obj == Py_None) {
            int64_t none[1] = {0};
            if (!(scalar_made[c] = allocate_output(&o.scalar[c], &o.in[0], 0, none, scalars[c].dtype, scalars[c].name,
                                                   -1, o.stream)))
                goto done;
            o.all[1 + MAX_INPUTS + c] = &o.scalar[c];
        }
    for (int k = 0; k < n; k++) {
        stride_ptrs[k] = strides[k];
        pointers[k] = o.in[k].data;
    }
    /* The kernel runs on its handle's device: every operand must be there. */
    PyObject *handle_obj = PyObject_GetAttr(kernel, s_handle_attr);
    if (!handle_obj)
        goto done;
    ew_handle_t unused;
    int device;
    int picked = pick_handle(handle_obj, o.all, o.n_all, &unused, &device);
    Py_DECREF(handle_obj);
    if (picked)
        goto done;
    int status;
    static const char *const names_of[2][2] = {{"ew_kernel_launch_strided", "ew_kernel_launch"},
                                               {"ew_kernel_launch_outputs_strided", "ew_kernel_launch_outputs"}};
    const char *name = names_of[of_outputs][flat];
    const int mode = accumulate ? EW_REDUCE_ACCUMULATE : EW_REDUCE_OVERWRITE;
    /* A kernel of outputs': their pointers and (arrays') strides in the kernel's order. */
    void *outputs[EW_KERNEL_MAX_OUTPUTS];
    const int64_t *out_strides[EW_KERNEL_MAX_OUTPUTS];
    for (int k = 0, a = 0, c = 0; of_outputs && k < ko.n; k++) {
        const operand_t *op = ko.reduce[k] ? &o.scalar[c++] : a == 0 ? &o.out : &o.more[a - 1];
        a += !ko.reduce[k];
        outputs[k] = op->data;
        out_strides[k] = ko.reduce[k] ? NULL : op->strides;
    }
    const operand_t *out = &o.out;
    ew_stream_t stream = (ew_stream_t)o.stream;
    if (recorder) {
        PyObject *ptrs = PyTuple_New(n), *param_values = PyTuple_New(n_params), *rest = NULL;
        for (Py_ssize_t k = 0; ptrs && k < n; k++)
            PyTuple_SetItem(ptrs, k, pointer_object(pointers[k]));
        for (Py_ssize_t k = 0; param_values && k < n_params; k++)
            PyTuple_SetItem(param_values, k, PyFloat_FromDouble(params[k]));
        PyObject *in_strides = flat ? NULL : PyTuple_New(n);
        for (Py_ssize_t k = 0; in_strides && k < n; k++)
            PyTuple_SetItem(in_strides, k, int64_tuple(out->ndim, strides[k]));
        PyObject *out_ptrs = of_outputs ? PyTuple_New(ko.n) : NULL, *out_strides_tuple = NULL;
        for (int k = 0; out_ptrs && k < ko.n; k++)
            PyTuple_SetItem(out_ptrs, k, pointer_object(outputs[k]));
        if (of_outputs && !flat && (out_strides_tuple = PyTuple_New(ko.n)))
            for (int k = 0; k < ko.n; k++)
                PyTuple_SetItem(out_strides_tuple, k,
                                out_strides[k] ? int64_tuple(out->ndim, out_strides[k]) : Py_NewRef(Py_None));
        if (of_outputs && flat) {
            rest = Py_BuildValue("(NLNiNNn)", pointer_object(k_raw), (long long)out->count, out_ptrs, mode, ptrs,
                                 param_values, (Py_ssize_t)o.stream);
        } else if (of_outputs) {
            rest = Py_BuildValue("(NiNNNiNNNn)", pointer_object(k_raw), out->ndim, operand_shape(out), out_ptrs,
                                 out_strides_tuple, mode, ptrs, in_strides, param_values, (Py_ssize_t)o.stream);
        } else if (flat) {
            rest = Py_BuildValue("(NLNNNn)", pointer_object(k_raw), (long long)out->count,
                                 pointer_object(out->data), ptrs, param_values, (Py_ssize_t)o.stream);
        } else {
            rest = Py_BuildValue("(NiNNNNNNn)", pointer_object(k_raw), out->ndim, operand_shape(out),
                                 pointer_object(out->data), int64_tuple(out->ndim, out->strides), ptrs,
                                 in_strides, param_values, (Py_ssize_t)o.stream);
        }
        status = record(name, PyTuple_New(0), rest);
    } else if (of_outputs && flat) {
        status = lib.ew_kernel_launch_outputs(k_raw, out->count, outputs, (ew_reduce_mode_t)mode, pointers,
                                              n_params ? params : NULL, stream);
    } else if (of_outputs) {
        status = lib.ew_kernel_launch_outputs_strided(k_raw, out->ndim, out->shape, outputs, out_strides,
                                                      (ew_reduce_mode_t)mode, pointers, stride_ptrs,
                                                      n_params ? params : NULL, stream);
    } else if (flat) {
        status =
            lib.ew_kernel_launch(k_raw, out->count, out->data, pointers, n_params ? params : NULL, stream);
    } else {
        status = lib.ew_kernel_launch_strided(k_raw, out->ndim, out->shape, out->data, out->strides, pointers,
                                              stride_ptrs, n_params ? params : NULL, stream);
    }
    if (finish(status, name))
        goto done;
    result = operands_result(&o, out_obj);
    if (of_outputs && result) { /* the tuple, in the kernel's order */
        PyObject *array = result;
        result = PyTuple_New(ko.n);
        for (int k = 0, a = 0, c = 0; result && k < ko.n; k++) {
            PyObject *value;
            if (ko.reduce[k]) {
                value = scalar_made[c] ? scalar_made[c] : scalars[c].obj;
                c++;
            } else {
                value = a == 0 ? array : more_made[a - 1] ? more_made[a - 1] : more[a - 1].obj;
                a++;
            }
            PyTuple_SetItem(result, k, Py_NewRef(value));
        }
        Py_DECREF(array);
    }
done:
    for (int c = 0; c < MAX_SCALARS; c++)
        Py_XDECREF(scalar_made[c]);
    for (int k = 0; k < MORE_ARRAYS; k++)
        Py_XDECREF(more_made[k]);
    operands_release(&o);
    return result;
}

/* ---- user-defined kernels over tensor lists (1.2) ---- */

/* ElementwiseError(status, message, function) for a refusal the binding makes before the library would. */
static void raise_refusal(int status, const char *message, const char *function)
{
    PyObject *error = PyObject_CallFunction(error_class, "iss", status, message, function);
    if (error) {
        PyErr_SetObject(error_class, error);
        Py_DECREF(error);
    }
}

/* A list argument as a tuple: any sequence but an array or a string (an array would iterate over its
 * rows). */
static PyObject *list_arg(PyObject *value, const char *name)
{
    if (!PyUnicode_Check(value) && !PyBytes_Check(value) && !has_attr(value, s_dlpack) &&
        !has_attr(value, s_cai)) {
        PyObject *tuple = PySequence_Tuple(value);
        if (tuple || !PyErr_ExceptionMatches(PyExc_TypeError))
            return tuple;
        PyErr_Clear();
    }
    PyObject *type = type_name(value);
    if (type)
        PyErr_Format(PyExc_TypeError, "%s must be a sequence of arrays, one an entry, not %U", name, type);
    Py_XDECREF(type);
    return NULL;
}

/* entry_params: count * n_params float64 values, contiguous (entry i's at [i * n_params]). */
static int check_entry_params(const operand_t *op, Py_ssize_t count, long n_params)
{
    const long long wanted = (long long)count * n_params;
    dtype_label_t label;
    if (op->dtype != EW_F64)
        return operand_error(op, PyExc_TypeError, " ",
                             "is %s; it must be a float64 array of count * n_params = %lld values",
                             dtype_label(op->dtype, &label), wanted);
    if (op->count != wanted)
        return operand_error(op, PyExc_ValueError, " ",
                             "has %lld values but %zd entries of %ld params take %lld", (long long)op->count,
                             count, n_params, wanted);
    if (!is_contiguous(op)) {
        PyObject *strides = int64_tuple(op->ndim, op->strides);
        if (strides)
            operand_error(op, PyExc_ValueError, " ",
                          "is not contiguous (strides %R in elements): entry i's params are read at "
                          "[i * n_params]", strides);
        Py_XDECREF(strides);
        return -1;
    }
    return 0;
}

/* One list entry of a kernel: its given operands (the outputs', then the inputs'; NULL for an output to be
 * made) of the kernel's dtypes, contiguous, of the first input's shape, on the kernel's device. */
static int check_kernel_entry(operand_t *const *ops, int n_out, int n_in, const int *out_dtypes,
                              const int *in_dtypes, int device)
{
    const operand_t *first = ops[n_out];
    for (int k = 0; k < n_out + n_in; k++) {
        const operand_t *op = ops[k];
        if (!op)
            continue;
        if (k < n_out ? op->dtype != out_dtypes[k] : op->dtype != in_dtypes[k - n_out])
            return k < n_out ? kernel_dtype_error(op, out_dtypes[k])
                             : kernel_input_error(op, in_dtypes[k - n_out]);
        if (op != first && !same_shape(op, first))
            return shapes_error(op, first, "has shape %R but %U has %R; list entries are not broadcast");
        if (!is_contiguous(op)) {
            PyObject *strides = int64_tuple(op->ndim, op->strides);
            if (strides)
                operand_error(op, PyExc_ValueError, " ",
                              "is not contiguous (strides %R in elements); the list calls take contiguous "
                              "arrays: make a call per strided view instead", strides);
            Py_XDECREF(strides);
            return -1;
        }
        if (check_device(op, device))
            return -1;
    }
    return 0;
}

/* What the first entry (for an empty list, entry_params alone) settles for the whole call: the stream
 * (stream=, else what those operands name), entry_params exported on it and checked, and the kernel's device,
 * where each of those operands must be. ops: the entry's given operands and entry_params, any NULL. */
static int settle_list(PyObject *stream_obj, operand_t **ops, int n_ops, operand_t *entry_params,
                       Py_ssize_t count, long n_params, PyObject *handle_obj, intptr_t *stream, int *device)
{
    if (resolve_stream(stream_obj, ops, n_ops, stream))
        return -1;
    if (entry_params &&
        (operand_export(entry_params, *stream) || check_entry_params(entry_params, count, n_params)))
        return -1;
    ew_handle_t unused;
    return pick_handle(handle_obj, ops, n_ops, &unused, device);
}

/* kernel_launch_batched(kernel, *input_lists, out=None, params=(), entry_params=None, stream=None,
 * accumulate=False): the kernel over tensor lists in the few launches of ew_kernel_launch_batched, entry i
 * its flat launch on the i-th arrays of the lists. The input lists are sequences of one length (count); an
 * entry's arrays are contiguous, of one shape (no broadcasting) and of the kernel's dtypes. out: of
 * ew_kernel_create's kernel, a sequence of count arrays; of a kernel of outputs, a sequence of such lists,
 * one per output in the kernel's order, the reduction's a list of count scalars as the flat call takes its
 * scalar (one object repeated: one reduction over the whole list); None for a list, an array or a scalar
 * is made, an array like the entry's first input and of the output's dtype, a scalar of shape ().
 * accumulate folds into the scalars' values (then given). params: the n_params values of every entry;
 * entry_params: a float64 device array of count * n_params values, each entry's own (not both). The
 * stream is chosen from the first entry and entry_params; later entries naming another one are refused.
 * Returns out: a list of count arrays, or a tuple of such lists. */
static PyObject *py_kernel_launch_batched(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                          PyObject *kwnames)
{
    static const char *const name = "ew_kernel_launch_batched";
    PyObject *slots[KW_COUNT];
    if (parse_keywords("Kernel.batched", args, nargs, kwnames,
                       KW(OUT) | KW(STREAM) | KW(PARAMS) | KW(ENTRY_PARAMS) | KW(ACCUMULATE), slots))
        return NULL;
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "kernel_launch_batched() takes the kernel first");
        return NULL;
    }
    PyObject *kernel = args[0];
    kernel_spec_t spec;
    if (read_kernel_spec(kernel, &spec) || missing(lib.ew_kernel_launch_batched, name))
        return NULL;
    const int n_in = spec.n_inputs, n_out = spec.ko.n_arrays;
    int reduction = -1; /* the reduction's index among the kernel's outputs */
    for (int k = 0; k < spec.ko.n && spec.ko.n_scalars; k++)
        if (spec.ko.reduce[k])
            reduction = k;
    int accumulate = slots[KW_ACCUMULATE] == Py_None ? 0 : PyObject_IsTrue(slots[KW_ACCUMULATE]);
    if (accumulate < 0)
        return NULL;
    if (accumulate && reduction < 0) {
        PyErr_SetString(PyExc_TypeError, "accumulate= is for a kernel with a reduction output");
        return NULL;
    }
    if (nargs - 1 != n_in) {
        PyErr_Format(PyExc_TypeError, "the kernel takes %d input lists, %zd given", n_in, nargs - 1);
        return NULL;
    }
    PyObject *entry_params_obj = slots[KW_ENTRY_PARAMS];
    double params[8];
    if (entry_params_obj != Py_None) {
        Py_ssize_t given = slots[KW_PARAMS] == Py_None ? 0 : PyObject_Size(slots[KW_PARAMS]);
        if (given < 0)
            return NULL;
        if (given) {
            PyErr_SetString(PyExc_TypeError,
                            "give params= (every entry's) or entry_params= (each entry's own), not both");
            return NULL;
        }
    } else if (read_params(slots[KW_PARAMS], spec.n_params, params)) {
        return NULL;
    }
    ew_kernel_t k_raw;
    if (live_pointer(kernel, "kernel", (void **)&k_raw))
        return NULL;

    /* Every object below is owned by the call; the arrays are borrowed from the tuples. */
    PyObject *lists[MAX_INPUTS] = {NULL}, *outs[1 + MORE_ARRAYS] = {NULL}, *results[1 + MORE_ARRAYS] = {NULL};
    PyObject *scalars = NULL, *scalar_results = NULL; /* the reduction's: given, and as returned */
    PyObject *handle_obj = NULL, *answer = NULL;
    int64_t *counts = NULL;
    void **pointers = NULL;
    operand_t entry_params;
    int entry_params_open = 0;
    for (int k = 0; k < n_in; k++)
        if (!(lists[k] = list_arg(args[1 + k], KERNEL_INPUTS[k])))
            goto done;
    const Py_ssize_t count = PyTuple_Size(lists[0]);
    for (int k = 1; k < n_in; k++)
        if (PyTuple_Size(lists[k]) != count) {
            PyErr_Format(PyExc_ValueError, "%s has %zd entries but in0 has %zd", KERNEL_INPUTS[k],
                         PyTuple_Size(lists[k]), count);
            goto done;
        }
    /* out: a list (ew_kernel_create's kernel, named "out"), or a list per output ("out[k]"): the arrays'
     * (out_names, array_dtype: the arrays' in order) and the reduction's scalars'. */
    const char *out_names[1 + MORE_ARRAYS] = {"out"};
    int array_dtype[1 + MORE_ARRAYS] = {spec.ko.dtype[0]};
    for (int k = 0, a = 0; spec.of_outputs && k < spec.ko.n; k++)
        if (k != reduction) {
            out_names[a] = KERNEL_OUTPUTS[k];
            array_dtype[a++] = spec.ko.dtype[k];
        }
    PyObject *out_obj = slots[KW_OUT];
    if (accumulate && out_obj == Py_None) {
        PyErr_SetString(PyExc_TypeError, "accumulate=True needs out= with the scalars to fold into");
        goto done;
    }
    if (spec.of_outputs && out_obj != Py_None) {
        if (!(PyTuple_Check(out_obj) || PyList_Check(out_obj)) || PySequence_Size(out_obj) != spec.ko.n) {
            PyErr_Format(PyExc_TypeError,
                         "out= of this kernel is a tuple of %d lists, one per output in its order (a "
                         "reduction's of scalars), any of them None",
                         spec.ko.n);
            goto done;
        }
        for (int k = 0, a = 0; k < spec.ko.n; k++) {
            PyObject *item = PySequence_GetItem(out_obj, k), **into = k == reduction ? &scalars : &outs[a];
            a += k != reduction;
            if (!item)
                goto done;
            if (item != Py_None)
                *into = list_arg(item, KERNEL_OUTPUTS[k]);
            Py_DECREF(item);
            if (item != Py_None && !*into)
                goto done;
        }
    } else if (out_obj != Py_None && !(outs[0] = list_arg(out_obj, "out"))) {
        goto done;
    }
    if (accumulate && !scalars) {
        PyErr_Format(PyExc_TypeError, "accumulate=True needs out[%d]: the scalars to fold into", reduction);
        goto done;
    }
    if (scalars && PyTuple_Size(scalars) != count) {
        PyErr_Format(PyExc_ValueError, "%s has %zd entries but in0 has %zd", KERNEL_OUTPUTS[reduction],
                     PyTuple_Size(scalars), count);
        goto done;
    }
    for (int a = 0; a < n_out; a++)
        if (outs[a] && PyTuple_Size(outs[a]) != count) {
            PyErr_Format(PyExc_ValueError, "%s has %zd entries but in0 has %zd", out_names[a],
                         PyTuple_Size(outs[a]), count);
            goto done;
        }
    for (int a = 0; a < n_out; a++)
        if (!(results[a] = PyList_New(count)))
            goto done;
    if (reduction >= 0 && !(scalar_results = PyList_New(count)))
        goto done;
    counts = PyMem_Malloc(sizeof(int64_t) * (size_t)(count ? count : 1));
    /* the arrays' columns, the inputs', then the scalars' */
    pointers = PyMem_Malloc(sizeof(void *) * (size_t)(count ? count : 1) * (size_t)(n_out + n_in + 1));
    if (!counts || !pointers) {
        PyErr_NoMemory();
        goto done;
    }
    if (entry_params_obj != Py_None) {
        if (operand_open(&entry_params, entry_params_obj, "entry_params", -1, 0, 0))
            goto done;
        entry_params_open = 1;
    }
    if (!(handle_obj = PyObject_GetAttr(kernel, s_handle_attr)))
        goto done;

    operand_t in[MAX_INPUTS], out[1 + MORE_ARRAYS], scalar;
    intptr_t stream = 0;
    int device = -1;
    for (Py_ssize_t i = 0; i < count; i++) {
        int opened = 0, ok = 0, out_open[1 + MORE_ARRAYS] = {0}, scalar_open = 0;
        PyObject *given[1 + MORE_ARRAYS], *made[1 + MORE_ARRAYS] = {NULL}, *scalar_made = NULL;
        operand_t *ops[1 + MORE_ARRAYS + MAX_INPUTS + 1] = {NULL}; /* the outputs, the inputs, entry_params */
        for (; opened < n_in; opened++) {
            if (operand_open(&in[opened], PyTuple_GetItem(lists[opened], i), KERNEL_INPUTS[opened], i, 0, 0))
                goto entry_done;
            ops[n_out + opened] = &in[opened];
        }
        for (int a = 0; a < n_out; a++) {
            given[a] = outs[a] ? PyTuple_GetItem(outs[a], i) : Py_None;
            if (given[a] == Py_None)
                continue;
            if (operand_open(&out[a], given[a], out_names[a], i, 0, 1))
                goto entry_done;
            out_open[a] = 1;
            ops[a] = &out[a];
        }
        ops[n_out + n_in] = entry_params_open ? &entry_params : NULL;
        if (i == 0 && settle_list(slots[KW_STREAM], ops, n_out + n_in + 1, ops[n_out + n_in], count,
                                  spec.n_params, handle_obj, &stream, &device))
            goto entry_done;
        for (int k = 0; k < n_out + n_in; k++)
            if (ops[k] && (check_stream(ops[k], slots[KW_STREAM], stream) || operand_export(ops[k], stream)))
                goto entry_done;
        if (check_kernel_entry(ops, n_out, n_in, array_dtype, spec.in_dtype, device))
            goto entry_done;
        for (int a = 0; a < n_out; a++) {
            if (out_open[a])
                continue;
            if (!(made[a] = allocate_output(&out[a], &in[0], in[0].ndim, in[0].shape, array_dtype[a],
                                            out_names[a], i, stream)))
                goto entry_done;
            out_open[a] = 1;
        }
        /* the entry's scalar, as the flat call takes it: given, else made of shape () */
        if (reduction >= 0) {
            PyObject *obj = scalars ? PyTuple_GetItem(scalars, i) : Py_None;
            const int dtype = spec.ko.dtype[reduction];
            if (obj != Py_None) {
                if (operand_open(&scalar, obj, KERNEL_OUTPUTS[reduction], i, 0, 1))
                    goto entry_done;
                scalar_open = 1;
                if (check_stream(&scalar, slots[KW_STREAM], stream) || operand_export(&scalar, stream) ||
                    check_scalar(&scalar, dtype) || check_device(&scalar, device))
                    goto entry_done;
            } else {
                int64_t none[1] = {0};
                if (!(scalar_made = allocate_output(&scalar, &in[0], 0, none, dtype,
                                                    KERNEL_OUTPUTS[reduction], i, stream)))
                    goto entry_done;
                scalar_open = 1;
            }
            pointers[(n_out + n_in) * count + i] = scalar.data;
            PyList_SetItem(scalar_results, i, scalar_made ? scalar_made : Py_NewRef(obj));
            scalar_made = NULL;
        }
        counts[i] = in[0].count;
        for (int a = 0; a < n_out; a++) {
            pointers[a * count + i] = out[a].data;
            PyList_SetItem(results[a], i, made[a] ? made[a] : Py_NewRef(given[a]));
            made[a] = NULL;
        }
        for (int k = 0; k < n_in; k++)
            pointers[(n_out + k) * count + i] = in[k].data;
        ok = 1;
    entry_done:
        for (int a = 0; a < n_out; a++) {
            if (out_open[a])
                operand_release(&out[a]);
            Py_XDECREF(made[a]);
        }
        if (scalar_open)
            operand_release(&scalar);
        Py_XDECREF(scalar_made);
        for (int k = 0; k < opened; k++)
            operand_release(&in[k]);
        if (!ok)
            goto done;
    }
    if (!count) {
        operand_t *ops[1] = {entry_params_open ? &entry_params : NULL};
        if (settle_list(slots[KW_STREAM], ops, 1, ops[0], 0, spec.n_params, handle_obj, &stream, &device))
            goto done;
    }

    void *const *out_arrays[EW_KERNEL_MAX_OUTPUTS]; /* in the kernel's order: arrays and the scalars */
    const void *const *in_arrays[MAX_INPUTS];
    const int n_given = n_out + (reduction >= 0);
    for (int k = 0, a = 0; k < n_given; k++)
        out_arrays[k] = pointers + (k == reduction ? n_out + n_in : a++) * count;
    for (int k = 0; k < n_in; k++)
        in_arrays[k] = (const void *const *)(pointers + (n_out + k) * count);
    const double *per_launch = entry_params_open || !spec.n_params ? NULL : params;
    const double *per_entry = entry_params_open ? (const double *)entry_params.data : NULL;
    const int mode = accumulate ? EW_REDUCE_ACCUMULATE : EW_REDUCE_OVERWRITE;
    int status;
    if (recorder) {
        PyObject *out_tuple = PyTuple_New(n_given), *in_tuple = PyTuple_New(n_in);
        for (int a = 0; out_tuple && a < n_given; a++)
            PyTuple_SetItem(out_tuple, a, pointer_tuple(out_arrays[a], count));
        for (int k = 0; in_tuple && k < n_in; k++)
            PyTuple_SetItem(in_tuple, k, pointer_tuple((void *const *)in_arrays[k], count));
        /* params as the values passed (() for none), None when entry_params stands in for them. */
        PyObject *param_values = entry_params_open ? Py_NewRef(Py_None) : PyTuple_New(spec.n_params);
        for (Py_ssize_t k = 0; !entry_params_open && param_values && k < spec.n_params; k++)
            PyTuple_SetItem(param_values, k, PyFloat_FromDouble(params[k]));
        PyObject *rest = Py_BuildValue("(NnNNiNNNn)", pointer_object(k_raw), count,
                                       int64_tuple((int)count, counts), out_tuple, mode, in_tuple,
                                       param_values, pointer_object(per_entry), (Py_ssize_t)stream);
        status = record(name, PyTuple_New(0), rest);
    } else {
        status = lib.ew_kernel_launch_batched(k_raw, count, counts, out_arrays, (ew_reduce_mode_t)mode,
                                              in_arrays, per_launch, per_entry, (ew_stream_t)stream);
    }
    if (finish(status, name))
        goto done;
    if (spec.of_outputs) {
        if (!(answer = PyTuple_New(n_given)))
            goto done;
        for (int k = 0, a = 0; k < n_given; k++) {
            PyObject **item = k == reduction ? &scalar_results : &results[a++];
            PyTuple_SetItem(answer, k, *item);
            *item = NULL;
        }
    } else {
        answer = results[0];
        results[0] = NULL;
    }
done:
    for (int k = 0; k < MAX_INPUTS; k++)
        Py_XDECREF(lists[k]);
    for (int a = 0; a < 1 + MORE_ARRAYS; a++) {
        Py_XDECREF(outs[a]);
        Py_XDECREF(results[a]);
    }
    Py_XDECREF(scalars);
    Py_XDECREF(scalar_results);
    if (entry_params_open)
        operand_release(&entry_params);
    Py_XDECREF(handle_obj);
    PyMem_Free(counts);
    PyMem_Free(pointers);
    return answer;
}

/* A kernel's input dtypes from a sequence of ints: the first 16 in values (a kernel takes fewer; the
 * library refuses more), how many in *n. 0, or -1 with the exception set. */
static int kernel_dtypes(PyObject *in_dtypes, ew_dtype_t values[16], Py_ssize_t *n)
{
    PyObject *dtypes = PySequence_Tuple(in_dtypes);
    if (!dtypes)
        return -1;
    *n = PyTuple_Size(dtypes);
    for (Py_ssize_t k = 0; k < *n && k < 16; k++)
        values[k] = (ew_dtype_t)PyLong_AsLong(PyTuple_GetItem(dtypes, k));
    Py_DECREF(dtypes);
    return PyErr_Occurred() ? -1 : 0;
}

/* The outputs as the recorder shows them: ((dtype, reduction), ...). */
static PyObject *outputs_tuple(const ew_kernel_output_t *values, Py_ssize_t n)
{
    PyObject *tuple = PyTuple_New(n < 16 ? n : 16);
    for (Py_ssize_t k = 0; tuple && k < n && k < 16; k++)
        PyTuple_SetItem(tuple, k, Py_BuildValue("(ii)", (int)values[k].dtype, (int)values[k].reduce));
    return tuple;
}

/* kernel_create(handle, source, out, in_dtypes, n_params): out an int, ew_kernel_create of that output dtype;
 * else the Kernel's _outputs, ((dtype, reduction), ...), ew_kernel_create_outputs of those outputs. */
static PyObject *py_kernel_create(PyObject *self, PyObject *args)
{
    PyObject *handle_obj, *out, *in_dtypes;
    const char *source;
    int out_dtype = 0, n_params;
    if (!PyArg_ParseTuple(args, "OyOOi", &handle_obj, &source, &out, &in_dtypes, &n_params))
        return NULL;
    ew_kernel_output_t outputs[16];
    ew_dtype_t values[16];
    Py_ssize_t n, n_outputs;
    if (kernel_outputs_arg(out, &out_dtype, outputs, &n_outputs) || kernel_dtypes(in_dtypes, values, &n))
        return NULL;
    ew_handle_t handle;
    if (live_pointer(handle_obj, "handle", (void **)&handle))
        return NULL;
    const int of_outputs = !PyLong_Check(out);
    const char *name = of_outputs ? "ew_kernel_create_outputs" : "ew_kernel_create";
    if (of_outputs && missing(lib.ew_kernel_create_outputs, name))
        return NULL;
    ew_kernel_t kernel = NULL;
    int status;
    if (recorder) {
        PyObject *list = PyTuple_New(n < 16 ? n : 16);
        for (Py_ssize_t k = 0; list && k < n && k < 16; k++)
            PyTuple_SetItem(list, k, PyLong_FromLong(values[k]));
        void *made = NULL;
        PyObject *rest = of_outputs ? Py_BuildValue("(yNnNi)", source, outputs_tuple(outputs, n_outputs), n, list,
                                                    n_params)
                                    : Py_BuildValue("(yinNi)", source, out_dtype, n, list, n_params);
        status = record_making(name, Py_BuildValue("(N)", pointer_object(handle)), rest, &made);
        kernel = made;
    } else if (of_outputs) {
        status = lib.ew_kernel_create_outputs(handle, source, (int)n_outputs, n_outputs <= 16 ? outputs : NULL, (int)n,
                                              n <= 16 ? values : NULL, n_params, &kernel);
    } else {
        status = lib.ew_kernel_create(handle, source, out_dtype, (int)n, n <= 16 ? values : NULL, n_params, &kernel);
    }
    if (finish(status, name))
        return NULL;
    return pointer_object(kernel);
}

/* kernel_cache_fill(source, out, in_dtypes, n_params, arch): ew_kernel_cache_fill, no handle; out as
 * kernel_create takes it, a sequence of outputs giving ew_kernel_cache_fill_outputs. */
static PyObject *py_kernel_cache_fill(PyObject *self, PyObject *args)
{
    PyObject *out, *in_dtypes;
    const char *source, *arch;
    int out_dtype = 0, n_params;
    if (!PyArg_ParseTuple(args, "yOOiy", &source, &out, &in_dtypes, &n_params, &arch))
        return NULL;
    ew_kernel_output_t outputs[16];
    ew_dtype_t values[16];
    Py_ssize_t n, n_outputs;
    if (kernel_outputs_arg(out, &out_dtype, outputs, &n_outputs) || kernel_dtypes(in_dtypes, values, &n))
        return NULL;
    const int of_outputs = !PyLong_Check(out);
    const char *name = of_outputs ? "ew_kernel_cache_fill_outputs" : "ew_kernel_cache_fill";
    if (absent(of_outputs ? (void *)lib.ew_kernel_cache_fill_outputs : (void *)lib.ew_kernel_cache_fill, name))
        return NULL;
    ew_status_t status =
        of_outputs ? lib.ew_kernel_cache_fill_outputs(source, (int)n_outputs, n_outputs <= 16 ? outputs : NULL, (int)n,
                                                      n <= 16 ? values : NULL, n_params, arch)
                   : lib.ew_kernel_cache_fill(source, out_dtype, (int)n, n <= 16 ? values : NULL, n_params, arch);
    if (finish(status, name))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_kernel_destroy(PyObject *self, PyObject *arg)
{
    void *kernel;
    if (pointer_arg(arg, &kernel))
        return NULL;
    int status = recorder ? record("ew_kernel_destroy", PyTuple_New(0), Py_BuildValue("(N)", pointer_object(kernel)))
                          : (int)lib.ew_kernel_destroy(kernel);
    if (finish(status, "ew_kernel_destroy"))
        return NULL;
    Py_RETURN_NONE;
}

/* ---- handles and the small calls ---- */

static PyObject *py_handle_create(PyObject *self, PyObject *arg)
{
    int device;
    ew_handle_t handle = NULL;
    if (int_arg(arg, &device) || finish(lib.ew_handle_create(device, &handle), "ew_handle_create"))
        return NULL;
    return PyLong_FromVoidPtr(handle);
}

static PyObject *py_handle_destroy(PyObject *self, PyObject *arg)
{
    void *handle;
    if (pointer_arg(arg, &handle))
        return NULL;
    for (int d = 0; d < MAX_DEVICES; d++)
        if (handle && default_handles[d] == handle) {
            PyErr_SetString(PyExc_ValueError, "a default handle lives as long as the process");
            return NULL;
        }
    if (finish(lib.ew_handle_destroy(handle), "ew_handle_destroy"))
        return NULL;
    Py_RETURN_NONE;
}

/* handle_get(handle, what): what 1 SM count, 2 max threads per SM (Handle keeps its own device). */
static PyObject *py_handle_get(PyObject *self, PyObject *args)
{
    PyObject *raw;
    int what;
    if (!PyArg_ParseTuple(args, "Oi", &raw, &what))
        return NULL;
    void *handle;
    if (pointer_arg(raw, &handle))
        return NULL;
    int value = 0;
    const char *name = what == 1 ? "ew_handle_get_sm_count" : "ew_handle_get_max_threads_per_sm";
    int status = what == 1 ? lib.ew_handle_get_sm_count(handle, &value)
                           : lib.ew_handle_get_max_threads_per_sm(handle, &value);
    if (finish(status, name))
        return NULL;
    return PyLong_FromLong(value);
}

static PyObject *py_default_handle(PyObject *self, PyObject *arg)
{
    int device;
    ew_handle_t handle;
    if (int_arg(arg, &device) || default_handle(device, &handle))
        return NULL;
    return PyLong_FromVoidPtr(handle);
}

static PyObject *py_as_dtype(PyObject *self, PyObject *arg)
{
    int dtype = as_dtype(arg);
    return dtype ? PyLong_FromLong(dtype) : NULL;
}

static PyObject *py_version(PyObject *self, PyObject *unused)
{
    return PyLong_FromUnsignedLong(lib.ew_get_version());
}

static PyObject *py_last_error_message(PyObject *self, PyObject *unused)
{
    return PyUnicode_DecodeUTF8(lib.ew_get_last_error_message(), (Py_ssize_t)strlen(lib.ew_get_last_error_message()),
                                "replace");
}

static PyObject *py_status_string(PyObject *self, PyObject *arg)
{
    int status;
    return int_arg(arg, &status) ? NULL : PyUnicode_FromString(lib.ew_status_string(status));
}

static PyObject *py_dtype_name(PyObject *self, PyObject *arg)
{
    int dtype = as_dtype(arg);
    return dtype ? PyUnicode_FromString(lib.ew_dtype_name(dtype)) : NULL;
}

static PyObject *py_dtype_size(PyObject *self, PyObject *arg)
{
    int dtype = as_dtype(arg);
    return dtype ? PyLong_FromSize_t(lib.ew_dtype_size(dtype)) : NULL;
}

/* ew_dtype_bits (1.2), else 8 * ew_dtype_size: a 1.1 library has no dtype narrower than a byte. */
static PyObject *py_dtype_bits(PyObject *self, PyObject *arg)
{
    int dtype = as_dtype(arg);
    if (!dtype)
        return NULL;
    return PyLong_FromSize_t(lib.ew_dtype_bits ? lib.ew_dtype_bits(dtype) : 8 * lib.ew_dtype_size(dtype));
}

/* ew_kernel_cache_get_count's counters as a dict, by the names of ew_kernel_cache_counter_t. */
static PyObject *py_kernel_cache_counts(PyObject *self, PyObject *unused)
{
    static const char *const names[EW_KERNEL_CACHE_COUNTERS] = {"memory_hits", "disk_hits", "compiles",
                                                                "store_failures"};
    if (absent(lib.ew_kernel_cache_get_count, "ew_kernel_cache_get_count"))
        return NULL;
    PyObject *counts = PyDict_New();
    for (int k = 0; counts != NULL && k < EW_KERNEL_CACHE_COUNTERS; ++k) {
        uint64_t count = 0;
        PyObject *value = NULL;
        if (lib.ew_kernel_cache_get_count((ew_kernel_cache_counter_t)k, &count) != EW_SUCCESS)
            PyErr_SetString(PyExc_RuntimeError, lib.ew_get_last_error_message());
        else
            value = PyLong_FromUnsignedLongLong(count);
        if (value == NULL || PyDict_SetItemString(counts, names[k], value) != 0)
            Py_CLEAR(counts);
        Py_XDECREF(value);
    }
    return counts;
}

static PyObject *py_is_supported(PyObject *self, PyObject *args)
{
    int op, out, in;
    if (!PyArg_ParseTuple(args, "iii", &op, &out, &in))
        return NULL;
    return PyBool_FromLong(lib.ew_is_supported(op, out, in));
}

/* describe(obj, dtype=None, writable=False, stream=None): how an array is read, for tests and
 * debugging: (dtype, shape, strides in elements, pointer, stream named or None, device or None). */
static PyObject *py_describe(PyObject *self, PyObject *args)
{
    PyObject *obj, *dtype_obj = Py_None, *stream_obj = Py_None;
    int writable = 0;
    if (!PyArg_ParseTuple(args, "O|OpO", &obj, &dtype_obj, &writable, &stream_obj))
        return NULL;
    int requested = optional_dtype(dtype_obj);
    if (PyErr_Occurred())
        return NULL;
    operand_t op;
    operand_t *ops[1] = {&op};
    intptr_t stream;
    PyObject *result = NULL;
    if (operand_open(&op, obj, writable ? "out" : "x", -1, requested, writable))
        return NULL;
    if (!resolve_stream(stream_obj, ops, 1, &stream) && !operand_export(&op, stream)) {
        PyObject *named = op.has_stream ? PyLong_FromVoidPtr((void *)op.stream) : Py_NewRef(Py_None);
        PyObject *device = op.device >= 0 ? PyLong_FromLong(op.device) : Py_NewRef(Py_None);
        result = Py_BuildValue("(iNNNNN)", op.dtype, operand_shape(&op), int64_tuple(op.ndim, op.strides),
                               pointer_object(op.data), named, device);
    }
    operand_release(&op);
    return result;
}

/* resolve_stream(stream, *arrays): the stream a call on these arrays queues on. */
static PyObject *py_resolve_stream(PyObject *self, PyObject *args)
{
    Py_ssize_t n = PyTuple_Size(args);
    if (n < 1 || n > 9) {
        PyErr_SetString(PyExc_TypeError, "resolve_stream(stream, *arrays): 0 to 8 arrays");
        return NULL;
    }
    operand_t ops[8];
    operand_t *list[8];
    int opened = 0;
    intptr_t stream;
    PyObject *result = NULL;
    for (; opened < n - 1; opened++) {
        if (operand_open(&ops[opened], PyTuple_GetItem(args, opened + 1), "x", opened, 0, 0))
            goto done;
        list[opened] = &ops[opened];
    }
    if (!resolve_stream(PyTuple_GetItem(args, 0), list, opened, &stream))
        result = PyLong_FromVoidPtr((void *)stream);
done:
    for (int k = 0; k < opened; k++)
        operand_release(&ops[k]);
    return result;
}

static PyObject *py_set_recorder(PyObject *self, PyObject *arg)
{
    PyObject *old = recorder;
    recorder = arg == Py_None ? NULL : Py_NewRef(arg);
    Py_XDECREF(old);
    Py_RETURN_NONE;
}

static PyObject *py_configure(PyObject *self, PyObject *args)
{
    PyObject *error, *allocate;
    if (!PyArg_ParseTuple(args, "OO", &error, &allocate))
        return NULL;
    Py_XDECREF(error_class);
    Py_XDECREF(allocate_fn);
    error_class = Py_NewRef(error);
    allocate_fn = Py_NewRef(allocate);
    Py_RETURN_NONE;
}

/* load(path): dlopen the library and bind its functions. OSError when it cannot be loaded, ImportError
 * when it is not a libelementwise 1.x with every call of 1.1. */
static PyObject *py_load(PyObject *self, PyObject *arg)
{
    PyObject *encoded = PyUnicode_EncodeFSDefault(arg);
    if (!encoded)
        return NULL;
    const char *path = PyBytes_AsString(encoded);
    void *handle = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!handle) {
        if (path)
            PyErr_Format(PyExc_OSError, "%s", dlerror());
        Py_DECREF(encoded);
        return NULL;
    }
#define BIND(fn)                                                                                            \
    lib.fn = (__typeof__(lib.fn))dlsym(handle, #fn);                                                        \
    if (!lib.fn) {                                                                                          \
        PyErr_Format(PyExc_ImportError, "%s has no %s: not a libelementwise 1.1 or later", path, #fn);     \
        memset(&lib, 0, sizeof lib);                                                                         \
        dlclose(handle);                                                                                    \
        Py_DECREF(encoded);                                                                                 \
        return NULL;                                                                                        \
    }
    LIBRARY_FUNCTIONS(BIND)
#undef BIND
#define BIND_OPTIONAL(fn) lib.fn = (__typeof__(lib.fn))dlsym(handle, #fn);
    SCALED_FUNCTIONS(BIND_OPTIONAL)
#undef BIND_OPTIONAL
    Py_DECREF(encoded);
    if (lib.ew_get_version() / 10000 != EW_VERSION_MAJOR) {
        unsigned version = lib.ew_get_version();
        memset(&lib, 0, sizeof lib);
        dlclose(handle);
        return PyErr_Format(PyExc_ImportError, "%U is version %u; this binding needs %d.x", arg, version,
                            EW_VERSION_MAJOR);
    }
    for (int d = 1; d <= N_DTYPES; d++) {
        /* The block dtypes are a byte an array element here, whatever the library (1.1 knows neither). */
        dtype_sizes[d] = (uint8_t)(d == EW_F8E8M0 || d == EW_F4E2M1 ? 1 : lib.ew_dtype_size((ew_dtype_t)d));
        if (d != EW_F4E2M1 && dtype_sizes[d] <= 8) /* F4E2M1 is DLPack's 4 bits x 2 lanes, read_dltensor's */
            dlpack_dtypes[DLPACK_CODE[d]][dtype_sizes[d]] = (uint8_t)d;
    }
    lib_handle = handle;
    return PyLong_FromUnsignedLong(lib.ew_get_version());
}

#define FAST(name, doc) {#name, (PyCFunction)(void (*)(void))py_##name, METH_FASTCALL | METH_KEYWORDS, doc}

static PyMethodDef methods[] = {
    FAST(add, "add(a, b, *, out=None, stream=None, dtype=None, handle=None)"),
    FAST(mul, "mul(a, b, *, out=None, stream=None, dtype=None, handle=None)"),
    FAST(relu, "relu(x, *, out=None, stream=None, dtype=None, handle=None)"),
    FAST(cast, "cast(x, dtype, *, out=None, stream=None, in_dtype=None, handle=None)"),
    FAST(quantize, "quantize(x, dtype, scale, *, amax=None, amax_mode='overwrite', out=None, stream=None, "
                   "in_dtype=None, handle=None)\n\nout = saturate(float(x) * scale) in dtype (float8_e4m3fn or "
                   "float8_e5m2; ew_quantize). scale: a float32 device array of one element, read on the GPU; amax, "
                   "one likewise, receives max |x| in the same pass ('accumulate': the max with its old value). "
                   "out=None: made as cast makes it."),
    FAST(dequantize, "dequantize(q, dtype, scale_inv, *, out=None, stream=None, in_dtype=None, handle=None)\n\n"
                     "out = float(q) * scale_inv converted to dtype (f16, bf16, f32 or f64; ew_dequantize). scale_inv: "
                     "a float32 device array of one element. out=None: made as cast makes it."),
    FAST(amax, "amax(x, *, out=None, accumulate=False, stream=None, handle=None)\n\nmax |float(x)| into out, a "
               "float32 device array of one element (ew_amax); out=None: a new shape () float32 array on x's "
               "device. accumulate=True (out required) keeps the max with out's old value. x must be contiguous."),
    FAST(quantize_blocks,
         "quantize_blocks(x, dtype=None, *, format='mx', round_up=False, swizzled=False, global_scale=None, out=None, "
         "scales=None, stream=None, in_dtype=None, handle=None) -> (out, scales)\n\nQuantizes x (f16, bf16 or f32; rows x "
         "cols: rows the product of the leading dimensions, cols the last) in blocks along its rows, one scale a block "
         "(ew_quantize_blocks). format='mx': blocks of 32, elements float8_e4m3fn, float8_e5m2 or float4_e2m1fn_x2, "
         "float8_e8m0fnu scales (the OCP floor, or round_up=True for RCEIL); format='nvfp4': blocks of 16, "
         "float4_e2m1fn_x2 elements, float8_e4m3fn scales, times global_scale (a float32 device array of one element, "
         "or None for 1). float4 packs two elements a byte: its arrays' last dimension is cols / 2. swizzled=True "
         "writes the scales in cuBLASLt's tiled layout. out=None and scales=None are made on x's device "
         "(block_scales_shape's shape for the scales); uint8 scales are the format's, a uint8 out NVFP4's float4 or what "
         "dtype= names."),
    FAST(dequantize_blocks,
         "dequantize_blocks(q, scales, dtype=None, *, format='mx', swizzled=False, global_scale=None, out=None, "
         "stream=None, in_dtype=None, handle=None)\n\nout = float(q) * the block's scale (NVFP4: times global_scale) "
         "converted to dtype (f16, bf16 or f32; ew_dequantize_blocks). q as quantize_blocks writes it (a uint8 q: "
         "in_dtype= names its elements, NVFP4's are float4); scales any contiguous array of the right count. out=None: "
         "q's shape in elements, on q's device."),
    FAST(block_scales_shape,
         "block_scales_shape(shape, format='mx', *, swizzled=False) -> (scale_rows, scale_cols)\n\nThe shape of the "
         "block scales of data of `shape` (in elements; rows the product of the leading dimensions, cols the last): "
         "(rows, cols / block), or swizzled (rows rounded up to 128, cols / block to 4). ew_block_scales_shape: no GPU."),
    FAST(scale_add, "scale_add(alpha, a, b, *, out=None, stream=None, dtype=None, handle=None)"),
    FAST(unary, "unary(op, x, *, out=None, stream=None, dtype=None, handle=None)"),
    FAST(binary, "binary(op, a, b, *, out=None, stream=None, dtype=None, handle=None)"),
    FAST(add_batched, "add_batched(as_, bs, *, outs=None, stream=None, dtype=None, handle=None)"),
    FAST(mul_batched, "mul_batched(as_, bs, *, outs=None, stream=None, dtype=None, handle=None)"),
    FAST(relu_batched, "relu_batched(xs, *, outs=None, stream=None, dtype=None, handle=None)"),
    FAST(cast_batched, "cast_batched(xs, dtype, *, outs=None, stream=None, in_dtype=None, handle=None)"),
    FAST(scale_add_batched, "scale_add_batched(alpha, as_, bs, *, outs=None, stream=None, dtype=None, handle=None)"),
    FAST(unary_batched, "unary_batched(op, xs, *, outs=None, stream=None, dtype=None, handle=None)"),
    FAST(binary_batched, "binary_batched(op, as_, bs, *, outs=None, stream=None, dtype=None, handle=None)"),
    FAST(quantize_batched,
         "quantize_batched(xs, dtype, scale, *, amax=None, amax_mode='overwrite', outs=None, stream=None, "
         "in_dtype=None, handle=None) -> outs\n\nquantize over a list in one call (ew_quantize_batched): outs[i] = "
         "saturate(float(xs[i]) * scale[i]) in dtype. scale: a contiguous float32 device array of len(xs) elements, "
         "entry i's at scale[i], read on the GPU. amax: None; a float32 device array of len(xs) elements (entry i's "
         "max |x| into amax[i]); or of one element, shared (the whole list's max |x|); overwritten (set to 0 before "
         "any entry folds) or, amax_mode='accumulate', folded into. Entries contiguous, of one dtype pair. outs=None: "
         "made as cast_batched makes them. Returns outs, as quantize returns out."),
    FAST(dequantize_batched,
         "dequantize_batched(qs, dtype, scale_inv, *, outs=None, stream=None, in_dtype=None, handle=None) -> outs\n\n"
         "dequantize over a list in one call (ew_dequantize_batched): outs[i] = float(qs[i]) * scale_inv[i] converted "
         "to dtype. scale_inv: a contiguous float32 device array of len(qs) elements. outs=None: made as cast_batched "
         "makes them."),
    FAST(amax_batched,
         "amax_batched(xs, *, out=None, accumulate=False, stream=None, handle=None) -> out\n\nmax |float(xs[i])| of "
         "each entry in one call (ew_amax_batched): out a float32 device array of len(xs) elements (entry i's at "
         "out[i]) or of one element (shared: the whole list's max). out=None: a new float32 array of shape "
         "(len(xs),) like xs[0]. accumulate=True (out required) keeps the max with out's old values. Entries "
         "contiguous, of one dtype. Returns out."),
    FAST(kernel_launch, "kernel_launch(kernel, *inputs, out=None, params=(), stream=None)"),
    FAST(kernel_launch_batched,
         "kernel_launch_batched(kernel, *input_lists, out=None, params=(), entry_params=None, "
         "stream=None, accumulate=False)\n\nThe kernel over tensor lists in one call "
         "(ew_kernel_launch_batched): Kernel.batched."),
    {"kernel_create", py_kernel_create, METH_VARARGS,
     "kernel_create(handle, source, out, in_dtypes, n_params): out an out dtype, or ((dtype, reduction), ...)"},
    {"kernel_destroy", py_kernel_destroy, METH_O, "kernel_destroy(kernel)"},
    {"handle_create", py_handle_create, METH_O, "handle_create(device) -> the raw handle"},
    {"handle_destroy", py_handle_destroy, METH_O, "handle_destroy(raw)"},
    {"handle_get", py_handle_get, METH_VARARGS, "handle_get(raw, what): 1 SM count, 2 threads per SM"},
    {"default_handle", py_default_handle, METH_O, "default_handle(device) -> the raw default handle of device"},
    {"as_dtype", py_as_dtype, METH_O, "as_dtype(value) -> the dtype's int"},
    {"version", py_version, METH_NOARGS, "ew_get_version()"},
    {"kernel_cache_counts", py_kernel_cache_counts, METH_NOARGS, "ew_kernel_cache_get_count() of every counter"},
    {"kernel_cache_fill", py_kernel_cache_fill, METH_VARARGS,
     "ew_kernel_cache_fill(source, out, in_dtypes, n_params, arch), or with out ((dtype, reduction), ...) its "
     "_outputs form"},
    {"last_error_message", py_last_error_message, METH_NOARGS, "ew_get_last_error_message()"},
    {"status_string", py_status_string, METH_O, "ew_status_string(status)"},
    {"dtype_name", py_dtype_name, METH_O, "ew_dtype_name(dtype)"},
    {"dtype_size", py_dtype_size, METH_O, "ew_dtype_size(dtype)"},
    {"dtype_bits", py_dtype_bits, METH_O, "ew_dtype_bits(dtype)"},
    {"is_supported", py_is_supported, METH_VARARGS, "ew_is_supported(op, out_dtype, in_dtype)"},
    {"describe", py_describe, METH_VARARGS, "describe(obj, dtype=None, writable=False, stream=None)"},
    {"resolve_stream", py_resolve_stream, METH_VARARGS, "resolve_stream(stream, *arrays)"},
    {"set_recorder", py_set_recorder, METH_O, "set_recorder(callable or None): tests"},
    {"configure", py_configure, METH_VARARGS, "configure(ElementwiseError, allocate)"},
    {"load", py_load, METH_O, "load(path) -> the library's version"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_elementwise",
                                    "The compiled half of the elementwise package (see elementwise).", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__elementwise(void)
{
    PyObject **strings[] = {&s_cai, &s_dlpack, &s_dlpack_device, &s_exchange, &s_dtype, &s_name, &s_ptr_attr,
                            &s_device, &s_id, &s_index, &s_cuda_stream, &s_ptr, &s_handle, &s_value, &s_stream_protocol,
                            &s_stream, &s_max_version, &s_copy, &s_typestr, &s_shape, &s_strides, &s_data, &s_mask,
                            &s_version, &s_out_dtype, &s_in_dtypes, &s_n_params, &s_handle_attr, &s_outputs_attr};
    const char *texts[] = {"__cuda_array_interface__", "__dlpack__", "__dlpack_device__", "__dlpack_c_exchange_api__",
                           "dtype", "name", "_ptr", "device", "id", "index", "cuda_stream", "ptr", "handle", "value",
                           "__cuda_stream__", "stream", "max_version", "copy", "typestr", "shape", "strides", "data",
                           "mask", "version", "_out_dtype", "_in_dtypes", "_n_params", "_handle", "_outputs"};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        if (!(*strings[i] = PyUnicode_InternFromString(texts[i])))
            return NULL;
    for (int k = 0; k < KW_COUNT; k++)
        if (!(kw_strings[k] = PyUnicode_InternFromString(KW_NAMES[k])))
            return NULL;
    /* The newest DLPack this reads: 1.x, any minor. */
    if (!(max_version_value = Py_BuildValue("(ii)", DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION)))
        return NULL;
    if (!(empty_tuple = PyTuple_New(0)))
        return NULL;
    /* The header's constants, which the package states nowhere else. */
    PyObject *m = PyModule_Create(&module);
    if (m && (PyModule_AddIntConstant(m, "MAX_DIMS", EW_MAX_DIMS) ||
              PyModule_AddIntConstant(m, "VERSION_MAJOR", EW_VERSION_MAJOR)))
        Py_CLEAR(m);
    return m;
}
