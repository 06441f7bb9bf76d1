/* SPDX-License-Identifier: Apache-2.0 */
/* The public header on its own, with no CUDA include path: compiled as strict C99 and, with -x c++,
 * as C++11 (-pedantic -Wall -Wextra -Werror). It also pins the ABI: the numeric values of the issue
 * and the exact type of every function, so a changed prototype or value fails the build. */
#include <elementwise.h>
#include <elementwise.h> /* include guard */

#ifdef __CUDA_RUNTIME_API_H__
#error "elementwise.h must not pull in CUDA headers"
#endif

/* C99 has no static_assert: a negative array size fails to compile. */
#define EW_CHECK_CAT2(a, b) a##b
#define EW_CHECK_CAT(a, b) EW_CHECK_CAT2(a, b)
#define EW_CHECK(condition) typedef char EW_CHECK_CAT(ew_check_line_, __LINE__)[(condition) ? 1 : -1]

EW_CHECK(EW_VERSION == EW_VERSION_MAJOR * 10000 + EW_VERSION_MINOR * 100 + EW_VERSION_PATCH);
EW_CHECK(EW_VERSION_MAJOR == 1);

EW_CHECK(EW_SUCCESS == 0);
EW_CHECK(EW_ERROR_INVALID_VALUE == 1);
EW_CHECK(EW_ERROR_INVALID_HANDLE == 2);
EW_CHECK(EW_ERROR_NOT_SUPPORTED == 3);
EW_CHECK(EW_ERROR_DEVICE_MISMATCH == 4);
EW_CHECK(EW_ERROR_NO_DEVICE == 5);
EW_CHECK(EW_ERROR_CUDA == 6);
EW_CHECK(EW_ERROR_OUT_OF_MEMORY == 7);

EW_CHECK(EW_BOOL == 1);
EW_CHECK(EW_I8 == 2);
EW_CHECK(EW_U8 == 3);
EW_CHECK(EW_I16 == 4);
EW_CHECK(EW_I32 == 5);
EW_CHECK(EW_I64 == 6);
EW_CHECK(EW_F16 == 7);
EW_CHECK(EW_BF16 == 8);
EW_CHECK(EW_F32 == 9);
EW_CHECK(EW_F64 == 10);
EW_CHECK(EW_F8E4M3 == 11);
EW_CHECK(EW_F8E5M2 == 12);

EW_CHECK(EW_OP_ADD == 1);
EW_CHECK(EW_OP_MUL == 2);
EW_CHECK(EW_OP_RELU == 3);
EW_CHECK(EW_OP_CAST == 4);
EW_CHECK(EW_OP_SCALE_ADD == 5);

/* The enums are int-sized, as a C caller across an FFI expects. */
EW_CHECK(sizeof(ew_status_t) == sizeof(int));
EW_CHECK(sizeof(ew_dtype_t) == sizeof(int));
EW_CHECK(sizeof(ew_op_t) == sizeof(int));

/* Every function with its exact type: initialising a pointer of another type is an error in C++ and,
 * under -Werror, in C. */
struct ew_check_signatures {
    unsigned (*get_version)(void);
    ew_status_t (*handle_create)(int, ew_handle_t *);
    ew_status_t (*handle_destroy)(ew_handle_t);
    ew_status_t (*handle_get_device)(ew_handle_t, int *);
    ew_status_t (*handle_get_sm_count)(ew_handle_t, int *);
    ew_status_t (*handle_get_max_threads_per_sm)(ew_handle_t, int *);
    ew_status_t (*unary)(ew_handle_t, ew_op_t, ew_dtype_t, int64_t, void *, const void *, ew_stream_t);
    ew_status_t (*binary)(ew_handle_t, ew_op_t, ew_dtype_t, int64_t, void *, const void *, const void *,
                          ew_stream_t);
    ew_status_t (*cast)(ew_handle_t, ew_dtype_t, ew_dtype_t, int64_t, void *, const void *, ew_stream_t);
    ew_status_t (*scale_add)(ew_handle_t, ew_dtype_t, double, int64_t, void *, const void *, const void *,
                             ew_stream_t);
    int (*is_supported)(ew_op_t, ew_dtype_t, ew_dtype_t);
    const char *(*status_string)(ew_status_t);
    const char *(*dtype_name)(ew_dtype_t);
    size_t (*dtype_size)(ew_dtype_t);
    const char *(*get_last_error_message)(void);
};

#ifdef __cplusplus
extern "C" {
#endif
/* Declared before its definition so no compiler asks for a prototype. */
struct ew_check_signatures ew_check_all_functions(void);
#ifdef __cplusplus
}
#endif

struct ew_check_signatures ew_check_all_functions(void)
{
    struct ew_check_signatures all = {
        ew_get_version,         ew_handle_create,  ew_handle_destroy,
        ew_handle_get_device,   ew_handle_get_sm_count, ew_handle_get_max_threads_per_sm,
        ew_unary,               ew_binary,         ew_cast,
        ew_scale_add,           ew_is_supported,   ew_status_string,
        ew_dtype_name,          ew_dtype_size,     ew_get_last_error_message,
    };
    /* The handle is opaque and the stream is a pointer to CUDA's own stream struct, by name. */
    ew_handle_t handle = (struct ew_handle_s *)0;
    struct CUstream_st *stream = (ew_stream_t)0;
    (void)handle;
    (void)stream;
    return all;
}
