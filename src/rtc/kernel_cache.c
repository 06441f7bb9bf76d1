/* SPDX-License-Identifier: Apache-2.0 */
/* The on-disk cache of compiled kernels (src/rtc/kernel_cache.h). The file for a key is named by the key's
 * FNV-1a 64 hash, 16 hex digits and ".ewk", and holds a header, the key, then the value:
 *   bytes  0..7   magic "EWKCACHE"
 *          8..11  format version, FORMAT_VERSION (every number little-endian)
 *         12..15  zero
 *         16..23  key size
 *         24..31  value size
 *         32..39  FNV-1a 64 of bytes 0..31, the key and the value
 * Files are only ever replaced whole (a complete temporary file renamed over the name), never written
 * in place, so a reader holds one writer's complete file; anything else (a crash or a full disk while
 * writing, another program's file, a bit flipped on disk) fails a check and reads as a miss. The
 * directory is opened once and checked (a directory, not a symbolic link, the user's, writable by no
 * one else), and every file is reached through that descriptor, so the file used is in the directory
 * checked: a directory others can write to could feed code into the process. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_CLOEXEC, O_DIRECTORY, O_NOFOLLOW, openat, renameat under -std=c11 */
#endif
#include "rtc/kernel_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FORMAT_VERSION 1u
#define HEADER_SIZE    40
#define KEY_MAX        ((size_t)1 << 20)
#define DATA_MAX       ((size_t)64 << 20)
#define FNV_PRIME      0x100000001b3u
#define TEMP_ATTEMPTS  64

static const unsigned char magic[8] = {'E', 'W', 'K', 'C', 'A', 'C', 'H', 'E'};

enum {
    NAME_SIZE = 16 + sizeof ".ewk",                 /* hash, suffix, NUL */
    TEMP_SIZE = NAME_SIZE - 1 + sizeof ".tmp." + 12 /* name, ".tmp.", 12 hex digits, NUL */
};

uint64_t ewi_fnv1a(uint64_t hash, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n; ++i)
        hash = (hash ^ p[i]) * FNV_PRIME;
    return hash;
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; ++i)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; ++i)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i)
        v = v << 8 | p[i];
    return v;
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
        v = v << 8 | p[i];
    return v;
}

static void file_name(const void *key, size_t key_size, char name[NAME_SIZE])
{
    snprintf(name, NAME_SIZE, "%016llx.ewk", (unsigned long long)ewi_fnv1a(EWI_FNV_OFFSET, key, key_size));
}

