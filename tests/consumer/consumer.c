/* SPDX-License-Identifier: Apache-2.0 */
/* A program built against the installed libelementwise only (no CUDA toolkit: the library carries
 * the CUDA runtime inside). It prints the version, checks a few catalogue and size answers, and
 * creates a handle: with no GPU it says so and exits 0; with a GPU it runs one f32 add and checks
 * it. Device memory comes from the CUDA driver (libcuda.so.1, present wherever a GPU is), loaded
 * at run time, so building needs nothing but elementwise.h and -lelementwise.
 * Exit status: 0 on success (or no GPU), 1 on any wrong answer. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <elementwise.h>

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "consumer: FAIL: %s\n", what);
        ++failures;
    }
}

/* The few driver API calls used, declared here by their stable ABI (cuda.h is not needed). */
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
struct driver {
    CUresult (*init)(unsigned);
    CUresult (*device_get)(int *, int);
    CUresult (*primary_retain)(CUcontext *, int);
    CUresult (*primary_release)(int);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*ctx_synchronize)(void);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*copy_to_device)(CUdeviceptr, const void *, size_t);
    CUresult (*copy_to_host)(void *, CUdeviceptr, size_t);
};

static int load_driver(struct driver *cu)
{
    void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        fprintf(stderr, "consumer: cannot load libcuda.so.1: %s\n", dlerror());
        return 0;
    }
    struct {
        const char *name;
        void **slot;
    } symbols[] = {
        {"cuInit", (void **)&cu->init},
        {"cuDeviceGet", (void **)&cu->device_get},
        {"cuDevicePrimaryCtxRetain", (void **)&cu->primary_retain},
        {"cuDevicePrimaryCtxRelease_v2", (void **)&cu->primary_release},
        {"cuCtxSetCurrent", (void **)&cu->ctx_set_current},
        {"cuCtxSynchronize", (void **)&cu->ctx_synchronize},
        {"cuMemAlloc_v2", (void **)&cu->mem_alloc},
        {"cuMemFree_v2", (void **)&cu->mem_free},
        {"cuMemcpyHtoD_v2", (void **)&cu->copy_to_device},
        {"cuMemcpyDtoH_v2", (void **)&cu->copy_to_host},
    };
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; ++i) {
        /* POSIX: a function pointer travels through void * */
        void *address = dlsym(library, symbols[i].name);
        if (!address) {
            fprintf(stderr, "consumer: libcuda.so.1 lacks %s\n", symbols[i].name);
            return 0;
        }
        memcpy(symbols[i].slot, &address, sizeof address);
    }
    return 1;
}

