/* SPDX-License-Identifier: Apache-2.0 */
/* The environment the kernel cache reads for its directory (src/rtc/kernel_cache.c, ewi_cache_dir), saved,
 * set and restored by the tests that change it: test_kernel_cache (the directory's rules, on the CPU)
 * and test_user_kernel_gpu (the same settings through ew_kernel_create). Header-only: the two link
 * different test utilities. */
#ifndef EW_TESTS_CACHE_ENV_H
#define EW_TESTS_CACHE_ENV_H

#include <stdlib.h>
#include <string.h>

enum { CACHE_ENV_COUNT = 4 };

/* The variables, in the order of every values array below. */
static const char *const cache_env_names[CACHE_ENV_COUNT] = {"EW_KERNEL_CACHE", "EW_KERNEL_CACHE_DIR",
                                                             "XDG_CACHE_HOME", "HOME"};

/* Each variable set to its value, or unset where the value is NULL. */
static inline void cache_env_set(const char *const values[CACHE_ENV_COUNT])
{
    for (size_t i = 0; i < CACHE_ENV_COUNT; ++i)
        if (values[i] == NULL)
            unsetenv(cache_env_names[i]);
        else
            setenv(cache_env_names[i], values[i], 1);
}

/* The variables as they are now, copied into saved (NULL: unset), for cache_env_restore. */
static inline void cache_env_save(char *saved[CACHE_ENV_COUNT])
{
    for (size_t i = 0; i < CACHE_ENV_COUNT; ++i)
        saved[i] = getenv(cache_env_names[i]) != NULL ? strdup(getenv(cache_env_names[i])) : NULL;
}

/* The variables as cache_env_save found them; the copies freed. */
static inline void cache_env_restore(char *saved[CACHE_ENV_COUNT])
{
    cache_env_set((const char *const *)saved);
    for (size_t i = 0; i < CACHE_ENV_COUNT; ++i) {
        free(saved[i]);
        saved[i] = NULL;
    }
}

#endif