/* n bytes exactly, or -1 (an error, or the end of the file first). */
static int read_all(int fd, void *buffer, size_t n)
{
    unsigned char *p = buffer;
    while (n > 0) {
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

static int write_all(int fd, const void *buffer, size_t n)
{
    const unsigned char *p = buffer;
    while (n > 0) {
        ssize_t put = write(fd, p, n);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0)
            return -1;
        p += put;
        n -= (size_t)put;
    }
    return 0;
}

/* dir into path without trailing slashes: "dir/" would follow a symbolic link that O_NOFOLLOW must
 * refuse. -1 for NULL, empty or too long. */
static int copy_dir(const char *dir, char path[PATH_MAX])
{
    if (dir == NULL || dir[0] == '\0')
        return -1;
    size_t n = strlen(dir);
    if (n >= PATH_MAX)
        return -1;
    while (n > 1 && dir[n - 1] == '/')
        --n;
    memcpy(path, dir, n);
    path[n] = '\0';
    return 0;
}

/* Whom the cache trusts to have written what it loads: the effective user, and root (who can change
 * anything anyway), so that a cache deployed read-only as root's serves every user. */
static int trusted(uid_t owner) { return owner == geteuid() || owner == 0; }

/* Opened the directory, or -1 unless it is one (not a symbolic link to one), owned by a trusted user
 * (the effective one or root) and writable by neither group nor others. */
static int open_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || !trusted(st.st_uid) ||
        (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* mkdir -p with mode 0700 (the umask can only narrow it). Failures are left for open_dir to find:
 * an existing parent may refuse mkdir (EACCES) and still be usable. */
static void make_dirs(char *path)
{
    if (mkdir(path, 0700) == 0 || errno != ENOENT)
        return;
    for (char *p = path + 1; *p != '\0'; ++p) {
        if (*p != '/')
            continue;
        *p = '\0';
        (void)mkdir(path, 0700);
        *p = '/';
    }
    (void)mkdir(path, 0700);
}

/* The entry in fd (open at its start) when it holds exactly key, or -1. */
static int read_entry(int fd, const unsigned char *key, size_t key_size, void **data, size_t *size)
{
    struct stat st;
    unsigned char header[HEADER_SIZE];
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !trusted(st.st_uid) ||
        (st.st_mode & (S_IWGRP | S_IWOTH)) != 0 || st.st_size < HEADER_SIZE ||
        read_all(fd, header, HEADER_SIZE) != 0)
        return -1;
    uint64_t stored_key = get64(header + 16), stored_data = get64(header + 24);
    /* sizes bounded before they are added, so the sum cannot wrap */
    if (memcmp(header, magic, sizeof magic) != 0 || get32(header + 8) != FORMAT_VERSION ||
        get32(header + 12) != 0 || stored_key != key_size || stored_data > DATA_MAX ||
        (uint64_t)st.st_size != HEADER_SIZE + stored_key + stored_data)
        return -1;
    uint64_t sum = ewi_fnv1a(EWI_FNV_OFFSET, header, 32);
    unsigned char chunk[4096];
    for (size_t done = 0; done < key_size;) {
        size_t n = key_size - done < sizeof chunk ? key_size - done : sizeof chunk;
        if (read_all(fd, chunk, n) != 0 || memcmp(chunk, key + done, n) != 0)
            return -1;
        sum = ewi_fnv1a(sum, chunk, n);
        done += n;
    }
    unsigned char *value = malloc(stored_data > 0 ? (size_t)stored_data : 1);
    if (value == NULL)
        return -1;
    if (read_all(fd, value, (size_t)stored_data) != 0 ||
        ewi_fnv1a(sum, value, (size_t)stored_data) != get64(header + 32)) {
        free(value);
        return -1;
    }
    *data = value;
    *size = (size_t)stored_data;
    return 0;
}

/* A new file "<name>.tmp.<12 hex digits>" in dirfd, created exclusively, its name in temp; or -1. The
 * digits mix the time, the process and a stack address (distinct between threads); O_EXCL settles
 * any remaining clash by another attempt. */
static int create_temp(int dirfd, const char *name, char temp[TEMP_SIZE])
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t seed = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    seed ^= (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)&now;
    for (int attempt = 0; attempt < TEMP_ATTEMPTS; ++attempt) {
        /* splitmix64 */
        uint64_t z = (seed += 0x9E3779B97F4A7C15u);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
        z ^= z >> 31;
        snprintf(temp, TEMP_SIZE, "%s.tmp.%012llx", name, (unsigned long long)(z & 0xFFFFFFFFFFFFu));
        int fd = openat(dirfd, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST && errno != EINTR)
            return -1;
    }
    return -1;
}

/* The byte cap of EW_KERNEL_CACHE_MAX_BYTES: a decimal number of bytes, or 0 (no cap) where unset or
 * not a positive number. */
static uint64_t max_bytes(void)
{
    const char *text = getenv("EW_KERNEL_CACHE_MAX_BYTES");
    if (text == NULL || text[0] < '0' || text[0] > '9')
        return 0;
    char *end;
    errno = 0;
    const unsigned long long value = strtoull(text, &end, 10);
    return errno == 0 && *end == '\0' ? (uint64_t)value : 0;
}

/* One entry of the directory, for pruning. */
typedef struct {
    char name[NAME_SIZE];
    uint64_t bytes;
    struct timespec written;
} entry_t;

static int older_first(const void *a, const void *b)
{
    const struct timespec *x = &((const entry_t *)a)->written, *y = &((const entry_t *)b)->written;
    if (x->tv_sec != y->tv_sec)
        return x->tv_sec < y->tv_sec ? -1 : 1;
    return (x->tv_nsec > y->tv_nsec) - (x->tv_nsec < y->tv_nsec);
}

/* Under a cap (EW_KERNEL_CACHE_MAX_BYTES), removes the directory's entries (regular *.ewk files; not
 * temporary ones, which their writers remove) oldest written first until the rest fit. Entries are
 * replaced whole, so a file's modification time is when its value was written; a reader that loses
 * the race to a removal sees a miss. */
