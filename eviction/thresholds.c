/* SPDX-License-Identifier: Apache-2.0 */
/* Signals, quantities, Go durations and the threshold configuration
 * (kubelet's ParseThresholdConfig). Pure. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/util/cleanup.h"
#include "../agent/util/duration.h"
#include "../agent/util/quantity.h"
#include "eviction-internal.h"

static const char *const signal_names[_EVICT_SIGNAL_MAX] = {
        [EVICT_SIGNAL_MEMORY_AVAILABLE] = "memory.available",
        [EVICT_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE] = "allocatableMemory.available",
        [EVICT_SIGNAL_NODEFS_AVAILABLE] = "nodefs.available",
        [EVICT_SIGNAL_NODEFS_INODES_FREE] = "nodefs.inodesFree",
        [EVICT_SIGNAL_IMAGEFS_AVAILABLE] = "imagefs.available",
        [EVICT_SIGNAL_IMAGEFS_INODES_FREE] = "imagefs.inodesFree",
        [EVICT_SIGNAL_PID_AVAILABLE] = "pid.available",
};

const char *evict_signal_to_string(EvictSignal s) {
        if (s < 0 || s >= _EVICT_SIGNAL_MAX)
                return NULL;
        return signal_names[s];
}

EvictSignal evict_signal_from_string(const char *s) {
        if (!s)
                return _EVICT_SIGNAL_INVALID;
        for (int i = 0; i < _EVICT_SIGNAL_MAX; i++)
                if (strcmp(signal_names[i], s) == 0)
                        return (EvictSignal) i;
        return _EVICT_SIGNAL_INVALID;
}

static const char *const resource_names[_EVICT_RESOURCE_MAX] = {
        [EVICT_RESOURCE_MEMORY] = "memory",
        [EVICT_RESOURCE_EPHEMERAL_STORAGE] = "ephemeral-storage",
        [EVICT_RESOURCE_INODES] = "inodes",
        [EVICT_RESOURCE_PIDS] = "pids",
};

const char *evict_resource_to_string(EvictResource r) {
        if (r < 0 || r >= _EVICT_RESOURCE_MAX)
                return NULL;
        return resource_names[r];
}

EvictResource evict_signal_resource(EvictSignal s) {
        switch (s) {
        case EVICT_SIGNAL_MEMORY_AVAILABLE:
        case EVICT_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE:
                return EVICT_RESOURCE_MEMORY;
        case EVICT_SIGNAL_NODEFS_AVAILABLE:
        case EVICT_SIGNAL_IMAGEFS_AVAILABLE:
                return EVICT_RESOURCE_EPHEMERAL_STORAGE;
        case EVICT_SIGNAL_NODEFS_INODES_FREE:
        case EVICT_SIGNAL_IMAGEFS_INODES_FREE:
                return EVICT_RESOURCE_INODES;
        case EVICT_SIGNAL_PID_AVAILABLE:
                return EVICT_RESOURCE_PIDS;
        default:
                return _EVICT_RESOURCE_INVALID;
        }
}

static const struct {
        const char *name;
        const char *reason[2]; /* [false], [true] */
        const char *message[2];
} conditions[_EVICT_CONDITION_MAX] = {
        [EVICT_CONDITION_MEMORY_PRESSURE] = { "MemoryPressure",
                                              { "KubeletHasSufficientMemory", "KubeletHasInsufficientMemory" },
                                              { "kubelet has sufficient memory available",
                                                "kubelet has insufficient memory available" } },
        [EVICT_CONDITION_DISK_PRESSURE] = { "DiskPressure",
                                            { "KubeletHasNoDiskPressure", "KubeletHasDiskPressure" },
                                            { "kubelet has no disk pressure", "kubelet has disk pressure" } },
        [EVICT_CONDITION_PID_PRESSURE] = { "PIDPressure",
                                           { "KubeletHasSufficientPID", "KubeletHasInsufficientPID" },
                                           { "kubelet has sufficient PID available",
                                             "kubelet has insufficient PID available" } },
};

const char *evict_condition_to_string(EvictCondition c) {
        if (c < 0 || c >= _EVICT_CONDITION_MAX)
                return NULL;
        return conditions[c].name;
}

const char *evict_condition_reason(EvictCondition c, bool status) {
        if (c < 0 || c >= _EVICT_CONDITION_MAX)
                return NULL;
        return conditions[c].reason[status];
}

const char *evict_condition_message(EvictCondition c, bool status) {
        if (c < 0 || c >= _EVICT_CONDITION_MAX)
                return NULL;
        return conditions[c].message[status];
}

