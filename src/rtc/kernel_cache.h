/* SPDX-License-Identifier: Apache-2.0 */
/* The on-disk cache of compiled kernels: one file per key under a private directory. A key is any
 * bytes naming what was compiled (the program text, the architecture, the library's version); the
 * file stores the whole key and is used only when its key matches byte for byte, so a file name's
 * hash colliding costs nothing but a miss. Every failure is a miss or a skipped store:
 * the cache only ever costs or saves time, and sets no error message. Thread- and process-safe. */
#ifndef EW_KERNEL_CACHE_H
#define EW_KERNEL_CACHE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* FNV-1a 64 of n bytes, continued from hash (EWI_FNV_OFFSET to begin): the cache's file names and
 * checksums, and the in-memory cache's buckets (src/rtc/modules.c). */
#define EWI_FNV_OFFSET 0xcbf29ce484222325u
uint64_t ewi_fnv1a(uint64_t hash, const void *bytes, size_t n);

/* The directory: EW_KERNEL_CACHE_DIR when set and non-empty, else $XDG_CACHE_HOME/libelementwise
 * (XDG_CACHE_HOME set, non-empty and absolute), else $HOME/.cache/libelementwise; 0 with the path in
 * out, or -1 when EW_KERNEL_CACHE=0, no directory can be named, or it does not fit in size bytes. */
int ewi_cache_dir(char *out, size_t size);

/* The value stored under key in dir: 0 with *data (malloc'ed, the caller frees) and *size, or -1
 * (absent, unreadable, truncated, corrupt, foreign, another key, out of memory; dir or the file not
 * the effective user's or root's, writable by group or others, or a symbolic link). */
int ewi_cache_load(const char *dir, const void *key, size_t key_size, void **data, size_t *size);

/* Stores data under key in dir: creates dir (and missing parents) with mode 0700, writes a temporary
 * file of mode 0600 in it and renames it over the key's file, so a reader sees a whole file or none.
 * Then, where EW_KERNEL_CACHE_MAX_BYTES sets a cap, removes entries written longest ago until the
 * directory's entries fit it (this one too, if alone it does not). 0, or -1 when anything fails (no
 * temporary file left behind; directories it made stay). */
int ewi_cache_store(const char *dir, const void *key, size_t key_size, const void *data, size_t size);

#ifdef __cplusplus
}
#endif

#endif
