/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubelet's cpu_manager_state checkpoint (state/checkpoint.go, v2) and its
 * reconciliation on restore (a lenient validateState: never fatal).
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "../util/fnv.h"
#include "cpumanager-internal.h"

#define CHECKPOINT_MAX (16 * 1024 * 1024)

/* ---- checksum ------------------------------------------------------------ */

/*
 * kubelet's checksum.New(cp): FNV-32a over hashutil.DeepHashObject's text,
 * go-spew's %#v of *CPUManagerCheckpoint (SortKeys, DisableMethods) with
 * Checksum 0:
 *
 *   (*state.CPUManagerCheckpoint){PolicyName:(string)static
 *   DefaultCPUSet:(string)0,3,7 Entries:(map[string]map[string]string)map[
 *   pod-b:map[x:4 y:2,6] pod-z:map[app:1,5]] Checksum:(checksum.Checksum)0}
 *
 * (one line; strings raw, map keys sorted bytewise, an empty map "map[]", a
 * nil one "<nil>"). A v1 file (entries keyed by container ID) hashes with
 * Entries:(map[string]string) and the type name CPUManagerCheckpoint (v1's
 * VerifyChecksum renames it). Checked against kubelet's test vectors
 * (state_checkpoint_test.go: 354655845, 3610638499; v1: 1694838852,
 * 2026311253) and a real node's file (1552716370).
 */
static uint32_t fnv_json_string(uint32_t h, const json_t *v) {
        return cub_fnv32a(h, json_string_value(v), json_string_length(v));
}