EvictCondition evict_signal_condition(EvictSignal s) {
        switch (evict_signal_resource(s)) {
        case EVICT_RESOURCE_MEMORY:
                return EVICT_CONDITION_MEMORY_PRESSURE;
        case EVICT_RESOURCE_EPHEMERAL_STORAGE:
        case EVICT_RESOURCE_INODES:
                return EVICT_CONDITION_DISK_PRESSURE;
        case EVICT_RESOURCE_PIDS:
                return EVICT_CONDITION_PID_PRESSURE;
        default:
                return _EVICT_CONDITION_INVALID;
        }
}

static const char *const policy_names[_EVICT_POLICY_MAX] = {
        [EVICT_POLICY_CUBELET] = "cubelet",
        [EVICT_POLICY_KUBELET] = "kubelet",
};

const char *evict_policy_to_string(EvictPolicy p) {
        if (p < 0 || p >= _EVICT_POLICY_MAX)
                return NULL;
        return policy_names[p];
}

EvictPolicy evict_policy_from_string(const char *s) {
        if (!s)
                return _EVICT_POLICY_INVALID;
        for (int i = 0; i < _EVICT_POLICY_MAX; i++)
                if (strcmp(policy_names[i], s) == 0)
                        return (EvictPolicy) i;
        return _EVICT_POLICY_INVALID;
}

/* ---- Quantities ---------------------------------------------------------- */

