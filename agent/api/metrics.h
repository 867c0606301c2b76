/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/api metrics: the counters and histograms the loop increments (an
 * ApiMetrics the agent owns: no globals), and the Prometheus text
 * exposition (version 0.0.4) of them. Only the loop touches an ApiMetrics;
 * the HTTP thread sees the text the loop rendered into a snapshot (http.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A counter with one label: a short list of (value, count), in the order
 * the values first appeared. */
typedef struct ApiCounterVec {
        struct ApiLabelCount {
                char *value;
                uint64_t n;
        } * items;
        size_t n;
} ApiCounterVec;

#define API_HISTOGRAM_BUCKETS_MAX 32

typedef struct ApiHistogram {
        const double *bounds; /* upper bounds, ascending; +Inf is implied */
        size_t n_bounds;
        uint64_t counts[API_HISTOGRAM_BUCKETS_MAX]; /* per bucket, not cumulative */
        uint64_t count;
        double sum;
} ApiHistogram;

/* kubelet's podWorker operation types */
typedef enum ApiWorkerOp {
        API_WORKER_OP_CREATE,
        API_WORKER_OP_UPDATE,
        API_WORKER_OP_SYNC,
        API_WORKER_OP_KILL,
        _API_WORKER_OP_MAX,
        _API_WORKER_OP_INVALID = -22,
} ApiWorkerOp;

typedef struct ApiMetrics {
        ApiHistogram pod_start_duration;                      /* kubelet_pod_start_duration_seconds */
        ApiHistogram pod_worker_duration[_API_WORKER_OP_MAX]; /* kubelet_pod_worker_duration_seconds */
        ApiCounterVec evictions;                              /* kubelet_evictions{eviction_signal} */
        ApiCounterVec preemptions;                            /* kubelet_preemptions{preemption_signal} */
        ApiCounterVec admission_rejections;                   /* kubelet_admission_rejections_total{reason} */
        uint64_t cpu_pinning_requests, cpu_pinning_errors;    /* kubelet_cpu_manager_pinning_*_total */
        uint64_t manifest_errors;                             /* cubelet_manifest_errors_total */
        /* HTTP manifest source (issue 12, points 1-4): fetches by result
         * ("200", "304", "error", "decode-error", ...), filled by the
         * URL source's loop callbacks; cubelet_http_source_fetches_total */
        ApiCounterVec http_source_fetches;
} ApiMetrics;

/* The gauges of one moment, taken by the loop when it renders. */
typedef struct ApiGauges {
        size_t running_pods;
        size_t containers_running, containers_exited, containers_created, containers_unknown;
        size_t pods, manifest_errors_now;
        bool runtime_ready;
        const char *version;
        const char *node_name;
} ApiGauges;

void api_metrics_init(ApiMetrics *m);
void api_metrics_done(ApiMetrics *m);
/* Adds n to the count of label value v; -ENOMEM. */
int api_counter_add(ApiCounterVec *c, const char *v, uint64_t n);
uint64_t api_counter_get(const ApiCounterVec *c, const char *v);
void api_histogram_observe(ApiHistogram *h, double v);
const char *api_worker_op_to_string(ApiWorkerOp op);

/* The loop's part of /metrics. */
int api_metrics_render(const ApiMetrics *m, const ApiGauges *g, FILE *f);
/* process_* metrics of this process, read from /proc/self at scrape time
 * (proc is the procfs mount, "/proc"). */
int api_metrics_render_process(const char *proc, FILE *f);
/* For the managers' own families (LcManagerVtable.metrics): a family's HELP
 * and TYPE lines, one sample line per label value, and one histogram's
 * samples (label "" or `key="value"`). */
void api_metrics_family(FILE *f, const char *name, const char *type, const char *help);
void api_metrics_counter_vec(FILE *f, const char *name, const char *type, const char *label, const char *help,
                             const ApiCounterVec *c);
void api_metrics_histogram(FILE *f, const char *name, const char *label, const ApiHistogram *h);
/* Prometheus' default buckets (client_golang DefBuckets), 0.005 s to 10 s. */
extern const double api_default_buckets[11];
/* A label value escaped for the exposition format (\\, \", \n). */
void api_metrics_put_label(FILE *f, const char *v);
