/* SPDX-License-Identifier: Apache-2.0 */
/* Counters, histograms and their Prometheus text exposition. */
#include "metrics.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../util/cleanup.h"

/* kubelet's buckets (pkg/kubelet/metrics/metrics.go): PodStartDuration, and
 * metrics.DefBuckets for the pod worker. */
static const double start_buckets[] = { 0.5, 1,   2,   3,   4,   5,   6,   8,   10,   20,   30,   45,  60,
                                        120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600 };
const double api_default_buckets[11] = { .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10 };

static const char *const worker_ops[_API_WORKER_OP_MAX] = {
        [API_WORKER_OP_CREATE] = "create",
        [API_WORKER_OP_UPDATE] = "update",
        [API_WORKER_OP_SYNC] = "sync",
        [API_WORKER_OP_KILL] = "kill",
};

const char *api_worker_op_to_string(ApiWorkerOp op) {
        return op >= 0 && op < _API_WORKER_OP_MAX ? worker_ops[op] : NULL;
}

void api_metrics_init(ApiMetrics *m) {
        *m = (ApiMetrics){};
        m->pod_start_duration = (ApiHistogram){ .bounds = start_buckets, .n_bounds = ELEMENTSOF(start_buckets) };
        for (size_t i = 0; i < _API_WORKER_OP_MAX; i++)
                m->pod_worker_duration[i] =
                        (ApiHistogram){ .bounds = api_default_buckets, .n_bounds = ELEMENTSOF(api_default_buckets) };
}

static void counter_done(ApiCounterVec *c) {
        for (size_t i = 0; i < c->n; i++)
                free(c->items[i].value);
        free(c->items);
        *c = (ApiCounterVec){};
}

void api_metrics_done(ApiMetrics *m) {
        counter_done(&m->evictions);
        counter_done(&m->preemptions);
        counter_done(&m->admission_rejections);
        counter_done(&m->http_source_fetches);
}

int api_counter_add(ApiCounterVec *c, const char *v, uint64_t n) {
        struct ApiLabelCount *items;

        for (size_t i = 0; i < c->n; i++)
                if (strcmp(c->items[i].value, v) == 0) {
                        c->items[i].n += n;
                        return 0;
                }
        items = realloc(c->items, (c->n + 1) * sizeof(*items));
        if (!items)
                return -ENOMEM;
        c->items = items;
        items[c->n] = (struct ApiLabelCount){ .value = strdup(v), .n = n };
        if (!items[c->n].value)
                return -ENOMEM;
        c->n++;
        return 0;
}

uint64_t api_counter_get(const ApiCounterVec *c, const char *v) {
        for (size_t i = 0; i < c->n; i++)
                if (strcmp(c->items[i].value, v) == 0)
                        return c->items[i].n;
        return 0;
}

void api_histogram_observe(ApiHistogram *h, double v) {
        size_t b = 0;

        while (b < h->n_bounds && v > h->bounds[b])
                b++;
        h->counts[b]++; /* b == n_bounds: the +Inf bucket */
        h->count++;
        h->sum += v;
}

void api_metrics_put_label(FILE *f, const char *v) {
        for (; *v; v++) {
                if (*v == '\\' || *v == '"')
                        fputc('\\', f);
                if (*v == '\n') {
                        fputs("\\n", f);
                        continue;
                }
                fputc(*v, f);
        }
}

/* The shortest text that reads back as v (Go's strconv 'g', -1). */
static void put_double(FILE *f, double v) {
        char buf[64];

        for (int prec = 6; prec <= 17; prec++) {
                (void) snprintf(buf, sizeof(buf), "%.*g", prec, v);
                if (strtod(buf, NULL) == v)
                        break;
        }
        fputs(buf, f);
}