const char *evict_quantity_format(uint64_t v, bool binary, char buf[static EVICT_QUANTITY_STR_MAX]) {
        static const char *const bin[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
        static const char *const dec[] = { "", "k", "M", "G", "T", "P", "E" };
        unsigned k = 0;

        /* Go's CanonicalizeBytes: a BinarySI value below 1024 prints as DecimalSI */
        if (binary && v >= 1024) {
                while (v % 1024 == 0 && k < 6)
                        v /= 1024, k++;
                (void) snprintf(buf, EVICT_QUANTITY_STR_MAX, "%" PRIu64 "%s", v, bin[k]);
        } else {
                while (v != 0 && v % 1000 == 0 && k < 6)
                        v /= 1000, k++;
                (void) snprintf(buf, EVICT_QUANTITY_STR_MAX, "%" PRIu64 "%s", v, dec[k]);
        }
        return buf;
}

uint64_t evict_value_quantity(const EvictValue *v, uint64_t capacity) {
        double q;

        if (!v->percent)
                return v->quantity;
        /* kubelet: int64(float64(capacity.Value()) * float64(value.Percentage)) */
        q = (double) capacity * (double) v->percentage;
        if (!(q > 0))
                return 0;
        if (q >= 9223372036854775807.0)
                return (uint64_t) INT64_MAX;
        return (uint64_t) (int64_t) q;
}

/* Go's strconv.ParseFloat(s, 32): the whole string, no blanks, finite. */
static int parse_float32(const char *s, float *ret) {
        char *end = NULL;
        float f;

        if (!*s || strchr(" \t\n\r\v\f", *s))
                return -EINVAL;
        errno = 0;
        f = strtof(s, &end);
        if (!end || *end || end == s)
                return -EINVAL;
        if (errno == ERANGE || !isfinite(f))
                return -ERANGE;
        *ret = f;
        return 0;
}

int evict_value_parse(const char *text, const char *what, EvictValue *ret, CubError *err) {
        size_t len;

        if (!text || !*text)
                return cub_err_set(err, EINVAL, "%s: empty value", what);
        len = strlen(text);
        if (text[len - 1] == '%') {
                char num[64];
                float f;

                if (len >= sizeof(num))
                        return cub_err_set(err, EINVAL, "%s: invalid percentage \"%s\"", what, text);
                memcpy(num, text, len - 1);
                num[len - 1] = '\0';
                if (parse_float32(num, &f) < 0)
                        return cub_err_set(err, EINVAL, "%s: invalid percentage \"%s\"", what, text);
                *ret = (EvictValue){ .percent = true, .percentage = f / 100.0f };
                return 0;
        }
        {
                CubError qerr = {};
                CubQuantity q;
                int r;

                r = cub_quantity_parse(text, &q, &qerr);
                if (r < 0)
                        return cub_err_set(err, -r, "%s: %s", what, qerr.msg);
                *ret = (EvictValue){
                        .quantity = (uint64_t) cub_quantity_value(q),
                        .binary = text[len - 1] == 'i',
                };
        }
        return 0;
}

/* ---- Thresholds ---------------------------------------------------------------- */

const char *evict_threshold_format(const EvictThreshold *t, char buf[static EVICT_THRESHOLD_STR_MAX]) {
        char q[EVICT_QUANTITY_STR_MAX];

        if (t->value.percent)
                (void) snprintf(buf, EVICT_THRESHOLD_STR_MAX, "%s<%g%%", evict_signal_to_string(t->signal),
                                (double) (t->value.percentage * 100.0f));
        else
                (void) snprintf(buf, EVICT_THRESHOLD_STR_MAX, "%s<%s", evict_signal_to_string(t->signal),
                                evict_quantity_format(t->value.quantity, t->value.binary, q));
        return buf;
}

void evict_config_init(EvictConfig *c) {
        *c = (EvictConfig){
                .transition_usec = EVICT_DEFAULT_TRANSITION_USEC,
                .policy = EVICT_POLICY_CUBELET,
        };
}

void evict_config_done(EvictConfig *c) {
        /* nothing is allocated; kept for the init/done pairing */
        c->n_thresholds = 0;
}

static int signal_of(const char *field, const char *signal, EvictSignal *ret, CubError *err) {
        EvictSignal s = evict_signal_from_string(signal);

        if (s < 0)
                return cub_err_set(err, EINVAL, "%s: unsupported eviction signal \"%s\"", field, signal ? signal : "");
        *ret = s;
        return 0;
}

static EvictThreshold *find_threshold(EvictConfig *c, EvictSignal s, bool soft) {
        for (size_t i = 0; i < c->n_thresholds; i++)
                if (c->thresholds[i].signal == s && c->thresholds[i].soft == soft)
                        return &c->thresholds[i];
        return NULL;
}

static int add_threshold(EvictConfig *c, const char *signal, const char *value, bool soft, CubError *err) {
        const char *field = soft ? "evictionSoft" : "evictionHard";
        char what[128];
        EvictThreshold t = { .soft = soft };
        EvictSignal s;
        int r;

        r = signal_of(field, signal, &s, err);
        if (r < 0)
                return r;
        t.signal = s;
        if (!soft)
                c->hard_given = true;
        (void) snprintf(what, sizeof(what), "%s[%s]", field, signal);
        if (find_threshold(c, s, soft))
                return cub_err_set(err, EEXIST, "%s: given more than once", what);
        if (value && (strcmp(value, "0%") == 0 || strcmp(value, "100%") == 0))
                return 0; /* kubelet ignores 0% and 100% */
        r = evict_value_parse(value, what, &t.value, err);
        if (r < 0)
                return r;
        if (t.value.percent) {
                if (t.value.percentage < 0)
                        return cub_err_set(err, EINVAL, "%s: percentage must be >= 0%%: \"%s\"", what, value);
                if (t.value.percentage > 1)
                        return cub_err_set(err, EINVAL, "%s: percentage must be <= 100%%: \"%s\"", what, value);
        } else if (t.value.quantity == 0)
                return cub_err_set(err, EINVAL, "%s: threshold must be positive: \"%s\"", what, value);
        if (c->n_thresholds >= EVICT_THRESHOLDS_MAX)
                return cub_err_set(err, E2BIG, "%s: too many thresholds", what);
        c->thresholds[c->n_thresholds++] = t;
        c->finished = false;
        return 0;
}

int evict_config_add_hard(EvictConfig *c, const char *signal, const char *value, CubError *err) {
        return add_threshold(c, signal, value, /* soft= */ false, err);
}

int evict_config_add_soft(EvictConfig *c, const char *signal, const char *value, CubError *err) {
        return add_threshold(c, signal, value, /* soft= */ true, err);
}

int evict_config_add_statement(EvictConfig *c, const char *statement, bool soft, CubError *err) {
        const char *field = soft ? "evictionSoft" : "evictionHard";
        const char *op;
        char signal[64];
        size_t n;

        if (!statement)
                return cub_err_set(err, EINVAL, "%s: empty statement", field);
        n = strcspn(statement, "<>=!");
        op = statement + n;
        if (*op && (*op != '<' || (op[1] && strchr("<>=!", op[1]))))
                return cub_err_set(err, EINVAL, "%s: \"%s\": unsupported operator, only '<' is allowed", field,
                                   statement);
        if (*op != '<' || n == 0 || n >= sizeof(signal))
                return cub_err_set(err, EINVAL, "%s: \"%s\": expected <signal><<quantity>", field, statement);
        memcpy(signal, statement, n);
        signal[n] = '\0';
        return add_threshold(c, signal, op + 1, soft, err);
}

void evict_config_set_hard_given(EvictConfig *c) {
        c->hard_given = true;
}

int evict_config_set_soft_grace_period(EvictConfig *c, const char *signal, const char *duration, CubError *err) {
        EvictSignal s;
        uint64_t usec;
        int r;

        r = signal_of("evictionSoftGracePeriod", signal, &s, err);
        if (r < 0)
                return r;
        r = cub_duration_parse(duration, &usec, err);
        if (r < 0)
                return cub_err_wrap_errno(err, r, "evictionSoftGracePeriod[%s]", signal);
        c->grace_set[s] = true;
        c->grace_usec[s] = usec;
        c->finished = false;
        return 0;
}

int evict_config_set_min_reclaim(EvictConfig *c, const char *signal, const char *value, CubError *err) {
        char what[128];
        EvictValue v;
        EvictSignal s;
        int r;

        r = signal_of("evictionMinimumReclaim", signal, &s, err);
        if (r < 0)
                return r;
        (void) snprintf(what, sizeof(what), "evictionMinimumReclaim[%s]", signal);
        r = evict_value_parse(value, what, &v, err);
        if (r < 0)
                return r;
        if (v.percent && !(v.percentage > 0))
                return cub_err_set(err, EINVAL, "%s: percentage must be positive: \"%s\"", what, value);
        if (v.percent && v.percentage > 1)
                return cub_err_set(err, EINVAL, "%s: percentage must be <= 100%%: \"%s\"", what, value);
        c->min_reclaim_set[s] = true;
        c->min_reclaim[s] = v;
        c->finished = false;
        return 0;
}

int evict_config_set_max_pod_grace_period(EvictConfig *c, int64_t seconds, CubError *err) {
        if (seconds < 0)
                return cub_err_set(err, EINVAL, "evictionMaxPodGracePeriod: must not be negative: %" PRId64, seconds);
        c->max_pod_grace_seconds = seconds;
        return 0;
}

int evict_config_set_transition_period(EvictConfig *c, const char *duration, CubError *err) {
        uint64_t usec;
        int r;

        r = cub_duration_parse(duration, &usec, err);
        if (r < 0)
                return cub_err_wrap_errno(err, r, "evictionPressureTransitionPeriod");
        c->transition_usec = usec;
        return 0;
}

void evict_config_set_transition_usec(EvictConfig *c, uint64_t usec) {
        c->transition_usec = usec;
}

int evict_config_set_policy(EvictConfig *c, const char *policy, CubError *err) {
        EvictPolicy p = evict_policy_from_string(policy);

        if (p < 0)
                return cub_err_set(err, EINVAL, "evictionPolicy: unknown policy \"%s\" (cubelet or kubelet)",
                                   policy ? policy : "");
        c->policy = p;
        return 0;
}

void evict_config_set_policy_kind(EvictConfig *c, EvictPolicy policy) {
        c->policy = policy;
}

int evict_config_finish(EvictConfig *c, bool enforce_pods_allocatable, CubError *err) {
        static const struct {
                const char *signal, *value;
        } defaults[] = {
                { "memory.available", "100Mi" },
                { "nodefs.available", "10%" },
                { "nodefs.inodesFree", "5%" },
                { "imagefs.available", "15%" },
        };
        EvictThreshold *mem;
        int r;

        if (c->finished)
                return 0;
        if (!c->hard_given) {
                for (size_t i = 0; i < ELEMENTSOF(defaults); i++) {
                        r = add_threshold(c, defaults[i].signal, defaults[i].value, /* soft= */ false, err);
                        if (r < 0)
                                return r;
                }
        }
        for (size_t i = 0; i < c->n_thresholds; i++) {
                EvictThreshold *t = &c->thresholds[i];

                if (t->soft) {
                        if (!c->grace_set[t->signal])
                                return cub_err_set(err, EINVAL,
                                                   "evictionSoft[%s]: a grace period must be given in "
                                                   "evictionSoftGracePeriod[%s]",
                                                   evict_signal_to_string(t->signal),
                                                   evict_signal_to_string(t->signal));
                        t->grace_usec = c->grace_usec[t->signal];
                } else
                        t->grace_usec = 0;
                t->min_reclaim_set = c->min_reclaim_set[t->signal];
                t->min_reclaim = c->min_reclaim[t->signal];
        }
        mem = find_threshold(c, EVICT_SIGNAL_MEMORY_AVAILABLE, /* soft= */ false);
        if (enforce_pods_allocatable && mem &&
            !find_threshold(c, EVICT_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE, /* soft= */ false)) {
                EvictThreshold copy = *mem;

                if (c->n_thresholds >= EVICT_THRESHOLDS_MAX)
                        return cub_err_set(err, E2BIG, "evictionHard: too many thresholds");
                /* kubelet copies value and minimum reclaim of memory.available */
                copy.signal = EVICT_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE;
                c->thresholds[c->n_thresholds++] = copy;
        }
        c->finished = true;
        return 0;
}
