/* SPDX-License-Identifier: Apache-2.0 */
/* /metrics/resource and /stats/summary from the cgroups (resource.h). */
#include "resource.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/meminfo.h"
#include "metrics.h"

/* Finds "key value" lines in a flat-keyed file. */
static int read_keyed(const char *path, const char *const *keys, uint64_t *vals, size_t n) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[256];

        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f))
                for (size_t i = 0; i < n; i++) {
                        size_t kl = strlen(keys[i]);

                        if (strncmp(line, keys[i], kl) == 0 && (line[kl] == ' ' || line[kl] == ':'))
                                vals[i] = strtoull(line + kl + 1 + strspn(line + kl + 1, " "), NULL, 10);
                }
        return 0;
}

int api_cgroup_stats(const char *cgroup_root, const char *rel, ApiCgroupStats *ret) {
        static const char *const cpu_keys[] = { "usage_usec" };
        static const char *const mem_keys[] = { "inactive_file", "anon", "pgfault", "pgmajfault" };
        uint64_t mem[4] = {};
        char path[4096];
        int r;

        *ret = (ApiCgroupStats){};
        if (!rel || !*rel) /* no pod cgroup (cgroupsPerQOS: false): no stats, never the root's */
                return -ENOENT;
        (void) snprintf(path, sizeof(path), "%s/%s/cpu.stat", cgroup_root, rel);
        r = read_keyed(path, cpu_keys, &ret->cpu_usage_usec, 1);
        if (r < 0)
                return r;
        (void) snprintf(path, sizeof(path), "%s/%s/memory.current", cgroup_root, rel);
        {
                _cleanup_fclose_ FILE *f = fopen(path, "re");
                unsigned long long v;

                if (!f)
                        return -errno;
                if (fscanf(f, "%llu", &v) != 1)
                        return -EINVAL;
                ret->memory_usage = v;
        }
        (void) snprintf(path, sizeof(path), "%s/%s/memory.stat", cgroup_root, rel);
        r = read_keyed(path, mem_keys, mem, 4);
        if (r < 0)
                return r;
        ret->working_set = ret->memory_usage > mem[0] ? ret->memory_usage - mem[0] : 0;
        ret->rss = mem[1];
        ret->pgfault = mem[2];
        ret->pgmajfault = mem[3];
        return 0;
}

int api_node_stats(const char *cgroup_root, const char *proc, ApiCgroupStats *ret, uint64_t *ret_mem_total,
                   uint64_t *ret_mem_available) {
        static const char *const cpu_keys[] = { "usage_usec" };
        CubMeminfo mi;
        char path[4096];
        int r;

        *ret = (ApiCgroupStats){};
        (void) snprintf(path, sizeof(path), "%s/cpu.stat", cgroup_root);
        if (read_keyed(path, cpu_keys, &ret->cpu_usage_usec, 1) < 0 || ret->cpu_usage_usec == 0) {
                /* no root cpu.stat: the sum of /proc/stat's busy times */
                _cleanup_fclose_ FILE *f = NULL;
                unsigned long long u, n, s, idle, io, irq, sirq, steal;

                (void) snprintf(path, sizeof(path), "%s/stat", proc);
                f = fopen(path, "re");
                if (!f)
                        return -errno;
                if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &u, &n, &s, &idle, &io, &irq, &sirq,
                           &steal) != 8)
                        return -EINVAL;
                ret->cpu_usage_usec = (u + n + s + irq + sirq + steal) * 1000000ULL / (uint64_t) sysconf(_SC_CLK_TCK);
        }
        r = cub_meminfo_read(proc, &mi, NULL);
        if (r < 0)
                return r;
        /* cadvisor's root: usage = total - free, working set = usage - inactive file */
        ret->memory_usage = mi.mem_total > mi.mem_free ? mi.mem_total - mi.mem_free : 0;
        ret->working_set = ret->memory_usage > mi.inactive_file ? ret->memory_usage - mi.inactive_file : 0;
        ret->rss = mi.anon_pages;
        *ret_mem_total = mi.mem_total;
        *ret_mem_available = mi.mem_available;
        return 0;
}

static int64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void labels(FILE *f, const ApiPodRef *p, const char *container) {
        if (container) {
                fputs("{container=\"", f);
                api_metrics_put_label(f, container);
                fputs("\",namespace=\"", f);
        } else
                fputs("{namespace=\"", f);
        api_metrics_put_label(f, p->namespace_);
        fputs("\",pod=\"", f);
        api_metrics_put_label(f, p->name);
        fputs("\"}", f);
}

