/* SPDX-License-Identifier: Apache-2.0 */
/* The admission ledger: assume (reserve requests, host ports and exclusive
 * CPUs before any runtime call), confirm, forget; and its checkpoint. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "admit-internal.h"

#define LEDGER_MAX (16 * 1024 * 1024)

static const char *const state_names[_ADMIT_LEDGER_STATE_MAX] = {
        [ADMIT_LEDGER_ASSUMED] = "assumed",
        [ADMIT_LEDGER_CONFIRMED] = "confirmed",
};

const char *admit_ledger_state_to_string(AdmitLedgerState s) {
        if (s < 0 || s >= _ADMIT_LEDGER_STATE_MAX)
                return NULL;
        return state_names[s];
}

AdmitLedgerState admit_ledger_state_from_string(const char *s) {
        for (int i = 0; s && i < _ADMIT_LEDGER_STATE_MAX; i++)
                if (strcmp(state_names[i], s) == 0)
                        return (AdmitLedgerState) i;
        return _ADMIT_LEDGER_STATE_INVALID;
}

/* ---- assume / confirm / forget ------------------------------------------------- */

/* Hands the pod exactly the placement's CPUs (an aligned alternative to the
 * CPU manager's own choice); all or nothing. */
static int assign_placement(CpumgrState *st, const Pod *pod, const AdmitPlacement *pl, CubError *err) {
        for (size_t i = 0; i < pl->n_containers; i++) {
                int r = cpumgr_assign_container(st, pod->uid, pl->containers[i].name, &pl->containers[i].cpus, err);

                if (r < 0) {
                        cpumgr_release_pod(st, pod->uid);
                        return cub_err_wrap_errno(err, r, "container '%s'", pl->containers[i].name);
                }
        }
        return 0;
}

int admit_snapshot_assume(AdmitSnapshot *s, const Pod *pod, const AdmitPlacement *placement, CubError *err) {
        _cleanup_(pod_effective_done) PodEffective eff = {};
        AdmitFilterResult fr = { .ok = true };
        AdmitCtx c;
        ssize_t i;
        bool took_cpus = false;
        int r;

        if (!pod->uid)
                return cub_err_set(err, EINVAL, "pod %s/%s: no UID", pod->namespace_, pod->name);
        i = admit_snapshot_find_pod(s, pod->uid);
        if (i >= 0) {
                if (s->pods[i]->state == ADMIT_LEDGER_ASSUMED)
                        return 0;
                return cub_err_set(err, EEXIST, "pod %s/%s: already admitted", pod->namespace_, pod->name);
        }
        r = admit_ctx_init(s, pod, NULL, &c, &eff, err);
        if (r < 0)
                return r;
        /* what earlier assumes reserved counts: re-check the reservable parts */
        admit_filter_table[ADMIT_FILTER_NODE_RESOURCES_FIT](&c, &fr);
        if (fr.ok)
                admit_filter_table[ADMIT_FILTER_NODE_PORTS](&c, &fr);
        if (!fr.ok) {
                admit_ctx_done(&c);
                return cub_err_set(err, ENOSPC, "pod %s/%s: %s: %s", pod->namespace_, pod->name, fr.reason, fr.message);
        }
        if (c.excl_cpus > 0) {
                if (placement && !placement->policy_choice && placement->n_containers > 0)
                        r = assign_placement(s->cpumgr, pod, placement, err);
                else
                        r = cpumgr_allocate_pod(s->cpumgr, pod, c.qos, err);
                if (r < 0) {
                        admit_ctx_done(&c);
                        return cub_err_wrap_errno(err, r, "pod %s/%s", pod->namespace_, pod->name);
                }
                took_cpus = true;
        }
        admit_ctx_done(&c);
        r = admit_snapshot_insert(s, pod, ADMIT_LEDGER_ASSUMED, err);
        if (r < 0 && took_cpus)
                cpumgr_release_pod(s->cpumgr, pod->uid);
        return r;
}

int admit_snapshot_confirm(AdmitSnapshot *s, const char *uid) {
        ssize_t i = admit_snapshot_find_pod(s, uid);

        if (i < 0)
                return -ENOENT;
        s->pods[i]->state = ADMIT_LEDGER_CONFIRMED;
        return 0;
}

int admit_snapshot_forget(AdmitSnapshot *s, const char *uid) {
        int r = admit_snapshot_remove(s, uid);

        if (r < 0)
                return r;
        if (s->cpumgr)
                cpumgr_release_pod(s->cpumgr, uid);
        return 0;
}

int admit_snapshot_state(const AdmitSnapshot *s, const char *uid, AdmitLedgerState *ret) {
        ssize_t i = admit_snapshot_find_pod(s, uid);

        if (i < 0)
                return -ENOENT;
        *ret = s->pods[i]->state;
        return 0;
}

/* ---- checkpoint ---------------------------------------------------------------------- */

static uint32_t fnv1a32(const char *s) {
        uint32_t h = 2166136261u;

        for (; *s; s++) {
                h ^= (uint8_t) *s;
                h *= 16777619u;
        }
        return h;
}

