/* SPDX-License-Identifier: Apache-2.0 */
/* Slots with generations behind the opaque values (src/abi/registry.h). A value is
 * generation << 32 | (index + 1): never NULL, never an address. */
#include "abi/registry.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(void *) == 8, "a value holds a 32-bit generation and a 32-bit slot");

/* The slot of index, NULL where its chunk is not allocated (or index is beyond every chunk). */
static ewi_registry_slot_t *slot_at(ewi_registry_t *registry, uint64_t index)
{
    const uint64_t position = index + EWI_REGISTRY_FIRST_CHUNK;
    const int chunk = 63 - __builtin_clzll(position) - 4; /* EWI_REGISTRY_FIRST_CHUNK is 2^4 */
    _Static_assert(EWI_REGISTRY_FIRST_CHUNK == 1 << 4, "the chunk of a slot is its position's top bit");
    if (chunk >= EWI_REGISTRY_CHUNKS)
        return NULL;
    ewi_registry_slot_t *slots = atomic_load_explicit(&registry->chunk[chunk], memory_order_acquire);
    return slots != NULL ? &slots[position - ((uint64_t)EWI_REGISTRY_FIRST_CHUNK << chunk)] : NULL;
}

/* The slot value names and the generation it carries; NULL for a value no add can have made. */
static ewi_registry_slot_t *slot_of(ewi_registry_t *registry, const void *value, uint32_t *generation)
{
    const uint64_t bits = (uint64_t)(uintptr_t)value;
    *generation = (uint32_t)(bits >> 32);
    if ((uint32_t)bits == 0 || (*generation & 1) == 0)
        return NULL;
    return slot_at(registry, (uint32_t)bits - 1);
}

static void *value_of(uint32_t index, uint32_t generation)
{
    return (void *)(uintptr_t)((uint64_t)generation << 32 | ((uint64_t)index + 1));
}

/* A slot never used, its chunk allocated where needed; NULL when out of host memory or slots. Under
 * the lock. */
static ewi_registry_slot_t *new_slot(ewi_registry_t *registry, uint32_t *index)
{
    const uint64_t position = (uint64_t)registry->used + EWI_REGISTRY_FIRST_CHUNK;
    const int chunk = 63 - __builtin_clzll(position) - 4;
    if (chunk >= EWI_REGISTRY_CHUNKS)
        return NULL;
    if (atomic_load_explicit(&registry->chunk[chunk], memory_order_relaxed) == NULL) {
        ewi_registry_slot_t *slots = calloc((size_t)EWI_REGISTRY_FIRST_CHUNK << chunk, sizeof *slots);
        if (slots == NULL)
            return NULL;
        atomic_store_explicit(&registry->chunk[chunk], slots, memory_order_release);
    }
    ewi_registry_slot_t *slot = slot_at(registry, registry->used);
    if ((slot->object = malloc(registry->object_size)) == NULL)
        return NULL;
    *index = registry->used++;
    return slot;
}

void *ewi_registry_add(ewi_registry_t *registry, void **value)
{
    *value = NULL;
    pthread_mutex_lock(&registry->lock);
    uint32_t index;
    ewi_registry_slot_t *slot;
    if (registry->free != 0) {
        index = registry->free - 1;
        slot = slot_at(registry, index);
        registry->free = slot->next_free;
    } else {
        slot = new_slot(registry, &index);
    }
    void *object = NULL;
    if (slot != NULL) {
        object = slot->object;
        memset(object, 0, registry->object_size);
        /* release: a find that sees the new generation sees the zeroed object behind it */
        const uint32_t generation = atomic_load_explicit(&slot->generation, memory_order_relaxed) + 1;
        atomic_store_explicit(&slot->generation, generation, memory_order_release);
        *value = value_of(index, generation);
    }
    pthread_mutex_unlock(&registry->lock);
    return object;
}

void *ewi_registry_find(ewi_registry_t *registry, const void *value)
{
    uint32_t generation;
    ewi_registry_slot_t *slot = slot_of(registry, value, &generation);
    if (slot == NULL || atomic_load_explicit(&slot->generation, memory_order_acquire) != generation)
        return NULL;
    return slot->object;
}

int ewi_registry_remove(ewi_registry_t *registry, const void *value, void (*cleanup)(void *object))
{
    uint32_t generation;
    ewi_registry_slot_t *slot = slot_of(registry, value, &generation);
    if (slot == NULL)
        return 0;
    pthread_mutex_lock(&registry->lock);
    const int live = atomic_load_explicit(&slot->generation, memory_order_relaxed) == generation;
    if (live) /* from here on, finds of value fail */
        atomic_store_explicit(&slot->generation, generation + 1, memory_order_release);
    pthread_mutex_unlock(&registry->lock);
    if (!live)
        return 0;
    if (cleanup != NULL)
        cleanup(slot->object);
    /* The slot is free again unless it has had its last life; a retired slot keeps an even generation,
     * which no value carries, so every value of it stays refused. */
    if ((generation + 1) / 2 < registry->lives) { /* generation 2k - 1 is the slot's life k */
        pthread_mutex_lock(&registry->lock);
        slot->next_free = registry->free;
        registry->free = ewi_registry_slot(value) + 1;
        pthread_mutex_unlock(&registry->lock);
    }
    return 1;
}
