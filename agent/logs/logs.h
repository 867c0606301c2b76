/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/logs: container logs in kubelet's layout and the CRI log format.
 * <podLogsDir>/<namespace>_<name>_<uid>/<container>/<restart>.log, each line
 * "<RFC3339Nano> stdout|stderr F|P <text>" (P: a partial line, continued by
 * the next). Rotation as kubelet's container log manager: a log at or over
 * containerLogMaxSize is renamed to <log>.<YYYYMMDD-hhmmss>, the runtime
 * reopens it (ReopenContainerLog), older rotated files are gzipped and
 * removed beyond containerLogMaxFiles. The decisions are pure (plan.c,
 * parse.c); rotate.c does the file and runtime work.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "../../cri/cri.h"
#include "../util/err.h"

#define LOGS_DEFAULT_ROOT "/var/log/pods"
#define LOGS_DEFAULT_MAX_SIZE (10LL * 1024 * 1024)
#define LOGS_DEFAULT_MAX_FILES 5
#define LOGS_MONITOR_USEC (10ULL * 1000000ULL) /* kubelet's containerLogMonitorInterval */

/* ---- the CRI log format (parse.c) ---------------------------------------- */

typedef enum LogsStream {
        LOGS_STDOUT,
        LOGS_STDERR,
        _LOGS_STREAM_MAX,
        _LOGS_STREAM_INVALID = -22,
} LogsStream;

typedef struct LogsLine {
        const char *timestamp; /* into the input */
        size_t n_timestamp;
        LogsStream stream;
        bool partial; /* tag P */
        const char *text;
        size_t n_text;
} LogsLine;

/* One line without its newline; -EINVAL when it is not in the CRI format
 * (kubelet's parseCRILog: a timestamp, a space, a stream, a space, a tag,
 * and a space before the text unless the line ends after the tag). */
int logs_parse_line(const char *line, size_t n, LogsLine *ret);

/* The complete lines of buf[0..len) rendered as kubelet's ReadLogs writes
 * them (what kubectl logs prints): an F line's text and a newline, a P
 * line's text alone (the next piece continues it); with timestamps, each
 * piece after its timestamp and a space. Lines that are not in the CRI
 * format are skipped and counted in *ret_bad. With final, a last line
 * without its newline is rendered too; else it is left: *ret_used says how
 * many bytes of buf were consumed. The output is appended to *out (a
 * malloc'd buffer of *n_out bytes). */
int logs_render(const char *buf, size_t len, bool timestamps, bool final, char **out, size_t *n_out, size_t *ret_used,
                size_t *ret_bad);

/* The start of the last n lines of buf (n < 0: 0, all of it). */
size_t logs_tail_offset(const char *buf, size_t len, int64_t n);

/* ---- layout ---------------------------------------------------------------- */

/* "<root>/<ns>_<name>_<uid>"; NULL when out of memory */
char *logs_pod_dir(const char *root, const char *namespace_, const char *name, const char *uid);
/* "<container>/<attempt>.log" (the CRI log_path, relative to the pod dir) */
char *logs_container_path(const char *container, uint32_t attempt);
/* kubelet's rotated name: "<log>.<YYYYMMDD-hhmmss>" in local time */
int logs_rotated_name(const char *log, time_t now, char *buf, size_t size);

/* ---- rotation decisions (plan.c) -------------------------------------------- */

typedef struct LogsRotatePlan {
        bool rotate;     /* the log is at or over the limit */
        char **remove;   /* NULL-terminated, owned: full paths */
        char **compress; /* the rotated files left uncompressed */
} LogsRotatePlan;

/* For log (a path) of size bytes, with the names of the directory's files
 * that start with "<basename(log)>." (any order): kubelet's rotateLog —
 * .tmp leftovers and uncompressed files that have a .gz twin go, then the
 * oldest until max_files - 2 rotated files remain (the live log and the
 * one about to be rotated make max_files), the rest are gzipped. Nothing
 * at all when size < max_size. */