static void prune(int dirfd, uint64_t cap)
{
    int fd = dup(dirfd);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (dir == NULL) {
        if (fd >= 0)
            close(fd);
        return;
    }
    entry_t *entries = NULL;
    size_t count = 0, capacity = 0;
    uint64_t total = 0;
    for (struct dirent *d; (d = readdir(dir)) != NULL;) {
        const size_t n = strlen(d->d_name);
        struct stat st;
        if (n != NAME_SIZE - 1 || strcmp(d->d_name + n - 4, ".ewk") != 0 ||
            fstatat(dirfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (count == capacity) {
            const size_t grown = capacity ? 2 * capacity : 64;
            entry_t *more = realloc(entries, grown * sizeof *entries);
            if (more == NULL)
                break;
            entries = more;
            capacity = grown;
        }
        memcpy(entries[count].name, d->d_name, NAME_SIZE);
        entries[count].bytes = (uint64_t)st.st_size;
        entries[count].written = st.st_mtim;
        total += (uint64_t)st.st_size;
        ++count;
    }
    closedir(dir);
    if (total > cap) {
        qsort(entries, count, sizeof *entries, older_first);
        for (size_t i = 0; i < count && total > cap; ++i)
            if (unlinkat(dirfd, entries[i].name, 0) == 0 || errno == ENOENT)
                total -= entries[i].bytes;
    }
    free(entries);
}

int ewi_cache_dir(char *out, size_t size)
{
    if (out == NULL || size == 0)
        return -1;
    out[0] = '\0';
    const char *enabled = getenv("EW_KERNEL_CACHE");
    if (enabled != NULL && strcmp(enabled, "0") == 0)
        return -1;
    const char *base = getenv("EW_KERNEL_CACHE_DIR"), *tail = "";
    if (base == NULL || base[0] == '\0') {
        base = getenv("XDG_CACHE_HOME");
        tail = "/libelementwise";
        if (base == NULL || base[0] != '/') { /* the XDG rule: a relative value is ignored */
            base = getenv("HOME");
            tail = "/.cache/libelementwise";
            if (base == NULL || base[0] == '\0')
                return -1;
        }
    }
    int n = snprintf(out, size, "%s%s", base, tail);
    if (n < 0 || (size_t)n >= size) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

int ewi_cache_load(const char *dir, const void *key, size_t key_size, void **data, size_t *size)
{
    if (data == NULL || size == NULL)
        return -1;
    *data = NULL;
    *size = 0;
    char path[PATH_MAX];
    if ((key == NULL && key_size != 0) || key_size > KEY_MAX || copy_dir(dir, path) != 0)
        return -1;
    int dirfd = open_dir(path);
    if (dirfd < 0)
        return -1;
    char name[NAME_SIZE];
    file_name(key, key_size, name);
    /* O_NONBLOCK: a FIFO under the name must not block the open; no effect on a regular file */
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    close(dirfd);
    if (fd < 0)
        return -1;
    int result = read_entry(fd, key, key_size, data, size);
    close(fd);
    return result;
}

int ewi_cache_store(const char *dir, const void *key, size_t key_size, const void *data, size_t size)
{
    char path[PATH_MAX];
    if ((key == NULL && key_size != 0) || (data == NULL && size != 0) || key_size > KEY_MAX ||
        size > DATA_MAX || copy_dir(dir, path) != 0)
        return -1;
    make_dirs(path);
    int dirfd = open_dir(path);
    if (dirfd < 0)
        return -1;
    char name[NAME_SIZE], temp[TEMP_SIZE];
    file_name(key, key_size, name);
    unsigned char header[HEADER_SIZE];
    memcpy(header, magic, sizeof magic);
    put32(header + 8, FORMAT_VERSION);
    put32(header + 12, 0);
    put64(header + 16, key_size);
    put64(header + 24, size);
    put64(header + 32, ewi_fnv1a(ewi_fnv1a(ewi_fnv1a(EWI_FNV_OFFSET, header, 32), key, key_size), data, size));
    int result = -1, fd = create_temp(dirfd, name, temp);
    if (fd >= 0) {
        /* 0600 whatever the umask; no fsync: a file torn by a crash fails the checksum */
        int written = fchmod(fd, 0600) == 0 && write_all(fd, header, HEADER_SIZE) == 0 &&
                      write_all(fd, key, key_size) == 0 && write_all(fd, data, size) == 0;
        if (close(fd) != 0)
            written = 0;
        if (written && renameat(dirfd, temp, dirfd, name) == 0)
            result = 0;
        else
            unlinkat(dirfd, temp, 0);
    }
    const uint64_t cap = max_bytes();
    if (result == 0 && cap > 0)
        prune(dirfd, cap);
    close(dirfd);
    return result;
}
