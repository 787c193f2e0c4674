/*
 * bolog: LD_PRELOAD logger for panthor buffer-object allocations.
 *
 * Sits in LD_PRELOAD *before* the DRM shim (or alone on a real board), wraps
 * ioctl(), and records every DRM_IOCTL_PANTHOR_BO_CREATE: requested size,
 * result, errno, running live total and peak. GEM_CLOSE is tracked so the live
 * total goes down again. Any failing panthor ioctl is logged with its errno,
 * which on real hardware shows which allocation turns into
 * VK_ERROR_OUT_OF_DEVICE_MEMORY.
 *
 * Environment:
 *   BOLOG=1          print one line per BO_CREATE (default: only failures)
 *   BOLOG_MIN=BYTES  print only BOs of at least this size
 *   BOLOG_FILE=PATH  append lines to PATH instead of stderr
 *
 * Programs that know about the logger (the spill-report harness) look up
 * bolog_phase()/bolog_phase_stats() with dlsym() to attribute BOs to phases
 * such as "compile", "record" and "end" (vkEndCommandBuffer).
 *
 * The panthor uAPI structs are declared here (stable kernel uAPI, see
 * include/uapi/drm/panthor_drm.h) so the logger builds without kernel headers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#define DRM_IOCTL_BASE 'd'
#define DRM_COMMAND_BASE 0x40

struct panthor_bo_create {
    uint64_t size;
    uint32_t flags;
    uint32_t exclusive_vm_id;
    uint32_t handle;
    uint32_t pad;
};

struct gem_close {
    uint32_t handle;
    uint32_t pad;
};

#define REQ_BO_CREATE _IOWR(DRM_IOCTL_BASE, DRM_COMMAND_BASE + 0x05, struct panthor_bo_create)
#define REQ_GEM_CLOSE _IOW(DRM_IOCTL_BASE, 0x09, struct gem_close)

#define MAX_HANDLES 65536
#define MAX_PHASES 32
#define PHASE_NAME 32

struct phase {
    char name[PHASE_NAME];
    uint64_t count, bytes, largest, failures;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int (*real_ioctl)(int, unsigned long, ...);
static uint64_t handle_size[MAX_HANDLES];
static uint64_t live, peak, total_count, total_failures;
static struct phase phases[MAX_PHASES];
static int nphases, cur = -1;
static int verbose = -1;
static uint64_t min_print;
static FILE *out;

static void init_locked(void)
{
    if (verbose >= 0)
        return;
    const char *v = getenv("BOLOG");
    verbose = v && *v && strcmp(v, "0") != 0;
    const char *m = getenv("BOLOG_MIN");
    min_print = m ? strtoull(m, NULL, 0) : 0;
    const char *f = getenv("BOLOG_FILE");
    out = f ? fopen(f, "a") : NULL;
    if (!out)
        out = stderr;
    real_ioctl = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
}

static void emit(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("[bolog] ", out);
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    fflush(out);
    va_end(ap);
}

static struct phase *current_phase(void)
{
    return cur >= 0 ? &phases[cur] : NULL;
}

/* Start (or re-enter) a named phase; BOs created from now on count towards it. */
void bolog_phase(const char *name)
{
    pthread_mutex_lock(&lock);
    init_locked();
    cur = -1;
    for (int i = 0; i < nphases; i++)
        if (strncmp(phases[i].name, name, PHASE_NAME - 1) == 0)
            cur = i;
    if (cur < 0 && nphases < MAX_PHASES) {
        cur = nphases++;
        snprintf(phases[cur].name, PHASE_NAME, "%s", name);
    }
    if (verbose)
        emit("phase %s live=%llu", name, (unsigned long long)live);
    pthread_mutex_unlock(&lock);
}

/* Totals of a phase: returns 0 if the phase is unknown. */
int bolog_phase_stats(const char *name, uint64_t *count, uint64_t *bytes, uint64_t *largest,
                      uint64_t *failures)
{
    int found = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nphases; i++) {
        if (strncmp(phases[i].name, name, PHASE_NAME - 1) == 0) {
            *count = phases[i].count;
            *bytes = phases[i].bytes;
            *largest = phases[i].largest;
            *failures = phases[i].failures;
            found = 1;
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
}

void bolog_totals(uint64_t *live_out, uint64_t *peak_out, uint64_t *count, uint64_t *failures)
{
    pthread_mutex_lock(&lock);
    *live_out = live;
    *peak_out = peak;
    *count = total_count;
    *failures = total_failures;
    pthread_mutex_unlock(&lock);
}

int ioctl(int fd, unsigned long request, ...)
{
    va_list ap;
    va_start(ap, request);
    void *arg = va_arg(ap, void *);
    va_end(ap);

    pthread_mutex_lock(&lock);
    init_locked();
    pthread_mutex_unlock(&lock);
    if (!real_ioctl) {
        errno = ENOSYS;
        return -1;
    }

    uint32_t closing = 0;
    if (request == REQ_GEM_CLOSE && arg)
        closing = ((struct gem_close *)arg)->handle;
    uint64_t asked = 0;
    if (request == REQ_BO_CREATE && arg)
        asked = ((struct panthor_bo_create *)arg)->size;

    int ret = real_ioctl(fd, request, arg);
    int saved = errno;

    pthread_mutex_lock(&lock);
    if (request == REQ_BO_CREATE && arg) {
        struct panthor_bo_create *c = arg;
        struct phase *p = current_phase();
        total_count++;
        if (ret == 0) {
            /* The kernel may round the size up; account what it reports. */
            uint64_t got = c->size ? c->size : asked;
            if (c->handle < MAX_HANDLES)
                handle_size[c->handle] = got;
            live += got;
            if (live > peak)
                peak = live;
            if (p) {
                p->count++;
                p->bytes += got;
                if (got > p->largest)
                    p->largest = got;
            }
            if (verbose && got >= min_print)
                emit("BO_CREATE size=%llu (%.1f MiB) handle=%u live=%llu (%.1f MiB) phase=%s",
                     (unsigned long long)got, got / 1048576.0, c->handle,
                     (unsigned long long)live, live / 1048576.0, p ? p->name : "-");
        } else {
            total_failures++;
            if (p)
                p->failures++;
            emit("BO_CREATE FAILED size=%llu (%.1f MiB) ret=%d errno=%d (%s) live=%llu (%.1f MiB) phase=%s",
                 (unsigned long long)asked, asked / 1048576.0, ret, saved, strerror(saved),
                 (unsigned long long)live, live / 1048576.0, p ? p->name : "-");
        }
    } else if (request == REQ_GEM_CLOSE && ret == 0 && closing < MAX_HANDLES) {
        live -= handle_size[closing];
        handle_size[closing] = 0;
    } else if (ret < 0 && _IOC_TYPE(request) == DRM_IOCTL_BASE &&
               _IOC_NR(request) >= DRM_COMMAND_BASE) {
        emit("ioctl nr=0x%02x FAILED ret=%d errno=%d (%s) live=%llu", _IOC_NR(request), ret,
             saved, strerror(saved), (unsigned long long)live);
    }
    pthread_mutex_unlock(&lock);

    errno = saved;
    return ret;
}
