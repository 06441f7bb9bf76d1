/* SPDX-License-Identifier: Apache-2.0 */
/* The objects behind the C ABI's opaque values (ew_handle_t, ew_kernel_t). A value is never an
 * address: it names a slot and the generation of the object in it, so once an object is destroyed its
 * value is refused whatever is made after it, in its slot or any other. A slot's storage is allocated
 * at its first use and kept for the process's life, so memory is bounded by the most objects live at
 * once, and a call racing the destroy of its own object (a caller's bug) reads stale fields, never
 * freed memory. Defined in src/abi/registry.c. */
#ifndef EW_REGISTRY_H
#define EW_REGISTRY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Chunk c of a registry holds EWI_REGISTRY_FIRST_CHUNK << c slots: 2^31 - 16 in all, so a slot's
 * index + 1 (a value's low 32 bits) is never 0. */
enum { EWI_REGISTRY_FIRST_CHUNK = 16, EWI_REGISTRY_CHUNKS = 27 };

typedef struct {
    _Atomic uint32_t generation; /* odd while an object lives in the slot, even while it is free */
    uint32_t next_free;          /* the index + 1 of the next free slot; 0 ends the list */
    void *object;                /* object_size bytes, the slot's from its first use on */
} ewi_registry_slot_t;

typedef struct {
    size_t object_size;
    uint32_t lives;       /* objects a slot holds before it is retired (never reused): its generations */
    pthread_mutex_t lock; /* taken by add and remove; find takes none */
    ewi_registry_slot_t *_Atomic chunk[EWI_REGISTRY_CHUNKS]; /* allocated as needed, never freed */
    uint32_t used;                                           /* slots handed out so far */
    uint32_t free;                                           /* the index + 1 of the first free slot */
} ewi_registry_t;

/* A registry of objects of `type`, for static storage. A slot's generations are 1, 3, 5, ... below
 * 2^32: 2^31 - 1 lives before it is retired. */
#define EWI_REGISTRY_INITIALIZER(type)                                                          \
    {                                                                                           \
        .object_size = sizeof(type), .lives = UINT32_MAX / 2, .lock = PTHREAD_MUTEX_INITIALIZER \
    }

/* A new live object, zeroed, and its value in *value (never NULL); NULL, with *value NULL, when out of
 * host memory or slots. The most recently freed slot is taken first. */
void *ewi_registry_add(ewi_registry_t *registry, void **value);

/* The object value names while it lives; NULL for NULL, a destroyed object's value, or anything else.
 * Lock-free: what the caller sees of the object was written before its value was handed out. */
void *ewi_registry_find(ewi_registry_t *registry, const void *value);

/* Ends the life of the object value names: 1 once it is destroyed, 0 (nothing done) if it was not
 * live. cleanup (may be NULL) runs on the object after its value is refused and before its slot can
 * be taken again, outside the lock. Of two threads removing the same value, one succeeds. */
int ewi_registry_remove(ewi_registry_t *registry, const void *value, void (*cleanup)(void *object));

/* The slot a value names (for tests: the next add takes the slot last removed). */
static inline uint32_t ewi_registry_slot(const void *value) { return (uint32_t)(uintptr_t)value - 1; }

#ifdef __cplusplus
}
#endif

#endif
