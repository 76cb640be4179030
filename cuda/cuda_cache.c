/* SPDX-License-Identifier: BSD-2-Clause */
/* syncfs (io_internal.h) */
#define _GNU_SOURCE
#include "cuda_cache.h"
#include "alloc.h"
#include "cuda_queue.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_jit.h"
#include "io.h"
#include "io_internal.h"
#include "sha256.h"
#include "status.h"

#ifndef CBLOB_VERSION_STRING
#  error "the build defines CBLOB_VERSION_STRING"
#endif

/* ---- configuration (read once) ---------------------------------------------------------------- */

static struct {
    cblob_cache_mode requested;
    char dir[PATH_MAX];
    char note[160];              /* a problem with the environment, for reports */
    atomic_bool unwritable;      /* a write failed: new kernels stay in memory */
    atomic_bool warned;          /* the one warning has been logged */
    atomic_bool refused;         /* the folder is not to be trusted: not even read */
    pthread_mutex_t reason_lock;
    char reason[PATH_MAX + 128]; /* why the folder could not be written */
    atomic_uint_fast64_t compiles, disk_hits, disk_writes, disk_rejected;
} cache = {.reason_lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t configure_once = PTHREAD_ONCE_INIT;

static void configure(void)
{
    const char *mode = getenv("CBLOB_KERNEL_CACHE");
    cache.requested = CBLOB_KERNEL_CACHE_DISK;
    if (mode != NULL && strcmp(mode, "off") == 0)
        cache.requested = CBLOB_KERNEL_CACHE_OFF;
    else if (mode != NULL && strcmp(mode, "memory") == 0)
        cache.requested = CBLOB_KERNEL_CACHE_MEMORY;
    else if (mode != NULL && mode[0] != '\0' && strcmp(mode, "disk") != 0)
        snprintf(cache.note, sizeof cache.note, "CBLOB_KERNEL_CACHE='%.64s' is not off, memory or disk; using disk", mode);

    const char *dir = getenv("CBLOB_KERNEL_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (dir != NULL && dir[0] != '\0')
        snprintf(cache.dir, sizeof cache.dir, "%s", dir);
    else if (xdg != NULL && xdg[0] == '/') /* XDG: a relative path is invalid and ignored */
        snprintf(cache.dir, sizeof cache.dir, "%s/cblob/kernels", xdg);
    else if (home != NULL && home[0] != '\0')
        snprintf(cache.dir, sizeof cache.dir, "%s/.cache/cblob/kernels", home);
}

static bool disk_readable(void)
{
    pthread_once(&configure_once, configure);
    return cache.requested == CBLOB_KERNEL_CACHE_DISK && cache.dir[0] != '\0' && !atomic_load(&cache.refused);
}

static bool disk_writable(void)
{
    return disk_readable() && !atomic_load(&cache.unwritable);
}

cblob_cache_mode cb_cuda_cache_mode(void)
{
    pthread_once(&configure_once, configure);
    if (cache.requested == CBLOB_KERNEL_CACHE_DISK && !disk_writable())
        return CBLOB_KERNEL_CACHE_MEMORY;
    return cache.requested;
}

void cb_cuda_cache_dir(char *text, size_t size)
{
    pthread_once(&configure_once, configure);
    snprintf(text, size, "%s", cache.dir);
}

void cb_cuda_cache_describe(char *text, size_t size)
{
    pthread_once(&configure_once, configure);
    static const char *const names[] = {"off", "memory", "disk"};
    const char *folder = cache.dir[0] != '\0' ? cache.dir : "(none: set CBLOB_KERNEL_CACHE_DIR or HOME)";
    pthread_mutex_lock(&cache.reason_lock);
    if (cache.requested == CBLOB_KERNEL_CACHE_DISK && cache.dir[0] == '\0')
        snprintf(text, size, "memory (no folder: set CBLOB_KERNEL_CACHE_DIR or HOME)");
    else if (cache.requested == CBLOB_KERNEL_CACHE_DISK && atomic_load(&cache.unwritable))
        snprintf(text, size, "memory (%s)%s", cache.reason,
                 atomic_load(&cache.refused) ? "" : "; existing entries are still read");
    else
        snprintf(text, size, "%s, folder %s%s%s", names[cache.requested], folder, cache.note[0] ? "; " : "", cache.note);
    pthread_mutex_unlock(&cache.reason_lock);
}

void cb_cuda_cache_stats_get(cb_cuda_cache_stats *out)
{
    out->compiles = atomic_load(&cache.compiles);
    out->disk_hits = atomic_load(&cache.disk_hits);
    out->disk_writes = atomic_load(&cache.disk_writes);
    out->disk_rejected = atomic_load(&cache.disk_rejected);
}

/* ---- disk entries ------------------------------------------------------------------------------ */

#define ENTRY_MAGIC "CBLOBKRN"
#define ENTRY_FORMAT 1u
#define ENTRY_HEADER_BYTES 88
#define ENTRY_MAX_IMAGE_BYTES ((size_t)256 << 20)

/* What decides the compiler's output, and nothing it produced. */
static void entry_key(const cb_cuda_nvrtc *compiler, const cb_cuda_family *family, const cb_cuda_target *target,
                      unsigned char key[CB_SHA256_BYTES])
{
    char storage[CB_CUDA_MAX_OPTIONS][48];
    const char *options[CB_CUDA_MAX_OPTIONS];
    const int option_count = cb_cuda_compile_options(target, storage, options);
    char header[256];
    const int length = snprintf(header, sizeof header, "cblob kernel cache %u\ncblob %s\nnvrtc %d.%d\ntarget %s\nfamily %s\n",
                                ENTRY_FORMAT, CBLOB_VERSION_STRING, compiler->major, compiler->minor, target->name,
                                family->name);
    cb_sha256 hash;
    cb_sha256_init(&hash);
    cb_sha256_update(&hash, header, (size_t)length);
    for (int i = 0; i < option_count; ++i)
        cb_sha256_update(&hash, options[i], strlen(options[i]) + 1);
    cb_sha256_update(&hash, family->source, family->source_length);
    cb_sha256_final(&hash, key);
}

/* The entry's file name: family, target and key. */
static void entry_name(const cb_cuda_family *family, const cb_cuda_target *target, const unsigned char key[CB_SHA256_BYTES],
                       char *name, size_t size)
{
    char hex[2 * CB_SHA256_BYTES + 1];
    for (int i = 0; i < CB_SHA256_BYTES; ++i)
        snprintf(hex + 2 * i, 3, "%02x", key[i]);
    snprintf(name, size, "%s-%s-%s.%s", family->name, target->name, hex, target->ptx ? "ptx" : "cubin");
}

static void put_u32(unsigned char *at, uint32_t value)
{
    for (int i = 0; i < 4; ++i)
        at[i] = (unsigned char)(value >> (8 * i));
}

static void put_u64(unsigned char *at, uint64_t value)
{
    for (int i = 0; i < 8; ++i)
        at[i] = (unsigned char)(value >> (8 * i));
}

static uint64_t get_u64(const unsigned char *at)
{
    uint64_t value = 0;
    for (int i = 7; i >= 0; --i)
        value = value << 8 | at[i];
    return value;
}

static uint32_t get_u32(const unsigned char *at)
{
    return (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 | (uint32_t)at[3] << 24;
}

/* ---- the file system ----------------------------------------------------------------------------
 * Every call that touches the cache folder is in the few functions below (src/io may later do
 * the writing). Anyone who can write the folder or an entry could hand the library machine code
 * to load, so the folder and each entry are used only when the effective user owns them and
 * neither group nor others may write them; entries are opened relative to the folder's
 * descriptor without following symbolic links, and made private (0600, the folder 0700). */

/* Whether a file the cache opened may be trusted; if not, `why` says so. */
static bool trusted(const struct stat *info, const char *what, char *why, size_t size)
{
    if (info->st_uid != geteuid()) {
        snprintf(why, size, "%s is owned by uid %ld, not by the effective user (uid %ld)", what, (long)info->st_uid,
                 (long)geteuid());
        return false;
    }
    if ((info->st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        snprintf(why, size, "%s is writable by group or others (mode %04o)", what, (unsigned)(info->st_mode & 07777));
        return false;
    }
    return true;
}

/* mkdir -p, private to the user. Returns 0 or -1 with errno. */
static int make_folders(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", dir);
    for (char *slash = path + 1;; ++slash) {
        const bool last = *slash == '\0';
        if (*slash != '/' && !last)
            continue;
        *slash = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return -1;
        if (last)
            return 0;
        *slash = '/';
    }
}

/* The cache folder's descriptor (made first when `create`), or -1: with `why` set when the folder
 * is there but not to be trusted, with errno otherwise. */
static int open_folder(bool create, char *why, size_t size)
{
    why[0] = '\0';
    if (create && make_folders(cache.dir) != 0)
        return -1;
    int folder;
    do /* opened directly: the tests fail src/io's OPEN steps to stand for the writer's opens */
        folder = open(cache.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    while (folder < 0 && errno == EINTR);
    struct stat info;
    if (folder < 0)
        return -1;
    if (fstat(folder, &info) != 0 || !trusted(&info, "the folder", why, size)) {
        close(folder);
        return -1;
    }
    return folder;
}

/* An entry opened for reading, or -1: with `why` set when it is there but refused. */
static int open_entry(int folder, const char *name, char *why, size_t size)
{
    why[0] = '\0';
    int fd;
    do
        fd = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        if (errno == ELOOP)
            snprintf(why, size, "it is a symbolic link");
        return -1;
    }
    struct stat info;
    if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode) || !trusted(&info, "it", why, size)) {
        if (why[0] == '\0')
            snprintf(why, size, "it is not a regular file");
        close(fd);
        return -1;
    }
    return fd;
}

static void remove_entry(int folder, const char *name)
{
    unlinkat(folder, name, 0);
}

/* ---- entries ------------------------------------------------------------------------------------ */

/* UNREADABLE: the entry may be good, but reading it failed (an I/O error, no memory): the kernels
 * are compiled instead and the entry is kept, unlike a DAMAGED one, whose bytes are wrong. */
typedef enum entry_read { ENTRY_MISSING, ENTRY_DAMAGED, ENTRY_UNREADABLE, ENTRY_REFUSED, ENTRY_FOUND } entry_read;

/* The driver takes an image without its size: PTX must end in its NUL, and a cubin must at least
 * hold a whole ELF64 header, or the driver would read past the buffer. */
static bool looks_like(const unsigned char *image, size_t size, bool ptx)
{
    if (ptx)
        return size > 0 && image[size - 1] == '\0';
    return size >= 64 && memcmp(image, "\x7f" "ELF", 4) == 0;
}

static entry_read read_entry(int folder, const char *name, const unsigned char key[CB_SHA256_BYTES], bool ptx,
                             cb_cuda_image *out, char *why, size_t why_size)
{
    const int fd = open_entry(folder, name, why, why_size);
    if (fd < 0)
        return why[0] != '\0' ? ENTRY_REFUSED : ENTRY_MISSING;
    struct stat info;
    unsigned char *bytes = NULL;
    entry_read result = ENTRY_UNREADABLE;
    if (fstat(fd, &info) != 0)
        goto done;
    result = ENTRY_DAMAGED;
    if (info.st_size < ENTRY_HEADER_BYTES || (size_t)info.st_size > ENTRY_HEADER_BYTES + ENTRY_MAX_IMAGE_BYTES)
        goto done;
    result = ENTRY_UNREADABLE;
    if ((bytes = cb_malloc((size_t)info.st_size)) == NULL)
        goto done;
    size_t have = 0;
    while (have < (size_t)info.st_size) {
        const ssize_t got = io_read(fd, bytes + have, (size_t)info.st_size - have);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            goto done;
        if (got == 0) { /* shorter than it was a moment ago: cut by someone */
            result = ENTRY_DAMAGED;
            goto done;
        }
        have += (size_t)got;
    }
    result = ENTRY_DAMAGED;
    const size_t image_size = (size_t)info.st_size - ENTRY_HEADER_BYTES;
    unsigned char checksum[CB_SHA256_BYTES];
    cb_sha256_digest(bytes + ENTRY_HEADER_BYTES, image_size, checksum);
    if (memcmp(bytes, ENTRY_MAGIC, 8) != 0 || get_u32(bytes + 8) != ENTRY_FORMAT || get_u32(bytes + 12) != (ptx ? 2u : 1u) ||
        get_u64(bytes + 16) != image_size || memcmp(bytes + 24, key, CB_SHA256_BYTES) != 0 ||
        memcmp(bytes + 56, checksum, CB_SHA256_BYTES) != 0 || !looks_like(bytes + ENTRY_HEADER_BYTES, image_size, ptx))
        goto done;
    memmove(bytes, bytes + ENTRY_HEADER_BYTES, image_size);
    *out = (cb_cuda_image){bytes, image_size, ptx};
    bytes = NULL;
    result = ENTRY_FOUND;
done:
    cb_free(bytes);
    close(fd);
    return result;
}

/* Writes the entry through src/io's one writer: a temporary in the folder, put in place whole.
 * (An entry need not be durable: a cut one fails its checksum and is compiled again.) */
static cblob_status write_entry(const char *name, const unsigned char key[CB_SHA256_BYTES], const cb_cuda_image *image)
{
    unsigned char header[ENTRY_HEADER_BYTES];
    memcpy(header, ENTRY_MAGIC, 8);
    put_u32(header + 8, ENTRY_FORMAT);
    put_u32(header + 12, image->ptx ? 2u : 1u);
    put_u64(header + 16, image->size);
    memcpy(header + 24, key, CB_SHA256_BYTES);
    cb_sha256_digest(image->bytes, image->size, header + 56);

    cb_out_dir *dir = NULL;
    cb_output *output = NULL;
    CB_TRY(cb_out_dir_open(cache.dir, &dir));
    cblob_status status = cb_output_open_in_private(dir, name, &output);
    if (status == CBLOB_OK) {
        /* A failed write fails the commit, which then cleans up. */
        (void)cb_output_write(output, header, sizeof header);
        (void)cb_output_write(output, image->bytes, image->size);
        status = cb_output_commit(output);
    }
    cb_out_dir_close(dir);
    return status;
}

/* The first failed write turns writing off for the process, with one warning in the log of the
 * context that met it. A folder that is not to be trusted turns reading off too. */
static void stop_using_disk(const cb_device *device, bool refused, const char *why)
{
    pthread_mutex_lock(&cache.reason_lock);
    if (!atomic_load(&cache.unwritable))
        snprintf(cache.reason, sizeof cache.reason, "the kernel cache folder %s %s: %s", cache.dir,
                 refused ? "is refused" : "cannot be written", why);
    atomic_store(&cache.unwritable, true);
    if (refused)
        atomic_store(&cache.refused, true);
    pthread_mutex_unlock(&cache.reason_lock);
    if (!atomic_exchange(&cache.warned, true) && device != NULL)
        cb_log_warning(device->log, "warning: %s; compiled kernels are kept in memory for the rest of this process",
                       cache.reason);
}

/* ---- compiling or reading one family --------------------------------------------------------- */

/* Writes a fresh image into the folder (opened, or made, here when `folder` is -1). */
static cblob_status store(int *folder, const char *name, const unsigned char key[CB_SHA256_BYTES],
                          const cb_cuda_image *image, const cb_device *device)
{
    bool refused = false;
    char why[256] = "";
    if (*folder < 0 && (*folder = open_folder(true, why, sizeof why)) < 0 && why[0] == '\0')
        snprintf(why, sizeof why, "%s", strerror(errno));
    else if (*folder < 0)
        refused = true; /* the folder is there, but not to be trusted */
    /* A failed write is no failure of the call that met it: the caller's message stays. */
    cb_saved_error saved;
    cb_error_save(&saved);
    if (*folder >= 0 && write_entry(name, key, image) != CBLOB_OK)
        snprintf(why, sizeof why, "%s", cb_last_error_detail());
    cb_error_restore(&saved);
    if (why[0] == '\0') {
        atomic_fetch_add(&cache.disk_writes, 1);
        return CBLOB_OK;
    }
    if (device != NULL) {
        stop_using_disk(device, refused, why);
        return CBLOB_OK;
    }
    /* warming up for an architecture: writing is the whole point */
    return cb_fail(CBLOB_ERR_IO, "cannot write the kernel cache entry %s/%s: %s", cache.dir, name, why);
}

/* The family's image for a target: a verified disk entry, or a fresh compilation (written to
 * disk when it can be). *from_disk says which; `path` is the entry's name. */
static cblob_status find_or_compile(const cb_cuda_nvrtc *compiler, const cb_cuda_family *family,
                                    const cb_cuda_target *target, const cb_device *device, cb_cuda_image *image,
                                    bool *from_disk, char *path, size_t path_size)
{
    unsigned char key[CB_SHA256_BYTES] = {0};
    char name[NAME_MAX + 1] = "", why[256] = "";
    int folder = -1;
    *from_disk = false;
    path[0] = '\0';
    if (disk_readable()) {
        entry_key(compiler, family, target, key);
        entry_name(family, target, key, name, sizeof name);
        snprintf(path, path_size, "%s/%s", cache.dir, name);
        folder = open_folder(false, why, sizeof why);
        if (folder < 0 && why[0] != '\0' && device != NULL)
            stop_using_disk(device, true, why);
        const entry_read found = folder >= 0 ? read_entry(folder, name, key, target->ptx, image, why, sizeof why) : ENTRY_MISSING;
        if (found == ENTRY_FOUND) {
            close(folder);
            *from_disk = true;
            return CBLOB_OK;
        }
        if (found == ENTRY_DAMAGED) {
            remove_entry(folder, name);
            atomic_fetch_add(&cache.disk_rejected, 1);
        }
        if (found == ENTRY_REFUSED && device != NULL)
            cb_log_warning(device->log, "kernel cache: refused the entry %s (%s); compiling the %s kernels instead", path,
                           why, family->name);
    }
    cblob_status status = cb_cuda_compile(compiler, family, target, image);
    if (status == CBLOB_OK)
        atomic_fetch_add(&cache.compiles, 1);
    /* Warming up for an architecture (no device) tries even after a failed write: it reports. */
    if (status == CBLOB_OK && name[0] != '\0' && (disk_writable() || device == NULL)) {
        status = store(&folder, name, key, image, device);
        if (status != CBLOB_OK)
            cb_cuda_image_free(image);
    }
    if (folder >= 0)
        close(folder);
    return status;
}

static bool image_refused(cbcu_result result)
{
    return result == CBCU_ERROR_INVALID_IMAGE || result == CBCU_ERROR_INVALID_PTX ||
           result == CBCU_ERROR_UNSUPPORTED_PTX_VERSION || result == CBCU_ERROR_NO_BINARY_FOR_GPU ||
           result == CBCU_ERROR_NOT_FOUND;
}

static cblob_status resolve_functions(const cb_cuda_family *family, cbcu_module module, cb_cuda_loaded *loaded)
{
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    loaded->module = module;
    loaded->combine = NULL;
    if (family->combine != NULL)
        CB_TRY(cb_cuda_check(api->cuModuleGetFunction(&loaded->combine, module, family->combine), family->combine));
    for (int row = 0; row < CB_CUDA_DTYPE_ROWS; ++row) {
        loaded->functions[row] = NULL;
        loaded->blocks_per_multiprocessor[row] = 0;
        if (family->kernels[row] == NULL)
            continue;
        CB_TRY(cb_cuda_check(api->cuModuleGetFunction(&loaded->functions[row], module, family->kernels[row]),
                             family->kernels[row]));
        CB_TRY(cb_cuda_check(api->cuOccupancyMaxActiveBlocksPerMultiprocessor(&loaded->blocks_per_multiprocessor[row],
                                                                             loaded->functions[row],
                                                                             CB_CUDA_BLOCK_THREADS, 0),
                             family->kernels[row]));
    }
    return CBLOB_OK;
}

/* Loads a family into the device's context, from the disk cache when a good entry is there.
 * An entry that passed every check is what NVRTC produced, so when the driver refuses it a new
 * compilation would be refused too: the load fails, naming the entry and both versions, and the
 * entry stays. Runs with the device's context current. */
static cblob_status load_family(const cb_device *device, const cb_cuda_device_state *state, cb_cuda_family_id id,
                                cb_cuda_loaded *loaded, bool *compiled)
{
    const cb_cuda_family *family = &cb_cuda_families[id];
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    const cb_cuda_driver *driver = cb_cuda_driver_get();
    const cb_cuda_nvrtc *compiler;
    cb_cuda_target target;
    CB_TRY(cb_cuda_nvrtc_ready(&compiler));
    CB_TRY(cb_cuda_target_for(compiler, driver->version, state->compute_capability, &target));
    cb_cuda_image image = {0};
    bool from_disk = false;
    char path[PATH_MAX + 256];
    CB_TRY(find_or_compile(compiler, family, &target, device, &image, &from_disk, path, sizeof path));
    cbcu_module module = NULL;
    const cbcu_result result = api->cuModuleLoadData(&module, image.bytes);
    cb_cuda_image_free(&image);
    if (result != CBCU_SUCCESS && image_refused(result))
        return cb_fail(CBLOB_ERR_DEVICE,
                       "the driver (CUDA %d.%d) refuses the %s kernels NVRTC %d.%d compiled for %s (%s)%s%s; a driver "
                       "at least as new as NVRTC loads them",
                       driver->version / 1000, driver->version % 1000 / 10, family->name, compiler->major,
                       compiler->minor, target.name, cb_cuda_error_name(result), from_disk ? ", read from " : "",
                       from_disk ? path : "");
    char what[128];
    snprintf(what, sizeof what, "loading the %s kernels (%s)", family->name, target.name);
    CB_TRY(cb_cuda_check(result, what));
    const cblob_status status = resolve_functions(family, module, loaded);
    if (status != CBLOB_OK) {
        api->cuModuleUnload(module);
        return status;
    }
    if (from_disk)
        atomic_fetch_add(&cache.disk_hits, 1);
    *compiled = !from_disk;
    return CBLOB_OK;
}

/* The family on the device, loading it at first use. Off mode hands out a module of its own. */
static cblob_status family_on_device(const cb_device *device, cb_cuda_family_id id, const cb_cuda_loaded **out,
                                     cb_cuda_loaded *transient, bool *compiled)
{
    cb_cuda_device_state *state = cb_cuda_device_state_of(device);
    cb_cuda_family_slot *slot = &state->families[id];
    cb_cuda_loaded *ready = atomic_load_explicit(&slot->ready, memory_order_acquire);
    *compiled = false;
    if (ready != NULL) {
        *out = ready;
        return CBLOB_OK;
    }
    pthread_mutex_lock(&slot->lock);
    cblob_status status = CBLOB_OK;
    ready = atomic_load_explicit(&slot->ready, memory_order_acquire);
    if (ready == NULL) {
        pthread_once(&configure_once, configure);
        const bool keep = cache.requested != CBLOB_KERNEL_CACHE_OFF;
        cb_cuda_loaded *loaded = keep ? cb_malloc(sizeof *loaded) : transient;
        status = loaded == NULL ? cb_fail(CBLOB_ERR_OUT_OF_MEMORY, "no memory for a loaded kernel family") : cb_cuda_enter(state);
        if (status == CBLOB_OK) {
            status = load_family(device, state, id, loaded, compiled);
            cb_cuda_leave();
        }
        if (status == CBLOB_OK && keep)
            atomic_store_explicit(&slot->ready, loaded, memory_order_release);
        else if (keep)
            free(loaded);
        ready = status == CBLOB_OK ? loaded : NULL;
    }
    pthread_mutex_unlock(&slot->lock);
    if (status == CBLOB_OK)
        *out = ready;
    return status;
}

cblob_status cb_cuda_kernel_get(const cb_device *device, cb_cuda_family_id family, cblob_dtype dtype,
                                cb_cuda_kernel *out)
{
    cb_cuda_loaded transient;
    const cb_cuda_loaded *loaded;
    bool compiled;
    CB_TRY(family_on_device(device, family, &loaded, &transient, &compiled));
    out->function = loaded->functions[dtype];
    out->blocks_per_multiprocessor = loaded->blocks_per_multiprocessor[dtype];
    out->combine = loaded->combine;
    out->transient = loaded == &transient ? transient.module : NULL;
    return CBLOB_OK;
}

void cb_cuda_kernel_release(const cb_device *device, cb_cuda_kernel *kernel)
{
    if (kernel->transient == NULL)
        return;
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    if (cb_cuda_enter(cb_cuda_device_state_of(device)) != CBLOB_OK)
        return;
    api->cuStreamSynchronize(cb_cuda_stream(device));
    api->cuModuleUnload(kernel->transient);
    cb_cuda_leave();
    kernel->transient = NULL;
}

/* ---- warming up and forgetting ------------------------------------------------------------ */

static cblob_status warm_up_device(const cb_device *device, int32_t *compiled)
{
    if (cache.requested == CBLOB_KERNEL_CACHE_OFF)
        return cb_fail(CBLOB_ERR_STATE, "the kernel cache is off (CBLOB_KERNEL_CACHE=off): there is nothing to keep");
    int32_t count = 0;
    for (int id = 0; id < CB_CUDA_FAMILY_COUNT; ++id) {
        cb_cuda_loaded transient;
        const cb_cuda_loaded *loaded;
        bool fresh = false;
        CB_TRY(family_on_device(device, (cb_cuda_family_id)id, &loaded, &transient, &fresh));
        count += fresh;
    }
    *compiled = count;
    return CBLOB_OK;
}

static cblob_status warm_up_architecture(int32_t compute_capability, int32_t *compiled)
{
    if (!disk_readable())
        return cb_fail(CBLOB_ERR_STATE,
                       "warming up for compute capability %d needs the disk cache, but it is %s",
                       (int)compute_capability,
                       cache.requested != CBLOB_KERNEL_CACHE_DISK ? "not in use (CBLOB_KERNEL_CACHE)" : "without a folder");
    const cb_cuda_nvrtc *compiler;
    cb_cuda_target target;
    CB_TRY(cb_cuda_nvrtc_ready(&compiler));
    CB_TRY(cb_cuda_target_for(compiler, 0, compute_capability, &target));
    int32_t count = 0;
    for (int id = 0; id < CB_CUDA_FAMILY_COUNT; ++id) {
        cb_cuda_image image = {0};
        bool from_disk = false;
        char path[PATH_MAX + 256];
        CB_TRY(find_or_compile(compiler, &cb_cuda_families[id], &target, NULL, &image, &from_disk, path, sizeof path));
        cb_cuda_image_free(&image);
        count += !from_disk;
    }
    *compiled = count;
    return CBLOB_OK;
}

cblob_status cb_cuda_cache_warm_up(const cb_device *device, int32_t compute_capability, int32_t *compiled)
{
    pthread_once(&configure_once, configure);
    return device != NULL ? warm_up_device(device, compiled) : warm_up_architecture(compute_capability, compiled);
}

void cb_cuda_cache_forget_memory(void)
{
    int count = 0;
    cb_cuda_device_state *states = cb_cuda_device_table(&count);
    const cb_cuda_driver_api *api = cb_cuda_driver_api_get();
    for (int d = 0; d < count; ++d) {
        for (int id = 0; id < CB_CUDA_FAMILY_COUNT; ++id) {
            cb_cuda_loaded *loaded = atomic_exchange(&states[d].families[id].ready, NULL);
            if (loaded == NULL)
                continue;
            if (cb_cuda_enter(&states[d]) == CBLOB_OK) {
                api->cuModuleUnload(loaded->module);
                cb_cuda_leave();
            }
            free(loaded);
        }
    }
}