int api_resource_metrics(const ApiSnapshot *s, const char *cgroup_root, const char *proc, FILE *f) {
        ApiCgroupStats node, *pods = calloc(s->n_pods + 1, sizeof(ApiCgroupStats));
        bool *ok = calloc(s->n_pods + 1, sizeof(bool));
        uint64_t total, avail;
        int64_t ts = now_ms();
        bool node_ok;
        char path[4096];

        if (!pods || !ok) {
                free(pods);
                free(ok);
                return -ENOMEM;
        }
        node_ok = api_node_stats(cgroup_root, proc, &node, &total, &avail) >= 0;
        for (size_t i = 0; i < s->n_pods; i++)
                ok[i] = api_cgroup_stats(cgroup_root, s->pods[i].cgroup, &pods[i]) >= 0;

        fputs("# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in "
              "core-seconds\n# TYPE container_cpu_usage_seconds_total counter\n",
              f);
        for (int pass = 0; pass < 3; pass++) {
                static const char *const names[] = { "container_cpu_usage_seconds_total",
                                                     "container_memory_working_set_bytes",
                                                     "container_start_time_seconds" };
                if (pass == 1)
                        fputs("# HELP container_memory_working_set_bytes [STABLE] Current working set of the "
                              "container in bytes\n# TYPE container_memory_working_set_bytes gauge\n",
                              f);
                if (pass == 2)
                        fputs("# HELP container_start_time_seconds [STABLE] Start time of the container since unix "
                              "epoch in seconds\n# TYPE container_start_time_seconds gauge\n",
                              f);
                for (size_t i = 0; i < s->n_pods; i++)
                        for (size_t k = 0; k < s->pods[i].n_containers; k++) {
                                const ApiContainerRef *c = &s->pods[i].containers[k];
                                ApiCgroupStats cs;

                                if (!c->running || !*c->id)
                                        continue;
                                if (pass < 2) {
                                        (void) snprintf(path, sizeof(path), "%s/%s", s->pods[i].cgroup, c->id);
                                        if (api_cgroup_stats(cgroup_root, path, &cs) < 0)
                                                continue;
                                } else if (!c->started_at)
                                        continue;
                                fputs(names[pass], f);
                                labels(f, &s->pods[i], c->name);
                                if (pass == 0)
                                        fprintf(f, " %.6f %" PRId64 "\n", (double) cs.cpu_usage_usec / 1e6, ts);
                                else if (pass == 1)
                                        fprintf(f, " %" PRIu64 " %" PRId64 "\n", cs.working_set, ts);
                                else
                                        fprintf(f, " %.9f %" PRId64 "\n", (double) c->started_at / 1e9, ts);
                        }
        }
        fputs("# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds\n"
              "# TYPE node_cpu_usage_seconds_total counter\n",
              f);
        if (node_ok)
                fprintf(f, "node_cpu_usage_seconds_total %.6f %" PRId64 "\n", (double) node.cpu_usage_usec / 1e6, ts);
        fputs("# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes\n"
              "# TYPE node_memory_working_set_bytes gauge\n",
              f);
        if (node_ok)
                fprintf(f, "node_memory_working_set_bytes %" PRIu64 " %" PRId64 "\n", node.working_set, ts);
        fputs("# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds\n"
              "# TYPE pod_cpu_usage_seconds_total counter\n",
              f);
        for (size_t i = 0; i < s->n_pods; i++)
                if (ok[i]) {
                        fputs("pod_cpu_usage_seconds_total", f);
                        labels(f, &s->pods[i], NULL);
                        fprintf(f, " %.6f %" PRId64 "\n", (double) pods[i].cpu_usage_usec / 1e6, ts);
                }
        fputs("# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes\n"
              "# TYPE pod_memory_working_set_bytes gauge\n",
              f);
        for (size_t i = 0; i < s->n_pods; i++)
                if (ok[i]) {
                        fputs("pod_memory_working_set_bytes", f);
                        labels(f, &s->pods[i], NULL);
                        fprintf(f, " %" PRIu64 " %" PRId64 "\n", pods[i].working_set, ts);
                }
        fputs("# HELP scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise\n"
              "# TYPE scrape_error gauge\n",
              f);
        fprintf(f, "scrape_error %d\n", node_ok ? 0 : 1);
        free(pods);
        free(ok);
        return ferror(f) ? -EIO : 0;
}

/* ---- the Summary API ----------------------------------------------------------------- */

static char *rfc3339(int64_t unix_s, char buf[static 32]) {
        struct tm tm;
        time_t t = (time_t) unix_s;

        gmtime_r(&t, &tm);
        (void) strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
        return buf;
}

static json_t *cpu_json(const char *now, const ApiCgroupStats *st) {
        return json_pack("{s:s,s:I}", "time", now, "usageCoreNanoSeconds", (json_int_t) st->cpu_usage_usec * 1000);
}

static json_t *memory_json(const char *now, const ApiCgroupStats *st, int64_t available) {
        json_t *m = json_pack("{s:s,s:I,s:I,s:I,s:I,s:I}", "time", now, "usageBytes", (json_int_t) st->memory_usage,
                              "workingSetBytes", (json_int_t) st->working_set, "rssBytes", (json_int_t) st->rss,
                              "pageFaults", (json_int_t) st->pgfault, "majorPageFaults", (json_int_t) st->pgmajfault);

        if (m && available >= 0)
                json_object_set_new(m, "availableBytes", json_integer(available));
        return m;
}

