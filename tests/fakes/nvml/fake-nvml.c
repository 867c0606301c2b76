/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake libnvidia-ml.so.1 for cubelet-gpu-plugin's tests: the NVML calls
 * the plugin resolves, over GPUs and XID events read from the file named by
 * $FAKE_NVML_CONFIG:
 *
 *     gpu <uuid> <minor> <pci-bus-id> <name, the rest of the line>
 *     xid <uuid> <xid>          (appended later; '*' or an unknown uuid: an
 *                                event whose device NVML cannot name)
 *     lost <uuid>               (appended later: from then on the GPU's
 *                                nvmlDeviceGetMemoryInfo answers GPU_IS_LOST)
 *     pending <uuid>            (its nvmlDeviceGetRetiredPagesPendingStatus
 *                                answers pending)
 *     ok <uuid>                 (it works again: the last of these three
 *                                lines for a GPU is its state)
 *
 * GPUs are read by nvmlInit_v2. nvmlEventSetWait_v2 re-reads the file every
 * 20 ms until its timeout and returns each complete xid line once, in file
 * order, as an XidCriticalError event. Lines without a newline yet, blank
 * lines, comments (#) and malformed lines are skipped.
 *
 * Failure knobs: FAKE_NVML_INIT_FAIL=<code> (nvmlInit_v2 returns it, e.g. 9
 * DRIVER_NOT_LOADED); FAKE_NVML_NO_EVENTS=1 (nvmlEventSetCreate returns
 * NOT_SUPPORTED); FAKE_NVML_MIG=1 (every GPU reports MIG enabled).
 * The types are declared here on their own, as NVIDIA's nvml.h has them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct {
        char busIdLegacy[16];
        unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
        char busId[32];
} nvmlPciInfo_t;
typedef struct {
        unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
        nvmlDevice_t device;
        unsigned long long eventType, eventData;
        unsigned gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

#define EXPORT __attribute__((visibility("default")))
#define MAX_GPUS 16

enum {
        OK = 0,
        UNINITIALIZED = 1,
        INVALID_ARGUMENT = 2,
        NOT_SUPPORTED = 3,
        NOT_FOUND = 6,
        INSUFFICIENT_SIZE = 7,
        TIMEOUT = 10,
        GPU_IS_LOST = 15,
        UNKNOWN = 999,
};

struct nvmlDevice_st {
        char uuid[96];
        unsigned minor;
        char bus_id[24];
        char name[96];
};

struct nvmlEventSet_st {
        int unused;
};

static struct nvmlDevice_st gpus[MAX_GPUS];
static unsigned n_gpus;
static int initialized;
static struct nvmlEventSet_st the_set;
static unsigned xids_seen; /* xid lines returned so far */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int env_int(const char *name) {
        const char *e = getenv(name);
        char *end;
        long v;

        if (!e || !e[0])
                return 0;
        errno = 0;
        v = strtol(e, &end, 10);
        if (errno || *end || v < 0 || v > 100000)
                return 0;
        return (int) v;
}

/* n-th xid line (0-based) of the config; 1 when there is one */
static int read_xid(unsigned want, char *uuid, size_t uuid_size, unsigned long long *xid) {
        const char *path = getenv("FAKE_NVML_CONFIG");
        char line[512];
        unsigned n = 0;
        FILE *f;
        int found = 0;

        if (!path || !(f = fopen(path, "re")))
                return 0;
        while (!found && fgets(line, sizeof(line), f)) {
                char u[96], extra;
                unsigned long long x;

                if (!strchr(line, '\n'))
                        break; /* a line still being written */
                if (sscanf(line, "xid %95s %llu %c", u, &x, &extra) != 2)
                        continue;
                if (n++ == want) {
                        (void) snprintf(uuid, uuid_size, "%s", u);
                        *xid = x;
                        found = 1;
                }
        }
        fclose(f);
        return found;
}

/* the GPU's state from its last lost/pending/ok line: 'l', 'p' or 0 */
static int read_state(const char *uuid) {
        const char *path = getenv("FAKE_NVML_CONFIG");
        char line[512];
        int state = 0;
        FILE *f;

        if (!path || !(f = fopen(path, "re")))
                return 0;
        while (fgets(line, sizeof(line), f)) {
                char kind[16], u[96], extra;

                if (!strchr(line, '\n'))
                        break;
                if (sscanf(line, "%15s %95s %c", kind, u, &extra) != 2 || strcmp(u, uuid) != 0)
                        continue;
                if (strcmp(kind, "lost") == 0)
                        state = 'l';
                else if (strcmp(kind, "pending") == 0)
                        state = 'p';
                else if (strcmp(kind, "ok") == 0)
                        state = 0;
        }
        fclose(f);
        return state;
}

static void read_gpus(void) {
        const char *path = getenv("FAKE_NVML_CONFIG");
        char line[512];
        FILE *f;

        n_gpus = 0;
        if (!path || !(f = fopen(path, "re")))
                return;
        while (n_gpus < MAX_GPUS && fgets(line, sizeof(line), f)) {
                struct nvmlDevice_st *g = &gpus[n_gpus];
                int name_at = 0;

                line[strcspn(line, "\n")] = '\0';
                memset(g, 0, sizeof(*g));
                if (sscanf(line, "gpu %95s %u %23s %n", g->uuid, &g->minor, g->bus_id, &name_at) < 3)
                        continue;
                if (name_at > 0)
                        (void) snprintf(g->name, sizeof(g->name), "%s", line + name_at);
                n_gpus++;
        }
        fclose(f);
}

static int valid(nvmlDevice_t d) {
        return initialized && d >= gpus && d < gpus + n_gpus;
}

static nvmlReturn_t copy_str(char *buf, unsigned len, const char *s) {
        if (!buf)
                return INVALID_ARGUMENT;
        if (strlen(s) + 1 > len)
                return INSUFFICIENT_SIZE;
        memcpy(buf, s, strlen(s) + 1);
        return OK;
}

EXPORT nvmlReturn_t nvmlInit_v2(void) {
        int fail = env_int("FAKE_NVML_INIT_FAIL");

        if (fail)
                return fail;
        pthread_mutex_lock(&lock);
        read_gpus();
        initialized = 1;
        xids_seen = 0;
        pthread_mutex_unlock(&lock);
        return OK;
}

EXPORT nvmlReturn_t nvmlShutdown(void) {
        if (!initialized)
                return UNINITIALIZED;
        initialized = 0;
        return OK;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t r) {
        switch (r) {
        case OK:
                return "Success";
        case UNINITIALIZED:
                return "Uninitialized";
        case INVALID_ARGUMENT:
                return "Invalid Argument";
        case NOT_SUPPORTED:
                return "Not Supported";
        case NOT_FOUND:
                return "Not Found";
        case 9:
                return "Driver Not Loaded";
        case TIMEOUT:
                return "Timeout";
        case GPU_IS_LOST:
                return "GPU is lost";
        default:
                return "Unknown Error";
        }
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned len) {
        return copy_str(buf, len, "535.00-fake");
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count) {
        if (!initialized)
                return UNINITIALIZED;
        *count = n_gpus;
        return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned idx, nvmlDevice_t *dev) {
        if (!initialized)
                return UNINITIALIZED;
        if (idx >= n_gpus)
                return INVALID_ARGUMENT;
        *dev = &gpus[idx];
        return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned len) {
        return valid(d) ? copy_str(buf, len, d->uuid) : INVALID_ARGUMENT;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *buf, unsigned len) {
        return valid(d) ? copy_str(buf, len, d->name) : INVALID_ARGUMENT;
}

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned *minor) {
        if (!valid(d))
                return INVALID_ARGUMENT;
        *minor = d->minor;
        return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
        if (!valid(d))
                return INVALID_ARGUMENT;
        if (read_state(d->uuid) == 'l')
                return GPU_IS_LOST;
        m->total = 80ULL << 30;
        m->used = 1ULL << 20;
        m->free = m->total - m->used;
        return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, int *pending) {
        if (!valid(d))
                return INVALID_ARGUMENT;
        *pending = read_state(d->uuid) == 'p';
        return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p) {
        if (!valid(d))
                return INVALID_ARGUMENT;
        memset(p, 0, sizeof(*p));
        /* NVML's form: an 8-digit domain, upper case */
        (void) snprintf(p->busId, sizeof(p->busId), "0000%s", d->bus_id);
        for (char *c = p->busId; *c; c++)
                if (*c >= 'a' && *c <= 'f')
                        *c = (char) (*c - 'a' + 'A');
        return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned *current, unsigned *pending) {
        if (!valid(d))
                return INVALID_ARGUMENT;
        *current = *pending = env_int("FAKE_NVML_MIG") ? 1 : 0;
        return OK;
}

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
        if (!initialized)
                return UNINITIALIZED;
        if (env_int("FAKE_NVML_NO_EVENTS"))
                return NOT_SUPPORTED;
        *set = &the_set;
        return OK;
}

EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long *mask) {
        if (!valid(d))
                return INVALID_ARGUMENT;
        *mask = 0x1 | 0x2 | 0x8;
        return OK;
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long mask, nvmlEventSet_t set) {
        (void) mask;
        return valid(d) && set == &the_set ? OK : INVALID_ARGUMENT;
}

EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned timeout_ms) {
        struct timespec step = { .tv_nsec = 20 * 1000 * 1000 };
        unsigned waited = 0;

        if (set != &the_set || !data)
                return INVALID_ARGUMENT;
        for (;;) {
                char uuid[96];
                unsigned long long xid;
                int found;

                pthread_mutex_lock(&lock);
                found = read_xid(xids_seen, uuid, sizeof(uuid), &xid);
                if (found)
                        xids_seen++;
                pthread_mutex_unlock(&lock);
                if (found) {
                        memset(data, 0, sizeof(*data));
                        data->eventType = 0x8;
                        data->eventData = xid;
                        data->gpuInstanceId = data->computeInstanceId = 0xFFFFFFFFu;
                        for (unsigned i = 0; i < n_gpus; i++)
                                if (strcmp(gpus[i].uuid, uuid) == 0)
                                        data->device = &gpus[i];
                        return OK;
                }
                if (waited >= timeout_ms)
                        return TIMEOUT;
                (void) nanosleep(&step, NULL);
                waited += 20;
        }
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
        return set == &the_set ? OK : INVALID_ARGUMENT;
}