void api_metrics_family(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gauge(FILE *f, const char *name, const char *help, double v) {
        api_metrics_family(f, name, "gauge", help);
        fprintf(f, "%s ", name);
        put_double(f, v);
        fputc('\n', f);
}

void api_metrics_counter_vec(FILE *f, const char *name, const char *type, const char *label, const char *help,
                             const ApiCounterVec *c) {
        api_metrics_family(f, name, type, help);
        for (size_t i = 0; i < c->n; i++) {
                fprintf(f, "%s{%s=\"", name, label);
                api_metrics_put_label(f, c->items[i].value);
                fprintf(f, "\"} %" PRIu64 "\n", c->items[i].n);
        }
}

/* One histogram's samples; label is "" or `key="value"`. */
void api_metrics_histogram(FILE *f, const char *name, const char *label, const ApiHistogram *h) {
        uint64_t cum = 0;

        for (size_t b = 0; b <= h->n_bounds; b++) {
                cum += h->counts[b];
                if (b < h->n_bounds)
                        fprintf(f, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, label, *label ? "," : "",
                                h->bounds[b], cum);
                else
                        fprintf(f, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, label, *label ? "," : "", cum);
        }
        fprintf(f, "%s_sum%s%s%s ", name, *label ? "{" : "", label, *label ? "}" : "");
        put_double(f, h->sum);
        fputc('\n', f);
        fprintf(f, "%s_count%s%s%s %" PRIu64 "\n", name, *label ? "{" : "", label, *label ? "}" : "", h->count);
}

int api_metrics_render(const ApiMetrics *m, const ApiGauges *g, FILE *f) {
        char label[64];

        api_metrics_family(f, "cubelet_build_info", "gauge", "cubelet's version; the value is 1.");
        fputs("cubelet_build_info{version=\"", f);
        api_metrics_put_label(f, g->version ? g->version : "");
        fputs("\"} 1\n", f);
        gauge(f, "kubelet_running_pods", "Number of pods that have a running pod sandbox", (double) g->running_pods);
        api_metrics_family(f, "kubelet_running_containers", "gauge", "Number of containers currently running");
        fprintf(f, "kubelet_running_containers{container_state=\"created\"} %zu\n", g->containers_created);
        fprintf(f, "kubelet_running_containers{container_state=\"exited\"} %zu\n", g->containers_exited);
        fprintf(f, "kubelet_running_containers{container_state=\"running\"} %zu\n", g->containers_running);
        fprintf(f, "kubelet_running_containers{container_state=\"unknown\"} %zu\n", g->containers_unknown);
        gauge(f, "cubelet_pods", "Pods the sources define (any phase)", (double) g->pods);
        gauge(f, "cubelet_runtime_ready", "1 when the container runtime answered the last relist",
              g->runtime_ready ? 1 : 0);

        api_metrics_family(f, "kubelet_pod_start_duration_seconds", "histogram",
                           "Duration in seconds from the source seeing the pod to its containers started");
        api_metrics_histogram(f, "kubelet_pod_start_duration_seconds", "", &m->pod_start_duration);
        api_metrics_family(f, "kubelet_pod_worker_duration_seconds", "histogram",
                           "Duration in seconds to sync a single pod. Broken down by operation type: create, update, "
                           "sync or kill");
        for (size_t i = 0; i < _API_WORKER_OP_MAX; i++) {
                (void) snprintf(label, sizeof(label), "operation_type=\"%s\"", worker_ops[i]);
                api_metrics_histogram(f, "kubelet_pod_worker_duration_seconds", label, &m->pod_worker_duration[i]);
        }
        /* kubelet's names for these two counters have no _total suffix, which
         * the exposition lint (promtool) refuses for TYPE counter: untyped,
         * the same series for every query */
        api_metrics_counter_vec(f, "kubelet_evictions", "untyped", "eviction_signal",
                                "Cumulative number of pod evictions by eviction signal (a counter)", &m->evictions);
        api_metrics_counter_vec(f, "kubelet_preemptions", "untyped", "preemption_signal",
                                "Cumulative number of pod preemptions by preemption resource (a counter)",
                                &m->preemptions);
        api_metrics_counter_vec(f, "kubelet_admission_rejections_total", "counter", "reason",
                                "Cumulative number of pod admission rejections by the admit handlers",
                                &m->admission_rejections);
        api_metrics_family(f, "kubelet_cpu_manager_pinning_requests_total", "counter",
                           "The number of cpu core allocations which required pinning.");
        fprintf(f, "kubelet_cpu_manager_pinning_requests_total %" PRIu64 "\n", m->cpu_pinning_requests);
        api_metrics_family(f, "kubelet_cpu_manager_pinning_errors_total", "counter",
                           "The number of cpu core allocations which required pinning failed.");
        fprintf(f, "kubelet_cpu_manager_pinning_errors_total %" PRIu64 "\n", m->cpu_pinning_errors);
        api_metrics_family(f, "cubelet_manifest_errors_total", "counter",
                           "Manifests that could not be read or decoded");
        fprintf(f, "cubelet_manifest_errors_total %" PRIu64 "\n", m->manifest_errors);
        gauge(f, "cubelet_manifest_errors", "Manifests currently in error", (double) g->manifest_errors_now);
        api_metrics_counter_vec(f, "cubelet_http_source_fetches_total", "counter", "result",
                                "Fetches of the manifest URL by result", &m->http_source_fetches);
        return ferror(f) ? -EIO : 0;
}

/* The 22nd field (starttime, clock ticks after boot) and others of
 * /proc/self/stat, after the parenthesised comm. */
static int read_stat(const char *proc, double *utime, double *stime, double *start_ticks, double *rss_pages) {
        char path[256], buf[1024], *p;
        _cleanup_fclose_ FILE *f = NULL;
        unsigned long long ut, st, start;
        long long rss;
        size_t n;

        (void) snprintf(path, sizeof(path), "%s/self/stat", proc);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = '\0';
        p = strrchr(buf, ')');
        if (!p)
                return -EINVAL;
        /* fields 3.. : state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
         * cutime cstime priority nice threads itrealvalue starttime vsize rss */
        if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %*u %lld",
                   &ut, &st, &start, &rss) != 4)
                return -EINVAL;
        *utime = (double) ut;
        *stime = (double) st;
        *start_ticks = (double) start;
        *rss_pages = (double) rss;
        return 0;
}

