/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NVML through dlopen (there is no nvml.h in Debian main: the few types and
 * signatures used are declared here, ABI-compatible with NVIDIA's header).
 * Discovery (UUID, minor, name, memory, PCI bus id → NUMA node, MIG mode)
 * and the XID event set. Runs on the loop's thread, except
 * gpu_nvml_events_wait() which the health thread calls.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/util/cleanup.h"
#include "agent/util/log.h"
#include "agent/util/parse.h"
#include "agent/util/time.h"
#include "deviceplugin/deviceplugin.h"
#include "deviceplugin/gpu/gpu-internal.h"

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct nvmlPciInfo_st {
        char busIdLegacy[16];
        unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
        char busId[32];
} nvmlPciInfo_t;
typedef struct nvmlMemory_st {
        unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct nvmlEventData_st {
        nvmlDevice_t device;
        unsigned long long eventType, eventData;
        unsigned gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

enum {
        NVML_SUCCESS = 0,
        NVML_ERROR_NOT_SUPPORTED = 3,
        NVML_ERROR_TIMEOUT = 10,
};
#define NVML_EVENT_SINGLE_BIT_ECC 0x1ULL
#define NVML_EVENT_DOUBLE_BIT_ECC 0x2ULL

struct GpuNvml {
        void *dl;
        char *library;
        bool initialized;
        nvmlReturn_t (*init)(void);
        nvmlReturn_t (*shutdown)(void);
        const char *(*error_string)(nvmlReturn_t);
        nvmlReturn_t (*count)(unsigned *);
        nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *);
        nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned);
        nvmlReturn_t (*minor)(nvmlDevice_t, unsigned *);
        /* optional */
        nvmlReturn_t (*driver_version)(char *, unsigned);
        nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned);
        nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
        nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t *);
        nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned *, unsigned *);
        nvmlReturn_t (*set_create)(nvmlEventSet_t *);
        nvmlReturn_t (*supported_events)(nvmlDevice_t, unsigned long long *);
        nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
        nvmlReturn_t (*set_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned);
        nvmlReturn_t (*set_free)(nvmlEventSet_t);
        nvmlReturn_t (*pages_pending)(nvmlDevice_t, int *);
        nvmlReturn_t (*remapped_rows)(nvmlDevice_t, unsigned *, unsigned *, unsigned *, unsigned *);
        nvmlEventSet_t set;
        GpuDevice *devs;
        size_t n_devs;
        char driver[96];
};

static const char *nv_strerror(const GpuNvml *nv, nvmlReturn_t r) {
        const char *s = nv->error_string ? nv->error_string(r) : NULL;

        return s ? s : "unknown NVML error";
}

/* POSIX-blessed cast from dlsym's void * to a function pointer */
#define LOAD(nv, field, sym) (*(void **) &(nv)->field = dlsym((nv)->dl, (sym)))