/* Bytes (allocated blocks) and inodes under the directory fd (taken), as du. */
static void du(int fd, unsigned depth, uint64_t *bytes, uint64_t *inodes) {
        DIR *d = fdopendir(fd);
        struct dirent *de;
        struct stat st;

        if (!d) {
                close(fd);
                return;
        }
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                *bytes += (uint64_t) st.st_blocks * 512;
                (*inodes)++;
                if (S_ISDIR(st.st_mode) && depth < 16) {
                        int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

                        if (sub >= 0)
                                du(sub, depth + 1, bytes, inodes);
                }
        }
        closedir(d);
}

/* The pod's logs: cubelet's share of its ephemeral storage. */
static json_t *ephemeral_json(const char *now, const char *log_dir) {
        uint64_t bytes = 0, inodes = 1;
        int fd;

        if (!*log_dir)
                return NULL;
        fd = open(log_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        du(fd, 0, &bytes, &inodes);
        return json_pack("{s:s,s:I,s:I}", "time", now, "usedBytes", (json_int_t) bytes, "inodesUsed",
                         (json_int_t) inodes);
}

static json_t *fs_json(const char *now, const char *path) {
        struct statvfs v;

        if (statvfs(path, &v) < 0)
                return NULL;
        return json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I}", "time", now, "availableBytes",
                         (json_int_t) (v.f_bavail * v.f_frsize), "capacityBytes",
                         (json_int_t) (v.f_blocks * v.f_frsize), "usedBytes",
                         (json_int_t) ((v.f_blocks - v.f_bfree) * v.f_frsize), "inodesFree", (json_int_t) v.f_ffree,
                         "inodes", (json_int_t) v.f_files, "inodesUsed", (json_int_t) (v.f_files - v.f_ffree));
}

char *api_stats_summary(const ApiSnapshot *s, const char *cgroup_root, const char *proc, const char *fs_path) {
        char now[32], start[32], path[4096];
        ApiCgroupStats st;
        uint64_t total = 0, avail = 0;
        struct timespec up;
        json_t *doc, *node, *pods = json_array();
        char *text;

        rfc3339(now_ms() / 1000, now);
        clock_gettime(CLOCK_BOOTTIME, &up);
        rfc3339(now_ms() / 1000 - up.tv_sec, start);
        node = json_pack("{s:s,s:s,s:[]}", "nodeName", s->node_name ? s->node_name : "", "startTime", start,
                         "systemContainers");
        if (!node || !pods) {
                json_decref(node);
                json_decref(pods);
                return NULL;
        }
        if (api_node_stats(cgroup_root, proc, &st, &total, &avail) >= 0) {
                json_object_set_new(node, "cpu", cpu_json(now, &st));
                json_object_set_new(node, "memory", memory_json(now, &st, (int64_t) avail));
        }
        {
                json_t *fs = fs_json(now, fs_path);

                if (fs)
                        json_object_set_new(node, "fs", fs);
        }
        for (size_t i = 0; i < s->n_pods; i++) {
                const ApiPodRef *p = &s->pods[i];
                json_t *pj = json_pack("{s:{s:s,s:s,s:s},s:s,s:[],s:[]}", "podRef", "name", p->name, "namespace",
                                       p->namespace_, "uid", p->uid, "startTime", rfc3339(p->start_time, start),
                                       "containers", "volume"),
                       *eph;

                if (!pj)
                        continue;
                for (size_t k = 0; k < p->n_containers; k++) {
                        const ApiContainerRef *c = &p->containers[k];
                        json_t *cj;

                        if (!c->running || !*c->id)
                                continue;
                        cj = json_pack("{s:s,s:s}", "name", c->name, "startTime",
                                       rfc3339(c->started_at / 1000000000, start));
                        (void) snprintf(path, sizeof(path), "%s/%s", p->cgroup, c->id);
                        if (cj && api_cgroup_stats(cgroup_root, path, &st) >= 0) {
                                json_object_set_new(cj, "cpu", cpu_json(now, &st));
                                json_object_set_new(cj, "memory", memory_json(now, &st, -1));
                        }
                        json_array_append_new(json_object_get(pj, "containers"), cj);
                }
                if (api_cgroup_stats(cgroup_root, p->cgroup, &st) >= 0) {
                        json_object_set_new(pj, "cpu", cpu_json(now, &st));
                        json_object_set_new(pj, "memory", memory_json(now, &st, -1));
                }
                eph = ephemeral_json(now, p->log_dir);
                if (eph)
                        json_object_set_new(pj, "ephemeral-storage", eph);
                json_array_append_new(pods, pj);
        }
        doc = json_pack("{s:o,s:o}", "node", node, "pods", pods);
        text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(doc);
        return text;
}