static double boot_time(const char *proc) {
        char path[256], line[256];
        _cleanup_fclose_ FILE *f = NULL;
        double bt = 0;

        (void) snprintf(path, sizeof(path), "%s/stat", proc);
        f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "btime %lf", &bt) == 1)
                        break;
        return bt;
}

int api_metrics_render_process(const char *proc, FILE *f) {
        double ut = 0, st = 0, start = 0, rss = 0, hz = (double) sysconf(_SC_CLK_TCK), fds = 0;
        char path[256];
        struct rlimit rl;
        DIR *d;
        int r;

        r = read_stat(proc, &ut, &st, &start, &rss);
        if (r < 0)
                return r;
        (void) snprintf(path, sizeof(path), "%s/self/fd", proc);
        d = opendir(path);
        if (d) {
                struct dirent *de;

                while ((de = readdir(d)))
                        fds += de->d_name[0] != '.';
                fds -= 1; /* the directory's own fd */
                closedir(d);
        }
        api_metrics_family(f, "process_cpu_seconds_total", "counter",
                           "Total user and system CPU time spent in seconds.");
        fputs("process_cpu_seconds_total ", f);
        put_double(f, (ut + st) / hz);
        fputc('\n', f);
        gauge(f, "process_resident_memory_bytes", "Resident memory size in bytes.", rss * (double) getpagesize());
        gauge(f, "process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
              boot_time(proc) + start / hz);
        gauge(f, "process_open_fds", "Number of open file descriptors.", fds);
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
                gauge(f, "process_max_fds", "Maximum number of open file descriptors.", (double) rl.rlim_cur);
        return ferror(f) ? -EIO : 0;
}