/* out = a + b on n floats of device 0, through the library, checked bit for bit. */
static void run_one_add(ew_handle_t handle)
{
    enum { N = 37 }; /* not a multiple of any pack width: the tail is exercised too */
    float a[N], b[N], out[N];
    for (int i = 0; i < N; ++i) {
        a[i] = 1.5f + 0.25f * (float)i; /* exact sums: every value has few significant bits */
        b[i] = -40.0f + 2.0f * (float)i;
    }
    memset(out, 0xFF, sizeof out); /* poison: NaN */

    struct driver cu;
    if (!load_driver(&cu)) {
        check(0, "load the CUDA driver");
        return;
    }
    CUcontext context;
    CUdeviceptr da = 0, db = 0, dout = 0;
    int device = 0;
    if (cu.init(0) != 0 || cu.device_get(&device, 0) != 0 || cu.primary_retain(&context, device) != 0 ||
        cu.ctx_set_current(context) != 0) {
        check(0, "set up the primary context of device 0");
        return;
    }
    int ready = cu.mem_alloc(&da, sizeof a) == 0 && cu.mem_alloc(&db, sizeof b) == 0 &&
                cu.mem_alloc(&dout, sizeof out) == 0 && cu.copy_to_device(da, a, sizeof a) == 0 &&
                cu.copy_to_device(db, b, sizeof b) == 0 && cu.copy_to_device(dout, out, sizeof out) == 0;
    check(ready, "allocate and fill device buffers");
    if (ready) {
        ew_status_t status = ew_binary(handle, EW_OP_ADD, EW_F32, N, (void *)(uintptr_t)dout,
                                       (const void *)(uintptr_t)da, (const void *)(uintptr_t)db, NULL);
        if (status != EW_SUCCESS)
            fprintf(stderr, "consumer: ew_binary: %s: %s\n", ew_status_string(status),
                    ew_get_last_error_message());
        check(status == EW_SUCCESS, "ew_binary(EW_OP_ADD, EW_F32) returns EW_SUCCESS");
        check(cu.ctx_synchronize() == 0, "the add runs without a CUDA error");
        check(cu.copy_to_host(out, dout, sizeof out) == 0, "copy the result back");
        int wrong = 0;
        for (int i = 0; i < N; ++i) {
            float expected = a[i] + b[i];
            if (memcmp(&out[i], &expected, sizeof expected) != 0) {
                if (wrong++ < 5)
                    fprintf(stderr, "consumer: out[%d] = %a, expected %a\n", i, (double)out[i],
                            (double)expected);
            }
        }
        check(wrong == 0, "out = a + b on the GPU");
        if (status == EW_SUCCESS && wrong == 0)
            printf("consumer: one f32 add of %d elements on the GPU: correct\n", N);
    }
    if (dout)
        cu.mem_free(dout);
    if (db)
        cu.mem_free(db);
    if (da)
        cu.mem_free(da);
    cu.primary_release(device);
}

int main(void)
{
    unsigned version = ew_get_version();
    printf("consumer: libelementwise %u.%u.%u (header %d.%d.%d)\n", version / 10000, version / 100 % 100,
           version % 100, EW_VERSION_MAJOR, EW_VERSION_MINOR, EW_VERSION_PATCH);
    check(version / 10000 == EW_VERSION_MAJOR && version >= EW_VERSION, "library version matches the header");

    check(ew_is_supported(EW_OP_ADD, EW_F16, EW_F16) == 1, "add on f16 is supported");
    check(ew_is_supported(EW_OP_CAST, EW_F8E4M3, EW_I64) == 1, "cast i64 -> e4m3 is supported");
    check(ew_is_supported(EW_OP_RELU, EW_BOOL, EW_BOOL) == 0, "relu on bool is not supported");
    check(ew_is_supported(EW_OP_MUL, EW_F8E5M2, EW_F8E5M2) == 0, "mul on e5m2 is not supported");
    check(ew_is_supported(EW_OP_ADD, EW_F32, EW_F16) == 0, "add with two dtypes is not supported");
    check(ew_dtype_size(EW_BF16) == 2 && ew_dtype_size(EW_F64) == 8 && ew_dtype_size(EW_F8E4M3) == 1 &&
              ew_dtype_size((ew_dtype_t)0) == 0,
          "dtype sizes");
    check(strcmp(ew_dtype_name(EW_I32), "i32") == 0, "dtype name of i32");

    ew_handle_t handle = NULL;
    ew_status_t status = ew_handle_create(0, &handle);
    if (status == EW_ERROR_NO_DEVICE) {
        printf("consumer: no GPU (%s: %s)\n", ew_status_string(status), ew_get_last_error_message());
    } else if (status != EW_SUCCESS) {
        fprintf(stderr, "consumer: ew_handle_create: %s: %s\n", ew_status_string(status),
                ew_get_last_error_message());
        check(0, "ew_handle_create succeeds or reports EW_ERROR_NO_DEVICE");
    } else {
        int sm = 0;
        check(ew_handle_get_sm_count(handle, &sm) == EW_SUCCESS && sm > 0, "the handle has SMs");
        run_one_add(handle);
        check(ew_handle_destroy(handle) == EW_SUCCESS, "ew_handle_destroy");
    }
    if (failures)
        fprintf(stderr, "consumer: %d check(s) failed\n", failures);
    else
        printf("consumer: OK\n");
    return failures ? 1 : 0;
}
