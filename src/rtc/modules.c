/* SPDX-License-Identifier: Apache-2.0 */
/* The in-memory cache of loaded programs (src/rtc/modules.h). */
#include "rtc/modules.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi/error.h"
#include "launch/driver.h"
#include "plan/plan.h"
#include "rtc/kernel_cache.h"

static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;
static ewi_module_t *modules;

/* What the caches did since the process started (ew_kernel_cache_get_count), updated atomically. */
static uint64_t counts[EW_KERNEL_CACHE_COUNTERS];

static void count(ew_kernel_cache_counter_t counter) { __atomic_fetch_add(&counts[counter], 1, __ATOMIC_RELAXED); }

uint64_t ewi_kernel_cache_count(ew_kernel_cache_counter_t counter)
{
    return __atomic_load_n(&counts[counter], __ATOMIC_RELAXED);
}

static ewi_module_t *find_module(uint64_t hash, const char *key, size_t key_size, CUcontext context)
{
    for (ewi_module_t *m = modules; m != NULL; m = m->next)
        if (m->hash == hash && m->context == context && m->key_size == key_size && memcmp(m->key, key, key_size) == 0)
            return m;
    return NULL;
}

/* One program as the caches look it up: the kernels it has, the architecture, and its key, which
 * holds its text. */
typedef struct {
    ewi_slots_t slots;
    const char *arch;
    char *key; /* malloc'ed */
    size_t key_size;
    const char *program; /* the program's text, inside key */
} lookup_t;

/* spec's lookup for arch. The cache key: what makes two compilations the same (the library, its device
 * headers, the architecture, the conversion paths, the kernels instantiated, a line each), then the
 * program text, NUL-terminated past key_size. Not NVRTC's version: the library fixes the program and
 * its options, so a CUBIN any NVRTC made of them is one to load, and a disk hit needs no NVRTC at all
 * (one the driver refuses is compiled again). */
static ew_status_t cache_key(const ewi_kernel_spec_t *spec, const char *arch, lookup_t *l)
{
    l->slots = ewi_kernel_slots(spec);
    l->arch = arch;
    const ewi_slots_t *slots = &l->slots;
    char *text;
    ew_status_t status = ewi_kernel_program(spec, &text);
    if (status != EW_SUCCESS)
        return status;
    char prefix[192];
    int length = snprintf(prefix, sizeof prefix, "libelementwise %u, headers %s; %s; %s\n",
                          ew_get_version(), ewi_device_headers_digest, arch,
#ifdef EW_GENERIC_CONVERSIONS
                          "generic conversions"
#else
                          "native conversions"
#endif
    );
    size_t kernels = 0, text_size = strlen(text);
    for (int slot = 0; slot < EW_SLOT_COUNT; ++slot)
        kernels += slots->present[slot] ? strlen(ewi_kernel_slot_expression(slots, slot)) + 1 : 0;
    char *key = l->key = malloc((size_t)length + kernels + text_size + 1);
    if (key == NULL) {
        free(text);
        return ewi_fail(EW_ERROR_OUT_OF_MEMORY, "kernel: out of host memory for the cache key");
    }
    char *p = key;
    memcpy(p, prefix, (size_t)length);
    p += length;
    for (int slot = 0; slot < EW_SLOT_COUNT; ++slot)
        if (slots->present[slot])
            p += sprintf(p, "%s\n", ewi_kernel_slot_expression(slots, slot));
    memcpy(p, text, text_size + 1);
    l->key_size = (size_t)(p - key) + text_size;
    l->program = p;
    free(text);
    return EW_SUCCESS;
}

/* A compiled program as the disk cache keeps it: the CUBIN, then the lowered name of each kernel the
 * program has, in slot order, each NUL-terminated, then the names' bytes as 4 little-endian bytes. */
typedef struct {
    unsigned char *bytes; /* malloc'ed */
    size_t cubin_size;
    const char *name[EW_SLOT_COUNT]; /* into bytes */
} compiled_t;