GpuNvml *gpu_nvml_close(GpuNvml *nv) {
        if (!nv)
                return NULL;
        if (nv->set && nv->set_free)
                (void) nv->set_free(nv->set);
        if (nv->initialized && nv->shutdown)
                (void) nv->shutdown();
        if (nv->dl)
                (void) dlclose(nv->dl);
        free(nv->devs);
        free(nv->library);
        free(nv);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(GpuNvml *, gpu_nvml_close);

/* "00000000:3B:00.0" → "0000:3b:00.0" (the domain trimmed to 4 hex digits) */
static void bus_id_normalize(const char *in, char *out, size_t size) {
        const char *colon = strchr(in, ':');
        size_t n = 0;

        if (colon && colon - in > 4)
                in = colon - 4;
        for (; *in && n + 1 < size; in++)
                out[n++] = (char) (*in >= 'A' && *in <= 'F' ? *in - 'A' + 'a' : *in);
        out[n] = '\0';
}

static int read_numa_node(const char *sys_root, const char *bus_id) {
        _cleanup_free_ char *path = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        char line[32];
        int32_t v;

        if (asprintf(&path, "%s/bus/pci/devices/%s/numa_node", sys_root, bus_id) < 0)
                return -1;
        f = fopen(path, "re");
        if (!f || !fgets(line, sizeof(line), f))
                return -1;
        line[strcspn(line, "\n")] = '\0';
        if (cub_safe_atoi32(line, &v) < 0 || v < 0)
                return -1;
        return (int) v;
}

/* an optional call's failure: logged once per kind, ignored */
static void optional_failed(GpuNvml *nv, bool *logged, const char *sym, nvmlReturn_t r) {
        if (*logged)
                return;
        *logged = true;
        if (r == NVML_ERROR_NOT_SUPPORTED)
                cub_log(LOG_INFO, "NVML '%s': %s is not supported, ignoring", nv->library, sym);
        else
                cub_log(LOG_WARNING, "NVML '%s': %s: %s (%d), ignoring", nv->library, sym, nv_strerror(nv, r), r);
}

static int discover(GpuNvml *nv, const char *sys_root, CubError *err) {
        bool logged_name = false, logged_mem = false, logged_pci = false, logged_mig = false;
        unsigned n = 0;
        nvmlReturn_t r;

        r = nv->count(&n);
        if (r != NVML_SUCCESS)
                return cub_err_set(err, EIO, "NVML '%s': nvmlDeviceGetCount_v2: %s (%d)", nv->library,
                                   nv_strerror(nv, r), r);
        nv->devs = calloc(n ? n : 1, sizeof(*nv->devs));
        if (!nv->devs)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (unsigned i = 0; i < n; i++) {
                GpuDevice *d = &nv->devs[i];
                nvmlDevice_t h = NULL;
                nvmlPciInfo_t pci = { 0 };
                nvmlMemory_t mem = { 0 };
                unsigned mig = 0, mig_pending = 0;

                r = nv->by_index(i, &h);
                if (r == NVML_SUCCESS)
                        r = nv->uuid(h, d->uuid, sizeof(d->uuid));
                if (r == NVML_SUCCESS)
                        r = nv->minor(h, &d->minor);
                if (r != NVML_SUCCESS)
                        return cub_err_set(err, EIO, "NVML '%s': GPU %u: %s (%d)", nv->library, i, nv_strerror(nv, r),
                                           r);
                d->uuid[sizeof(d->uuid) - 1] = '\0';
                if (strlen(d->uuid) + strlen("::1023") >= DP_ID_MAX)
                        return cub_err_set(err, EINVAL, "NVML '%s': GPU %u: UUID '%s' is too long", nv->library, i,
                                           d->uuid);
                d->handle = h;
                d->index = i;
                d->numa = -1;
                d->healthy = true;
                if (nv->name && (r = nv->name(h, d->name, sizeof(d->name))) != NVML_SUCCESS)
                        optional_failed(nv, &logged_name, "nvmlDeviceGetName", r);
                d->name[sizeof(d->name) - 1] = '\0';
                if (nv->memory && (r = nv->memory(h, &mem)) != NVML_SUCCESS)
                        optional_failed(nv, &logged_mem, "nvmlDeviceGetMemoryInfo", r);
                if (nv->pci && (r = nv->pci(h, &pci)) != NVML_SUCCESS)
                        optional_failed(nv, &logged_pci, "nvmlDeviceGetPciInfo_v3", r);
                else if (nv->pci) {
                        pci.busId[sizeof(pci.busId) - 1] = '\0';
                        bus_id_normalize(pci.busId, d->bus_id, sizeof(d->bus_id));
                        d->numa = read_numa_node(sys_root, d->bus_id);
                }
                if (nv->mig_mode && (r = nv->mig_mode(h, &mig, &mig_pending)) != NVML_SUCCESS)
                        optional_failed(nv, &logged_mig, "nvmlDeviceGetMigMode", r);
                else if (nv->mig_mode && mig)
                        cub_log(LOG_WARNING,
                                "GPU %u '%s' has MIG enabled: advertising the whole GPU, MIG devices are not split", i,
                                d->uuid);
                cub_log(LOG_INFO, "GPU %u: '%s' %s, /dev/nvidia%u, PCI %s, NUMA node %d, %llu MiB", i, d->uuid,
                        d->name[0] ? d->name : "(no name)", d->minor, d->bus_id[0] ? d->bus_id : "?", d->numa,
                        mem.total / (1024ULL * 1024ULL));
        }
        nv->n_devs = n;
        return 0;
}

int gpu_nvml_open(const char *library, const char *sys_root, GpuNvml **ret, CubError *err) {
        _cleanup_(gpu_nvml_closep) GpuNvml *nv = NULL;
        static const char *const required[] = { "nvmlInit_v2",
                                                "nvmlShutdown",
                                                "nvmlErrorString",
                                                "nvmlDeviceGetCount_v2",
                                                "nvmlDeviceGetHandleByIndex_v2",
                                                "nvmlDeviceGetUUID",
                                                "nvmlDeviceGetMinorNumber" };
        nvmlReturn_t r;

        nv = calloc(1, sizeof(*nv));
        if (!nv || !(nv->library = strdup(library)))
                return cub_err_set(err, ENOMEM, "out of memory");
        nv->dl = dlopen(library, RTLD_NOW | RTLD_LOCAL);
        if (!nv->dl)
                return cub_err_set(err, ENOENT, "cannot load NVML '%s': %s", library, dlerror());
        LOAD(nv, init, required[0]);
        LOAD(nv, shutdown, required[1]);
        LOAD(nv, error_string, required[2]);
        LOAD(nv, count, required[3]);
        LOAD(nv, by_index, required[4]);
        LOAD(nv, uuid, required[5]);
        LOAD(nv, minor, required[6]);
        for (size_t i = 0; i < ELEMENTSOF(required); i++)
                if (!dlsym(nv->dl, required[i]))
                        return cub_err_set(err, ENOENT, "NVML '%s' lacks '%s'", library, required[i]);
        LOAD(nv, driver_version, "nvmlSystemGetDriverVersion");
        LOAD(nv, name, "nvmlDeviceGetName");
        LOAD(nv, memory, "nvmlDeviceGetMemoryInfo");
        LOAD(nv, pci, "nvmlDeviceGetPciInfo_v3");
        LOAD(nv, mig_mode, "nvmlDeviceGetMigMode");
        LOAD(nv, set_create, "nvmlEventSetCreate");
        LOAD(nv, supported_events, "nvmlDeviceGetSupportedEventTypes");
        LOAD(nv, register_events, "nvmlDeviceRegisterEvents");
        LOAD(nv, set_wait, "nvmlEventSetWait_v2");
        LOAD(nv, set_free, "nvmlEventSetFree");
        LOAD(nv, pages_pending, "nvmlDeviceGetRetiredPagesPendingStatus");
        LOAD(nv, remapped_rows, "nvmlDeviceGetRemappedRows");
        if (!nv->name || !nv->memory || !nv->pci || !nv->mig_mode || !nv->driver_version)
                cub_log(LOG_INFO, "NVML '%s' lacks some optional calls (name, memory, PCI/NUMA, MIG mode), ignoring",
                        library);

        r = nv->init();
        if (r != NVML_SUCCESS)
                return cub_err_set(err, EIO, "NVML '%s': nvmlInit_v2: %s (%d)", library, nv_strerror(nv, r), r);
        nv->initialized = true;
        if (nv->driver_version && (r = nv->driver_version(nv->driver, sizeof(nv->driver))) != NVML_SUCCESS) {
                bool logged = false;

                optional_failed(nv, &logged, "nvmlSystemGetDriverVersion", r);
                nv->driver[0] = '\0';
        }
        nv->driver[sizeof(nv->driver) - 1] = '\0';
        r = discover(nv, sys_root, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(nv);
        return 0;
}

const GpuDevice *gpu_nvml_devices(const GpuNvml *nv, size_t *ret_n) {
        *ret_n = nv->n_devs;
        return nv->devs;
}

const char *gpu_nvml_driver_version(const GpuNvml *nv) {
        return nv->driver;
}

int gpu_nvml_events_open(GpuNvml *nv, CubError *err) {
        static const char *const syms[] = { "nvmlEventSetCreate", "nvmlDeviceGetSupportedEventTypes",
                                            "nvmlDeviceRegisterEvents", "nvmlEventSetWait_v2", "nvmlEventSetFree" };
        nvmlReturn_t r;

        for (size_t i = 0; i < ELEMENTSOF(syms); i++)
                if (!dlsym(nv->dl, syms[i]))
                        return cub_err_set(err, EOPNOTSUPP, "NVML '%s' lacks '%s'", nv->library, syms[i]);
        r = nv->set_create(&nv->set);
        if (r != NVML_SUCCESS) {
                nv->set = NULL;
                return cub_err_set(err, EOPNOTSUPP, "NVML '%s': nvmlEventSetCreate: %s (%d)", nv->library,
                                   nv_strerror(nv, r), r);
        }
        for (size_t i = 0; i < nv->n_devs; i++) {
                GpuDevice *d = &nv->devs[i];
                unsigned long long mask = GPU_EVENT_XID_CRITICAL | NVML_EVENT_DOUBLE_BIT_ECC |
                                          NVML_EVENT_SINGLE_BIT_ECC,
                                   supported = 0;

                r = nv->supported_events(d->handle, &supported);
                if (r != NVML_SUCCESS) {
                        cub_log(LOG_WARNING, "GPU '%s': nvmlDeviceGetSupportedEventTypes: %s (%d), ignoring", d->uuid,
                                nv_strerror(nv, r), r);
                        continue;
                }
                r = nv->register_events(d->handle, mask & supported, nv->set);
                if (r == NVML_ERROR_NOT_SUPPORTED)
                        cub_log(LOG_WARNING, "GPU '%s' is too old for health checks, it stays healthy", d->uuid);
                else if (r != NVML_SUCCESS) {
                        cub_log(LOG_ERR, "GPU '%s': nvmlDeviceRegisterEvents: %s (%d), marking it unhealthy", d->uuid,
                                nv_strerror(nv, r), r);
                        d->healthy = false;
                }
        }
        return 0;
}

int gpu_nvml_events_wait(GpuNvml *nv, unsigned timeout_ms, char *ret_uuid, size_t uuid_size,
                         unsigned long long *ret_type, unsigned long long *ret_xid, CubError *err) {
        nvmlEventData_t ev = { 0 };
        nvmlReturn_t r;

        r = nv->set_wait(nv->set, &ev, timeout_ms);
        if (r == NVML_ERROR_TIMEOUT)
                return 0;
        if (r != NVML_SUCCESS)
                return cub_err_set(err, EIO, "nvmlEventSetWait_v2: %s (%d)", nv_strerror(nv, r), r);
        if (!(ev.eventType & GPU_EVENT_XID_CRITICAL)) {
                cub_log(LOG_INFO, "NVML event 0x%llx (data %llu), ignoring", ev.eventType, ev.eventData);
                return 0;
        }
        ret_uuid[0] = '\0';
        for (size_t i = 0; i < nv->n_devs; i++)
                if (ev.device && nv->devs[i].handle == (void *) ev.device) {
                        (void) snprintf(ret_uuid, uuid_size, "%s", nv->devs[i].uuid);
                        break;
                }
        if (!ret_uuid[0] && ev.device && nv->uuid(ev.device, ret_uuid, (unsigned) uuid_size) != NVML_SUCCESS)
                ret_uuid[0] = '\0';
        *ret_type = ev.eventType;
        *ret_xid = ev.eventData;
        return 1;
}

int gpu_nvml_probe(GpuNvml *nv, const char *uuid, CubError *err) {
        const GpuDevice *d = NULL;
        nvmlMemory_t mem = { 0 };
        char again[GPU_UUID_MAX] = "";
        unsigned corr = 0, unc = 0, pending = 0, failed = 0;
        int retire = 0;
        nvmlReturn_t r;

        for (size_t i = 0; i < nv->n_devs && !d; i++)
                if (strcmp(nv->devs[i].uuid, uuid) == 0)
                        d = &nv->devs[i];
        if (!d)
                return cub_err_set(err, ENOENT, "GPU '%s' is not one NVML found", uuid);
        r = nv->uuid(d->handle, again, sizeof(again));
        if (r != NVML_SUCCESS)
                return cub_err_set(err, EIO, "nvmlDeviceGetUUID: %s (%d)", nv_strerror(nv, r), r);
        if (nv->memory && (r = nv->memory(d->handle, &mem)) != NVML_SUCCESS && r != NVML_ERROR_NOT_SUPPORTED)
                return cub_err_set(err, EIO, "nvmlDeviceGetMemoryInfo: %s (%d)", nv_strerror(nv, r), r);
        if (nv->pages_pending && nv->pages_pending(d->handle, &retire) == NVML_SUCCESS && retire)
                return cub_err_set(err, EBUSY, "a page retirement is pending (the GPU needs a reset)");
        if (nv->remapped_rows && nv->remapped_rows(d->handle, &corr, &unc, &pending, &failed) == NVML_SUCCESS) {
                if (failed)
                        return cub_err_set(err, EBUSY, "a row remapping failed");
                if (pending)
                        return cub_err_set(err, EBUSY, "a row remapping is pending (the GPU needs a reset)");
        }
        return 0;
}

/* ---- the health thread ------------------------------------------------------ */

struct GpuHealth {
        GpuNvml *nv;
        GpuState *st;
        GpuXidPolicy pol;
        uint64_t recheck_usec; /* 0: unhealthy is terminal */
        uint64_t *next;        /* per GPU of nv: when to probe it again, 0: not ours to probe */
        bool *logged;          /* per GPU: its failed probe was logged */
        pthread_t thread;
        atomic_bool stop;
};

#define HEALTH_WAIT_MS 5000U

/* uuid ("" = all) made unhealthy by the health thread: probed after a period */
static void quarantine(GpuHealth *h, const char *uuid) {
        uint64_t due = cub_now_usec(CLOCK_MONOTONIC) + h->recheck_usec;

        (void) gpu_state_set_health(h->st, uuid, false);
        if (h->recheck_usec == 0)
                return;
        for (size_t i = 0; i < h->nv->n_devs; i++)
                if (!uuid[0] || strcmp(h->nv->devs[i].uuid, uuid) == 0) {
                        h->next[i] = due;
                        h->logged[i] = false;
                }
}

/* the GPUs whose period is over: healthy again when NVML says they work */
static void recheck(GpuHealth *h) {
        uint64_t now = cub_now_usec(CLOCK_MONOTONIC);

        for (size_t i = 0; i < h->nv->n_devs; i++) {
                const char *uuid = h->nv->devs[i].uuid;
                CubError err = { 0 };

                if (h->next[i] == 0 || now < h->next[i])
                        continue;
                if (gpu_nvml_probe(h->nv, uuid, &err) < 0) {
                        if (!h->logged[i])
                                cub_log(LOG_INFO, "GPU '%s' is still unusable: %s; checking every %llu s", uuid,
                                        err.msg, (unsigned long long) (h->recheck_usec / CUB_USEC_PER_SEC));
                        h->logged[i] = true;
                        h->next[i] = now + h->recheck_usec;
                        continue;
                }
                h->next[i] = 0;
                if (gpu_state_set_health(h->st, uuid, true) > 0)
                        cub_log(LOG_NOTICE, "GPU '%s' works again (NVML answers, nothing pending): healthy", uuid);
        }
}

static void *health_main(void *arg) {
        GpuHealth *h = arg;
        char last[CUB_ERR_MSG_MAX] = "";
        unsigned wait_ms = HEALTH_WAIT_MS;

        if (h->recheck_usec > 0 && h->recheck_usec / CUB_USEC_PER_MSEC < wait_ms)
                wait_ms = (unsigned) (h->recheck_usec / CUB_USEC_PER_MSEC);
        while (!atomic_load(&h->stop)) {
                char uuid[GPU_UUID_MAX];
                unsigned long long type = 0, xid = 0;
                CubError err = { 0 };
                int r = gpu_nvml_events_wait(h->nv, wait_ms, uuid, sizeof(uuid), &type, &xid, &err);

                if (r < 0) {
                        if (strcmp(last, err.msg) != 0) {
                                (void) snprintf(last, sizeof(last), "%s", err.msg);
                                cub_log(LOG_ERR, "health check: %s: marking every GPU unhealthy", err.msg);
                        }
                        quarantine(h, "");
                        (void) nanosleep(&(struct timespec){ .tv_sec = 1 }, NULL);
                        continue;
                }
                last[0] = '\0';
                if (r > 0 && !gpu_xid_is_critical(&h->pol, type, xid))
                        cub_log(LOG_INFO, "GPU '%s': XID %llu is not critical (--health-ignore-xids), ignoring",
                                uuid[0] ? uuid : "?", xid);
                else if (r > 0) {
                        cub_log(LOG_WARNING, "GPU '%s': critical XID %llu, marking %s unhealthy", uuid[0] ? uuid : "?",
                                xid, uuid[0] ? "it" : "every GPU");
                        quarantine(h, uuid);
                }
                recheck(h);
        }
        return NULL;
}

static GpuHealth *health_free(GpuHealth *h) {
        if (h) {
                free(h->next);
                free(h->logged);
                free(h);
        }
        return NULL;
}

int gpu_health_start(GpuNvml *nv, GpuState *st, const GpuXidPolicy *pol, uint64_t recheck_usec, GpuHealth **ret,
                     CubError *err) {
        GpuHealth *h;
        int r;

        h = calloc(1, sizeof(*h));
        if (!h || !(h->next = calloc(nv->n_devs + 1, sizeof(*h->next))) ||
            !(h->logged = calloc(nv->n_devs + 1, sizeof(*h->logged)))) {
                health_free(h);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        h->nv = nv;
        h->st = st;
        h->pol = *pol;
        h->recheck_usec = recheck_usec;
        atomic_init(&h->stop, false);
        r = pthread_create(&h->thread, NULL, health_main, h);
        if (r != 0) {
                health_free(h);
                return cub_err_set(err, r, "cannot start the health thread: %s", strerror(r));
        }
        *ret = h;
        return 0;
}

/* Joins the thread: at most one nvmlEventSetWait_v2 timeout (5 s). */
GpuHealth *gpu_health_stop(GpuHealth *h) {
        if (!h)
                return NULL;
        atomic_store(&h->stop, true);
        (void) pthread_join(h->thread, NULL);
        return health_free(h);
}