int logs_rotate_plan(const char *log, int64_t size, int64_t max_size, int max_files, const char *const *rotated,
                     LogsRotatePlan *ret);
void logs_rotate_plan_done(LogsRotatePlan *p);

/* ---- the rotation pass (rotate.c) ---------------------------------------------- */

typedef struct LogsPolicy {
        char *root;
        int64_t max_size;
        int max_files;
} LogsPolicy;

/* One pass over the running containers cubelet manages: each log at or
 * over max_size is rotated (rename, ReopenContainerLog, gzip, trim).
 * Blocking: run it off the loop. *ret_rotated counts the logs rotated. */
int logs_rotate_pass(CriClient *cri, const LogsPolicy *p, size_t *ret_rotated, CubError *err);
/* gzip src into dst (through src.tmp, as kubelet), then remove src. */
int logs_compress(const char *src, const char *dst, CubError *err);
/* kubelet's pod log GC: the directories "<ns>_<name>_<uid>" under root of
 * pods the runtime holds no sandbox of, untouched for min_age_s, are
 * removed. Nothing is removed when the runtime cannot be asked. */
int logs_gc_pass(CriClient *cri, const char *root, int64_t min_age_s, size_t *ret_removed, CubError *err);

/* ---- reading (read.c) ---------------------------------------------------------- */

/* What kubelet's ReadLogs is asked (kubectl logs' options). tail applies
 * first, over the file's lines; then since and stream filter each CRI line
 * (a line that does not parse is skipped); then limit_bytes caps the
 * output. */
typedef struct LogsReadOptions {
        bool previous;         /* the attempt before the newest */
        bool timestamps;       /* each piece after its RFC 3339 timestamp and a space (as logs_render) */
        bool follow;           /* on through rotation until the attempt ends */
        int64_t tail_lines;    /* < 0: all; kubelet's tailLines */
        int64_t limit_bytes;   /* <= 0: none; kubelet's limitBytes (the cut may fall inside a line) */
        int64_t since_unix_ns; /* 0: none; lines stamped before it are skipped (sinceSeconds/sinceTime) */
        int stream;            /* LOGS_STDOUT, LOGS_STDERR, or -1: both (kubelet's stream) */
} LogsReadOptions;

/* One reader per caller: readers share nothing, each may live in its own thread. */
/* An RFC 3339 time (a CRI line's RFC3339Nano timestamp, or sinceTime) of
 * s[0..n) as ns since the epoch; -EINVAL when it is not one. */
int logs_parse_timestamp(const char *s, size_t n, int64_t *ret);

typedef struct LogsReader LogsReader;

/* container_dir: "<pod dir>/<container>". Picks the attempt: the highest
 * <N>.log, or with previous the highest below it, and reads its file (o
 * NULL: all of it, both streams, once). -ENOENT when there is none, err saying, as
 * kubelet does, `previous terminated container "C" in pod "P" not found`
 * (previous) or `container "C" in pod "P" has no log yet` -- C is
 * basename(container_dir), P pod_name. */
int logs_reader_open(const char *container_dir, const char *pod_name, const LogsReadOptions *o, LogsReader **ret,
                     CubError *err);
uint32_t logs_reader_attempt(const LogsReader *r);
/* Up to size bytes of rendered output (what kubectl logs prints) into buf.
 * Returns the count (> 0); 0 at the end: the file read (not following), or,
 * following, after `ended` was true at the end of the file (then a last
 * partial line is rendered too), or limit_bytes reached; -EAGAIN when
 * following and there is nothing new yet (the caller waits, ~200 ms, and
 * calls again); a negative errno on error. Following handles rotation (the
 * path now names another inode: reopen it and go on) and treats a newer
 * attempt's file appearing in the directory as the end of this one
 * (checked at most once a second). */
ssize_t logs_reader_read(LogsReader *r, char *buf, size_t size, bool ended);
LogsReader *logs_reader_free(LogsReader *r);
static inline void logs_reader_freep(LogsReader **r) {
        if (*r)
                (void) logs_reader_free(*r);
}