/* The CUBIN and names of a value of `size` bytes: 0, or -1 where it is not a value of slots' program. */
static int unpack(const ewi_slots_t *slots, size_t size, compiled_t *c)
{
    if (size < 4)
        return -1;
    const unsigned char *end = c->bytes + size - 4;
    const size_t names = (size_t)end[0] | (size_t)end[1] << 8 | (size_t)end[2] << 16 | (size_t)end[3] << 24;
    if (names > size - 4)
        return -1;
    c->cubin_size = size - 4 - names;
    const char *p = (const char *)c->bytes + c->cubin_size, *stop = (const char *)end;
    for (int slot = 0; slot < EW_SLOT_COUNT; ++slot) {
        c->name[slot] = NULL;
        if (!slots->present[slot])
            continue;
        const char *nul = memchr(p, '\0', (size_t)(stop - p));
        if (nul == NULL || nul == p)
            return -1;
        c->name[slot] = p;
        p = nul + 1;
    }
    return p == stop ? 0 : -1;
}

/* binary's CUBIN and names as one value (unpack's form), in c->bytes; its size, or 0 out of memory. */
static size_t pack(const ewi_slots_t *slots, const ewi_kernel_binary_t *binary, compiled_t *c)
{
    size_t names = 0;
    for (int slot = 0; slot < EW_SLOT_COUNT; ++slot)
        names += slots->present[slot] ? strlen(binary->lowered[slot]) + 1 : 0;
    const size_t size = binary->cubin_size + names + 4;
    if ((c->bytes = malloc(size)) == NULL)
        return 0;
    memcpy(c->bytes, binary->cubin, binary->cubin_size);
    unsigned char *p = c->bytes + binary->cubin_size;
    for (int slot = 0; slot < EW_SLOT_COUNT; ++slot)
        if (slots->present[slot]) {
            const size_t length = strlen(binary->lowered[slot]) + 1;
            memcpy(p, binary->lowered[slot], length);
            p += length;
        }
    for (int b = 0; b < 4; ++b)
        p[b] = (unsigned char)(names >> 8 * b);
    return size;
}

/* The program l looks up: from the disk cache when read_disk is set and it holds a value of it, else
 * compiled by NVRTC and stored there (over the copy it holds, if any; *stored says whether it was). */
static ew_status_t find_compiled(const lookup_t *l, int read_disk, compiled_t *c, int *from_disk, int *stored)
{
    const ewi_slots_t *slots = &l->slots;
    char dir[4096];
    const int disk = ewi_cache_dir(dir, sizeof dir) == 0;
    *stored = 0;
    void *value = NULL;
    size_t size = 0;
    *from_disk = disk && read_disk && ewi_cache_load(dir, l->key, l->key_size, &value, &size) == 0;
    if (*from_disk) {
        c->bytes = value;
        if (unpack(slots, size, c) == 0)
            return EW_SUCCESS;
        free(value); /* not this program's (damaged): compiled afresh */
        *from_disk = 0;
    }
    ewi_kernel_binary_t binary;
    ew_status_t status = ewi_kernel_compile_program(l->program, slots, l->arch, &binary);
    if (status == EW_SUCCESS)
        count(EW_KERNEL_CACHE_COMPILES);
    if (status == EW_SUCCESS && (size = pack(slots, &binary, c)) == 0)
        status = ewi_fail(EW_ERROR_OUT_OF_MEMORY, "kernel: out of host memory for the compiled program");
    ewi_kernel_binary_free(&binary);
    if (status != EW_SUCCESS)
        return status;
    *stored = disk && ewi_cache_store(dir, l->key, l->key_size, c->bytes, size) == 0;
    if (disk && !*stored) /* a failure costs only time */
        count(EW_KERNEL_CACHE_STORE_FAILURES);
    (void)unpack(slots, size, c);
    return EW_SUCCESS;
}