static int cmp_key(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* The keys of an object, sorted (malloc'd array of borrowed strings). */
static const char **sorted_keys(const json_t *o) {
        const char **keys = calloc(json_object_size(o) + 1, sizeof(char *));
        const char *key;
        json_t *v;
        size_t n = 0;

        if (!keys)
                return NULL;
        json_object_foreach((json_t *) o, key, v) {
                (void) v;
                keys[n++] = key;
        }
        qsort(keys, n, sizeof(*keys), cmp_key);
        return keys;
}

/* spew's map[k:v k:v] of a JSON object, nested one level for v2; -EINVAL
 * when a value has the wrong type for the format, -ENOMEM. */
static int fnv_map(uint32_t *h, const json_t *o, bool nested) {
        _cleanup_free_ const char **keys = NULL;

        if (!o) {
                *h = cub_fnv32a_str(*h, "<nil>");
                return 0;
        }
        keys = sorted_keys(o);
        if (!keys)
                return -ENOMEM;
        *h = cub_fnv32a_str(*h, "map[");
        for (size_t i = 0; i < json_object_size(o); i++) {
                const json_t *v = json_object_get(o, keys[i]);
                int r;

                if (i > 0)
                        *h = cub_fnv32a_str(*h, " ");
                *h = cub_fnv32a_str(cub_fnv32a_str(*h, keys[i]), ":");
                if (nested) {
                        if (!json_is_object(v))
                                return -EINVAL;
                        r = fnv_map(h, v, false);
                        if (r < 0)
                                return r;
                } else {
                        if (!json_is_string(v))
                                return -EINVAL;
                        *h = fnv_json_string(*h, v);
                }
        }
        *h = cub_fnv32a_str(*h, "]");
        return 0;
}

/* The checksum of policyName, defaultCpuSet and entries (NULL = nil map)
 * as a v2 (v1 = false) or v1 checkpoint; -EINVAL when the entries do not
 * have that version's shape. */
static int checkpoint_checksum(const char *policy, const json_t *def, const json_t *entries, bool v1, uint32_t *ret) {
        uint32_t h = CUB_FNV32_OFFSET;
        int r;

        h = cub_fnv32a_str(h, "(*state.CPUManagerCheckpoint){PolicyName:(string)");
        h = cub_fnv32a_str(h, policy);
        h = cub_fnv32a_str(h, " DefaultCPUSet:(string)");
        h = def ? fnv_json_string(h, def) : h;
        h = cub_fnv32a_str(h, v1 ? " Entries:(map[string]string)" : " Entries:(map[string]map[string]string)");
        r = fnv_map(&h, entries, !v1);
        if (r < 0)
                return r;
        *ret = cub_fnv32a_str(h, " Checksum:(checksum.Checksum)0}");
        return 0;
}

/* ---- format -------------------------------------------------------------- */

static int cmp_entry(const void *a, const void *b, void *userdata) {
        const CpumgrState *s = userdata;
        const CpumgrEntry *x = *(const CpumgrEntry *const *) a, *y = *(const CpumgrEntry *const *) b;
        int c = strcmp(cpumgr_entry_uid(s, x), cpumgr_entry_uid(s, y));

        return c != 0 ? c : strcmp(cpumgr_entry_name(s, x), cpumgr_entry_name(s, y));
}

/* Go's encoding/json writes map keys sorted: pods by UID, then containers. */
static int entries_to_json(const CpumgrState *s, json_t *entries) {
        _cleanup_free_ const CpumgrEntry **v = NULL;
        json_t *pod = NULL;
        const char *pod_uid = NULL;

        v = malloc(s->n_entries * sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_entries; i++)
                v[i] = &s->entries[i];
        qsort_r(v, s->n_entries, sizeof(*v), cmp_entry, (void *) s);
        for (size_t i = 0; i < s->n_entries; i++) {
                char buf[CPUMGR_SET_STR_MAX];
                const char *uid = cpumgr_entry_uid(s, v[i]);

                if (!pod_uid || strcmp(pod_uid, uid) != 0) {
                        pod = json_object();
                        if (!pod || json_object_set_new(entries, uid, pod) < 0)
                                return -ENOMEM;
                        pod_uid = uid;
                }
                if (json_object_set_new(pod, cpumgr_entry_name(s, v[i]),
                                        json_string(cpumgr_set_format(&v[i]->cpus, buf, sizeof(buf)))) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int cpumgr_checkpoint_format(const CpumgrState *s, char **ret_text, CubError *err) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        _cleanup_(json_decrefp) json_t *empty = NULL;
        char buf[CPUMGR_SET_STR_MAX];
        uint32_t sum;
        char *text;
        int r;

        root = json_object();
        if (!root)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (json_object_set_new(root, "policyName", json_string(cpumgr_policy_to_string(s->policy))) < 0 ||
            json_object_set_new(root, "defaultCpuSet",
                                json_string(s->policy == CPUMGR_POLICY_STATIC
                                                    ? cpumgr_set_format(&s->shared, buf, sizeof(buf))
                                                    : "")) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (s->n_entries > 0) {
                json_t *entries = json_object();

                if (!entries || json_object_set_new(root, "entries", entries) < 0 || entries_to_json(s, entries) < 0)
                        return cub_err_set(err, ENOMEM, "out of memory");
        }
        /* kubelet's Entries is an empty map, not nil, when nothing is assigned */
        empty = json_object();
        if (!empty)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = checkpoint_checksum(cpumgr_policy_to_string(s->policy), json_object_get(root, "defaultCpuSet"),
                                s->n_entries > 0 ? json_object_get(root, "entries") : empty, /* v1= */ false, &sum);
        if (r < 0)
                return cub_err_set(err, -r, "cpu manager checkpoint checksum: %s", strerror(-r));
        if (json_object_set_new(root, "checksum", json_integer((json_int_t) sum)) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!text)
                return cub_err_set(err, ENOMEM, "out of memory");
        *ret_text = text;
        return 0;
}

int cpumgr_checkpoint_save(const CpumgrState *s, const char *path, CubError *err) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = cpumgr_checkpoint_format(s, &text, err);
        if (r < 0)
                return r;
        r = cub_write_file_atomic(path, text, strlen(text), 0644, err);
        if (r < 0)
                return cub_err_wrap_errno(err, r, "cpu manager checkpoint '%s'", path);
        return 0;
}

/* ---- restore ------------------------------------------------------------- */

typedef struct Note {
        char *buf;
        size_t size, len;
        unsigned n;
} Note;

static void note_init(Note *n, char *buf, size_t size) {
        *n = (Note){ .buf = buf, .size = buf ? size : 0 };
        if (n->size > 0)
                n->buf[0] = '\0';
}

__attribute__((format(printf, 2, 3))) static void note_add(Note *n, const char *fmt, ...) {
        va_list ap;
        int r;

        n->n++;
        if (n->len + 1 >= n->size)
                return;
        if (n->len > 0) {
                r = snprintf(n->buf + n->len, n->size - n->len, "; ");
                n->len = r < 0 ? n->len : n->len + (size_t) r;
                if (n->len >= n->size) {
                        n->len = n->size - 1;
                        return;
                }
        }
        va_start(ap, fmt);
        r = vsnprintf(n->buf + n->len, n->size - n->len, fmt, ap);
        va_end(ap);
        if (r > 0)
                n->len += (size_t) r;
        if (n->len >= n->size)
                n->len = n->size - 1;
}

/* How many container assignments the entries hold (v1 or v2). */
static size_t count_entries(const json_t *entries) {
        const char *key;
        json_t *v;
        size_t n = 0;

        json_object_foreach((json_t *) entries, key, v) {
                (void) key;
                n += json_is_object(v) ? json_object_size(v) : 1;
        }
        return n;
}

/* One container's assignment: accepted, or dropped with a note. */
static int restore_entry(CpumgrState *s, Note *note, const char *uid, const char *name, const json_t *val,
                         CubError *err) {
        char a[CPUMGR_SET_STR_MAX];
        CpumgrSet set, x;

        if (!json_is_string(val)) {
                note_add(note, "pod '%.64s' container '%.64s': cpuset is not a string, dropped", uid, name);
                return 0;
        }
        if (cpumgr_set_parse(json_string_value(val), &set, NULL) < 0) {
                note_add(note, "pod '%.64s' container '%.64s': invalid cpu list '%.64s', dropped", uid, name,
                         json_string_value(val));
                return 0;
        }
        if (cpumgr_set_is_empty(&set)) {
                note_add(note, "pod '%.64s' container '%.64s': empty cpu list, dropped", uid, name);
                return 0;
        }
        x = set;
        cpumgr_set_subtract(&x, &s->idx->all);
        if (!cpumgr_set_is_empty(&x)) {
                note_add(note, "pod '%.64s' container '%.64s': cpus '%s' not on this node, dropped", uid, name,
                         cpumgr_set_format(&x, a, sizeof(a)));
                return 0;
        }
        x = set;
        cpumgr_set_intersect(&x, &s->reserved);
        if (!cpumgr_set_is_empty(&x)) {
                note_add(note, "pod '%.64s' container '%.64s': cpus '%s' are reserved, dropped", uid, name,
                         cpumgr_set_format(&x, a, sizeof(a)));
                return 0;
        }
        /* containers of one pod may share CPUs (init container reuse); pods may not */
        for (size_t i = 0; i < s->n_entries; i++) {
                const CpumgrEntry *e = &s->entries[i];

                if (strcmp(cpumgr_entry_uid(s, e), uid) == 0)
                        continue;
                x = set;
                cpumgr_set_intersect(&x, &e->cpus);
                if (!cpumgr_set_is_empty(&x)) {
                        note_add(note,
                                 "pod '%.64s' container '%.64s': cpus '%s' overlap pod '%.64s' container "
                                 "'%.64s', dropped",
                                 uid, name, cpumgr_set_format(&x, a, sizeof(a)), cpumgr_entry_uid(s, e),
                                 cpumgr_entry_name(s, e));
                        return 0;
                }
        }
        return cpumgr_entry_add(s, uid, name, &set, err);
}

static int restore_static(CpumgrState *s, Note *note, const json_t *entries, const json_t *def, CubError *err) {
        char a[CPUMGR_SET_STR_MAX], b[CPUMGR_SET_STR_MAX];
        CpumgrSet assigned, file_def;
        const char *uid;
        json_t *pod;
        int r;

        if (entries)
                json_object_foreach((json_t *) entries, uid, pod) {
                        const char *name;
                        json_t *val;

                        if (json_is_string(pod)) {
                                note_add(note, "entry '%.64s': a v1 entry keyed by container ID, dropped", uid);
                                continue;
                        }
                        if (!json_is_object(pod)) {
                                note_add(note, "pod '%.64s': entry is not an object, dropped", uid);
                                continue;
                        }
                        json_object_foreach(pod, name, val) {
                                r = restore_entry(s, note, uid, name, val, err);
                                if (r < 0)
                                        return r;
                        }
                }

        /* the pool is what the remaining assignments leave */
        cpumgr_assigned(s, &assigned);
        s->shared = s->idx->all;
        cpumgr_set_subtract(&s->shared, &assigned);

        if (def) {
                const char *text = json_string_value(def);

                if (cpumgr_set_parse(text, &file_def, NULL) < 0)
                        note_add(note, "invalid defaultCpuSet '%.64s', rebuilt as '%s'", text,
                                 cpumgr_set_format(&s->shared, a, sizeof(a)));
                /* an empty default set without entries is a fresh checkpoint */
                else if (!cpumgr_set_equal(&file_def, &s->shared) &&
                         !(cpumgr_set_is_empty(&file_def) && (!entries || count_entries(entries) == 0)))
                        note_add(note, "defaultCpuSet '%s' rebuilt as '%s'", cpumgr_set_format(&file_def, b, sizeof(b)),
                                 cpumgr_set_format(&s->shared, a, sizeof(a)));
        }
        return 0;
}

/* Go's encoding/json: a key matches a field case-insensitively, the last
 * matching key of the document wins. */
static json_t *get_field(const json_t *root, const char *name) {
        const char *key;
        json_t *v, *found = NULL;

        json_object_foreach((json_t *) root, key, v) if (strcasecmp(key, name) == 0) found = v;
        return found;
}

/*
 * kubelet's VerifyChecksum: 0 (or none) is accepted, for files of the old
 * file backend (and of cubelet before it wrote checksums); otherwise the
 * checksum must be that of the v2 or (entries keyed by container ID) the
 * v1 rendering. Returns 1 when it matches or is absent, 0 with a note
 * when not.
 */
static int verify_checksum(Note *note, const json_t *checksum, const json_t *policy, const json_t *def,
                           const json_t *entries) {
        _cleanup_(json_decrefp) json_t *empty = NULL;
        json_int_t found;
        uint32_t v2 = 0, v1 = 0;
        bool have_v2, have_v1;

        if (!checksum || json_is_null(checksum))
                return 1;
        if (!json_is_integer(checksum) || json_integer_value(checksum) < 0) {
                note_add(note, "corrupt checkpoint ('checksum' is not an unsigned integer), starting with an empty "
                               "state");
                return 0;
        }
        found = json_integer_value(checksum);
        if (found == 0)
                return 1;
        /* a missing "entries" leaves kubelet's preset empty map, null a nil one */
        if (json_is_null(entries))
                entries = NULL;
        else if (!entries && !(entries = empty = json_object()))
                return 1; /* out of memory: cannot tell, do not drop state for it */
        have_v2 = checkpoint_checksum(policy ? json_string_value(policy) : "", def, entries, false, &v2) >= 0;
        have_v1 = checkpoint_checksum(policy ? json_string_value(policy) : "", def, entries, true, &v1) >= 0;
        if ((have_v2 && (json_int_t) v2 == found) || (have_v1 && (json_int_t) v1 == found))
                return 1;
        note_add(note,
                 "corrupt checkpoint (checksum %" JSON_INTEGER_FORMAT " in the file, %" PRIu32
                 " computed), starting with an empty state",
                 found, have_v2 ? v2 : v1);
        return 0;
}

int cpumgr_checkpoint_restore(CpumgrState *s, const char *text, size_t len, char *ret_note, size_t note_size,
                              CubError *err) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        const json_t *policy, *def, *entries, *raw_entries, *checksum;
        const char *want = cpumgr_policy_to_string(s->policy), *have;
        json_error_t jerr;
        Note note;
        int r;

        note_init(&note, ret_note, note_size);
        cpumgr_state_reset(s);

        root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root && strstr(jerr.text, "duplicate object key")) {
                /* as Go's decoder does: the last value of a key wins */
                root = json_loadb(text, len, 0, &jerr);
                if (root)
                        note_add(&note, "duplicate keys in checkpoint, the last value of each kept");
        }
        if (!root) {
                note_add(&note, "corrupt checkpoint (line %d column %d: %s), starting with an empty state", jerr.line,
                         jerr.column, jerr.text);
                return 1;
        }
        if (!json_is_object(root)) {
                note_add(&note, "corrupt checkpoint (not a JSON object), starting with an empty state");
                return 1;
        }
        policy = get_field(root, "policyName");
        def = get_field(root, "defaultCpuSet");
        entries = raw_entries = get_field(root, "entries");
        checksum = get_field(root, "checksum");
        if (json_is_null(entries))
                entries = NULL;
        if ((policy && !json_is_string(policy)) || (def && !json_is_string(def)) ||
            (entries && !json_is_object(entries))) {
                note_add(&note, "corrupt checkpoint ('%s' has the wrong type), starting with an empty state",
                         policy && !json_is_string(policy) ? "policyName"
                         : def && !json_is_string(def)     ? "defaultCpuSet"
                                                           : "entries");
                return 1;
        }
        if (!verify_checksum(&note, checksum, policy, def, raw_entries))
                return 1;

        have = policy ? json_string_value(policy) : "";
        if (strcmp(have, want) != 0) {
                note_add(&note,
                         "configured policy \"%s\" differs from checkpoint policy \"%.32s\": dropped %zu "
                         "assignments, starting with an empty state",
                         want, have, entries ? count_entries(entries) : 0);
                return 1;
        }
        if (s->policy == CPUMGR_POLICY_STATIC) {
                r = restore_static(s, &note, entries, def, err);
                if (r < 0) {
                        cpumgr_state_reset(s);
                        return r;
                }
        } else if (entries && count_entries(entries) > 0)
                note_add(&note, "policy \"none\" holds no assignments: dropped %zu", count_entries(entries));

        return note.n > 0 ? 1 : 0;
}

int cpumgr_checkpoint_load(CpumgrState *s, const char *path, char *ret_note, size_t note_size, CubError *err) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        int r;

        r = cub_read_file(path, CHECKPOINT_MAX, &text, &size, err);
        if (r == -ENOENT) {
                cpumgr_state_reset(s);
                if (ret_note && note_size > 0)
                        ret_note[0] = '\0';
                return 0;
        }
        if (r == -EFBIG) {
                cpumgr_state_reset(s);
                if (ret_note && note_size > 0)
                        (void) snprintf(ret_note, note_size,
                                        "checkpoint larger than %d bytes, starting with an empty state",
                                        CHECKPOINT_MAX);
                return 1;
        }
        if (r < 0)
                return r;
        return cpumgr_checkpoint_restore(s, text, size, ret_note, note_size, err);
}