static json_t *pods_json(const AdmitSnapshot *s) {
        json_t *arr = json_array();

        for (size_t i = 0; arr && i < s->n_pods; i++) {
                const AdmitEntry *e = s->pods[i];
                json_t *req = json_object(), *o;

                for (size_t j = 0; req && j < e->requests.n; j++) {
                        char buf[CUB_QUANTITY_STR_MAX];
                        const PodResource *pr = &e->requests.items[j];

                        json_object_set_new(req, pr->name,
                                            json_string(cub_quantity_format(pr->q, strcmp(pr->name, "cpu") == 0, buf)));
                }
                o = json_pack("{s:s,s:s,s:s,s:o*}", "uid", e->uid, "pod", e->key, "state",
                              admit_ledger_state_to_string(e->state), "requests", req);
                if (!o || json_array_append_new(arr, o) < 0) {
                        json_decref(arr);
                        return NULL;
                }
        }
        return arr;
}

int admit_ledger_format(const AdmitSnapshot *s, char **ret_text, CubError *err) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        _cleanup_free_ char *pods_text = NULL;
        json_t *pods = pods_json(s);
        char *text;

        if (!pods)
                return cub_err_set(err, ENOMEM, "out of memory");
        pods_text = json_dumps(pods, JSON_COMPACT | JSON_PRESERVE_ORDER);
        root = json_pack("{s:i,s:o,s:I}", "version", 1, "pods", pods, "checksum",
                         (json_int_t) (pods_text ? fnv1a32(pods_text) : 0));
        if (!pods_text || !root)
                return cub_err_set(err, ENOMEM, "out of memory");
        text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!text)
                return cub_err_set(err, ENOMEM, "out of memory");
        *ret_text = text;
        return 0;
}

int admit_ledger_save(const AdmitSnapshot *s, const char *path, CubError *err) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = admit_ledger_format(s, &text, err);
        if (r < 0)
                return r;
        return cub_write_file_atomic(path, text, strlen(text), 0600, err);
}

void admit_ledger_entries_free(AdmitLedgerEntry *e, size_t n) {
        for (size_t i = 0; e && i < n; i++) {
                free(e[i].uid);
                free(e[i].key);
        }
        free(e);
}

int admit_ledger_parse(const char *text, size_t len, const char *source, AdmitLedgerEntry **ret, size_t *ret_n,
                       CubError *err) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        _cleanup_free_ char *pods_text = NULL;
        AdmitLedgerEntry *e;
        json_error_t jerr;
        json_t *pods, *sum, *p;
        size_t i, n = 0;

        root = json_loadb(text, len, 0, &jerr);
        if (!root)
                return cub_err_set(err, EBADMSG, "'%s': line %d: %s", source, jerr.line, jerr.text);
        pods = json_object_get(root, "pods");
        sum = json_object_get(root, "checksum");
        if (!json_is_array(pods))
                return cub_err_set(err, EBADMSG, "'%s': pods: not an array", source);
        if (!json_is_integer(sum))
                return cub_err_set(err, EBADMSG, "'%s': checksum: not a number", source);
        pods_text = json_dumps(pods, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!pods_text)
                return cub_err_set(err, ENOMEM, "out of memory");
        if ((json_int_t) fnv1a32(pods_text) != json_integer_value(sum))
                return cub_err_set(err, EBADMSG, "'%s': checksum mismatch", source);
        e = calloc(json_array_size(pods) ? json_array_size(pods) : 1, sizeof(AdmitLedgerEntry));
        if (!e)
                return cub_err_set(err, ENOMEM, "out of memory");
        json_array_foreach(pods, i, p) {
                const char *uid = json_string_value(json_object_get(p, "uid"));
                const char *key = json_string_value(json_object_get(p, "pod"));
                AdmitLedgerState st = admit_ledger_state_from_string(json_string_value(json_object_get(p, "state")));

                if (!uid || !key || st < 0) {
                        admit_ledger_entries_free(e, n);
                        return cub_err_set(err, EBADMSG, "'%s': pods[%zu]: %s", source, i,
                                           !uid   ? "uid: Required value"
                                           : !key ? "pod: Required value"
                                                  : "state: unknown");
                }
                e[n] = (AdmitLedgerEntry){ .uid = strdup(uid), .key = strdup(key), .state = st };
                n++;
                if (!e[n - 1].uid || !e[n - 1].key) {
                        admit_ledger_entries_free(e, n);
                        return cub_err_set(err, ENOMEM, "out of memory");
                }
        }
        *ret = e;
        *ret_n = n;
        return 0;
}

int admit_ledger_load(const char *path, AdmitLedgerEntry **ret, size_t *ret_n, CubError *err) {
        _cleanup_free_ char *data = NULL;
        CubError e = {};
        size_t size;
        int r;

        r = cub_read_file(path, LEDGER_MAX, &data, &size, &e);
        if (r == -ENOENT) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        if (r < 0) {
                if (err)
                        *err = e;
                return r;
        }
        return admit_ledger_parse(data, size, path, ret, ret_n, err);
}