ew_status_t ewi_module_load(const ewi_kernel_spec_t *spec, const char *arch, CUcontext context,
                            const ewi_module_t **found)
{
    const ewi_driver_t *driver = ewi_driver();
    lookup_t l;
    ew_status_t status = cache_key(spec, arch, &l);
    if (status != EW_SUCCESS)
        return status;
    const uint64_t hash = ewi_fnv1a(EWI_FNV_OFFSET, l.key, l.key_size);
    pthread_mutex_lock(&modules_lock);
    *found = find_module(hash, l.key, l.key_size, context);
    pthread_mutex_unlock(&modules_lock);
    if (*found != NULL) {
        free(l.key);
        count(EW_KERNEL_CACHE_MEMORY_HITS);
        return EW_SUCCESS;
    }

    ewi_module_t *m = calloc(1, sizeof *m);
    compiled_t compiled = {0};
    int from_disk = 0, stored;
    if (m == NULL)
        status = ewi_fail(EW_ERROR_OUT_OF_MEMORY, "kernel: out of host memory");
    if (status == EW_SUCCESS)
        status = find_compiled(&l, 1, &compiled, &from_disk, &stored);
    CUresult result = CUDA_SUCCESS;
    if (status == EW_SUCCESS && (result = driver->module_load(&m->module, compiled.bytes)) != CUDA_SUCCESS &&
        from_disk) {
        /* a cached CUBIN this driver refuses (damaged where the file's checksum cannot see, say): compiled
         * afresh and stored over it, so that the next process need not find it refused again */
        free(compiled.bytes);
        compiled.bytes = NULL;
        status = find_compiled(&l, 0, &compiled, &from_disk, &stored);
        if (status == EW_SUCCESS)
            result = driver->module_load(&m->module, compiled.bytes);
    }
    if (status == EW_SUCCESS && result != CUDA_SUCCESS)
        status = ewi_fail_driver(result, "cuModuleLoadData (the kernel's compiled code)");
    for (int slot = 0; status == EW_SUCCESS && slot < EW_SLOT_COUNT; ++slot)
        if (l.slots.present[slot] && (result = driver->module_function(&m->function[slot], m->module,
                                                                     compiled.name[slot])) != CUDA_SUCCESS)
            status = ewi_fail_driver(result, "cuModuleGetFunction");
    free(compiled.bytes);
    /* Blocks of the bulk kernel an SM holds, its shared memory aside (a tile's slots are a fraction of
     * an SM's): its registers decide, which the launch plan's tiles make up for. */
    if (status == EW_SUCCESS && l.slots.present[EW_SLOT_BULK] &&
        driver->occupancy(&m->bulk_blocks_per_sm, m->function[EW_SLOT_BULK], EW_PLAN_BLOCK_THREADS, 0) !=
            CUDA_SUCCESS)
        m->bulk_blocks_per_sm = 0;
    if (status != EW_SUCCESS) {
        if (m != NULL && m->module != NULL)
            driver->module_unload(m->module);
        free(m);
        free(l.key);
        return status;
    }
    if (from_disk)
        count(EW_KERNEL_CACHE_DISK_HITS);
    m->hash = hash;
    m->key = l.key;
    m->key_size = l.key_size;
    m->context = context;

    /* Another thread may have loaded the same program meanwhile: keep the first. */
    pthread_mutex_lock(&modules_lock);
    ewi_module_t *first = find_module(hash, l.key, l.key_size, context);
    if (first == NULL) {
        m->next = modules;
        modules = m;
        first = m;
    }
    pthread_mutex_unlock(&modules_lock);
    if (first != m) {
        driver->module_unload(m->module);
        free(m->key);
        free(m);
    }
    *found = first;
    return EW_SUCCESS;
}

ew_status_t ewi_module_store(const ewi_kernel_spec_t *spec, const char *arch)
{
    char dir[4096];
    if (ewi_cache_dir(dir, sizeof dir) != 0)
        return ewi_fail(EW_ERROR_NOT_SUPPORTED, "the disk cache is off (EW_KERNEL_CACHE=0) or has no directory "
                                                "(EW_KERNEL_CACHE_DIR, XDG_CACHE_HOME and HOME unset)");
    lookup_t l;
    ew_status_t status = cache_key(spec, arch, &l);
    if (status != EW_SUCCESS)
        return status;
    compiled_t compiled = {0};
    int from_disk = 0, stored = 0;
    status = find_compiled(&l, 1, &compiled, &from_disk, &stored);
    free(compiled.bytes);
    free(l.key);
    if (status == EW_SUCCESS && from_disk)
        count(EW_KERNEL_CACHE_DISK_HITS);
    else if (status == EW_SUCCESS && !stored)
        status = ewi_fail(EW_ERROR_NOT_SUPPORTED, "the disk cache %s could not keep the compiled program "
                                                  "(read-only, full, or smaller than EW_KERNEL_CACHE_MAX_BYTES needs)",
                          dir);
    return status;
}
