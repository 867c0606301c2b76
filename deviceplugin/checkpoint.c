/* SPDX-License-Identifier: Apache-2.0 */
/*
 * <dir>/kubelet_internal_checkpoint in kubelet's v2 shape:
 *
 *   {"Data":{"PodDeviceEntries":[{"PodUID":"…","ContainerName":"…",
 *     "ResourceName":"…","DeviceIDs":{"<numa>":["id",…]},
 *     "AllocResp":"<base64 of the ContainerAllocateResponse>"}],
 *    "RegisteredDevices":{"vendor.com/x":["id",…]}},"Checksum":N}
 *
 * The pre-1.21 flat "DeviceIDs":["id",…] is read too (NUMA -1). kubelet's
 * checksum (FNV-32a over a go-spew dump of the Go struct) is not reproduced:
 * Checksum is FNV-32a over json_dumps(Data, JSON_COMPACT | JSON_SORT_KEYS).
 */
#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/util/base64.h"
#include "../agent/util/cleanup.h"
#include "../agent/util/fileio.h"
#include "../agent/util/fnv.h"
#include "dp-internal.h"

uint32_t dp_checkpoint_checksum(const char *data_dump) {
        return cub_fnv32a_str(CUB_FNV32_OFFSET, data_dump);
}

static void entry_done(DpCheckpointEntry *e) {
        free(e->pod_uid);
        free(e->container);
        free(e->resource);
        dp_strv_free(e->ids, e->n_ids);
        free(e->numa);
        free(e->raw);
}

void dp_checkpoint_done(DpCheckpoint *cp) {
        for (size_t i = 0; i < cp->n_entries; i++)
                entry_done(&cp->entries[i]);
        free(cp->entries);
        for (size_t i = 0; i < cp->n_res; i++) {
                free(cp->res[i].name);
                dp_strv_free(cp->res[i].ids, cp->res[i].n_ids);
        }
        free(cp->res);
        *cp = (DpCheckpoint){};
}

/* ---- format -------------------------------------------------------------------- */

static json_t *strv_json(char *const *ids, size_t n) {
        json_t *a = json_array();

        for (size_t i = 0; a && i < n; i++)
                if (json_array_append_new(a, json_string(ids[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

static json_t *entry_json(const DpCheckpointEntry *e) {
        _cleanup_(json_decrefp) json_t *o = json_object(), *ids = json_object();
        _cleanup_free_ char *b64 = NULL;

        if (!o || !ids)
                return NULL;
        for (size_t i = 0; i < e->n_ids; i++) {
                char key[DECIMAL_STR_MAX(int)];
                json_t *a;

                (void) snprintf(key, sizeof(key), "%d", e->numa ? e->numa[i] : -1);
                a = json_object_get(ids, key);
                if (!a && (json_object_set_new(ids, key, json_array()) < 0 || !(a = json_object_get(ids, key))))
                        return NULL;
                if (json_array_append_new(a, json_string(e->ids[i])) < 0)
                        return NULL;
        }
        if (e->raw) {
                b64 = malloc(4 * ((e->raw_len + 2) / 3) + 1);
                if (!b64)
                        return NULL;
                (void) EVP_EncodeBlock((unsigned char *) b64, e->raw, (int) e->raw_len);
        }
        if (json_object_set_new(o, "PodUID", json_string(e->pod_uid)) < 0 ||
            json_object_set_new(o, "ContainerName", json_string(e->container)) < 0 ||
            json_object_set_new(o, "ResourceName", json_string(e->resource)) < 0 ||
            json_object_set(o, "DeviceIDs", ids) < 0 ||
            json_object_set_new(o, "AllocResp", b64 ? json_string(b64) : json_null()) < 0)
                return NULL;
        return TAKE_PTR(o);
}

int dp_checkpoint_format(const DpCheckpoint *cp, char **ret, CubError *err) {
        _cleanup_(json_decrefp) json_t *root = NULL, *data = json_object(), *entries = json_array(),
                                       *reg = json_object();
        _cleanup_free_ char *dump = NULL;
        char *text;

        if (!data || !entries || !reg)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; i < cp->n_entries; i++)
                if (json_array_append_new(entries, entry_json(&cp->entries[i])) < 0)
                        return cub_err_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; i < cp->n_res; i++)
                if (json_object_set_new(reg, cp->res[i].name, strv_json(cp->res[i].ids, cp->res[i].n_ids)) < 0)
                        return cub_err_set(err, ENOMEM, "out of memory");
        if (json_object_set(data, "PodDeviceEntries", entries) < 0 ||
            json_object_set(data, "RegisteredDevices", reg) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        dump = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
        root = json_pack("{s:O,s:I}", "Data", data, "Checksum", dump ? (json_int_t) dp_checkpoint_checksum(dump) : 0);
        if (!dump || !root)
                return cub_err_set(err, ENOMEM, "out of memory");
        text = json_dumps(root, JSON_COMPACT);
        if (!text)
                return cub_err_set(err, ENOMEM, "out of memory");
        *ret = text;
        return 0;
}

/* ---- parse --------------------------------------------------------------------- */

static int add_id(DpCheckpointEntry *e, const json_t *v, int numa) {
        char **ids;
        int *nm;

        if (!json_is_string(v))
                return -EBADMSG;
        ids = realloc(e->ids, (e->n_ids + 2) * sizeof(char *));
        if (!ids)
                return -ENOMEM;
        e->ids = ids;
        nm = realloc(e->numa, (e->n_ids + 1) * sizeof(int));
        if (!nm)
                return -ENOMEM;
        e->numa = nm;
        if (!(e->ids[e->n_ids] = strdup(json_string_value(v))))
                return -ENOMEM;
        e->ids[e->n_ids + 1] = NULL;
        e->numa[e->n_ids++] = numa;
        return 0;
}

static int parse_numa(const char *key, int *ret) {
        char *end;
        long v;

        errno = 0;
        v = strtol(key, &end, 10);
        if (errno || end == key || *end || v < -1 || v > 1023)
                return -EBADMSG;
        *ret = (int) v;
        return 0;
}

static int parse_entry(const json_t *o, size_t i, DpCheckpointEntry *e, CubError *err) {
        const json_t *uid = json_object_get(o, "PodUID"), *cn = json_object_get(o, "ContainerName"),
                     *rn = json_object_get(o, "ResourceName"), *ids = json_object_get(o, "DeviceIDs"),
                     *resp = json_object_get(o, "AllocResp"), *v;
        const char *key;
        size_t j;
        int r = 0;

        if (!json_is_string(uid) || !json_is_string(cn) || !json_is_string(rn))
                return cub_err_set(err, EBADMSG,
                                   "Data.PodDeviceEntries[%zu]: PodUID, ContainerName and ResourceName "
                                   "must be strings",
                                   i);
        if (!(e->pod_uid = strdup(json_string_value(uid))) || !(e->container = strdup(json_string_value(cn))) ||
            !(e->resource = strdup(json_string_value(rn))))
                return cub_err_set(err, ENOMEM, "out of memory");
        if (json_is_array(ids)) /* pre-1.21 */
                json_array_foreach(ids, j, v) {
                        if ((r = add_id(e, v, -1)) < 0)
                                break;
                }
        else if (json_is_object(ids))
                json_object_foreach((json_t *) ids, key, v) {
                        const json_t *id;
                        int numa;

                        if ((r = parse_numa(key, &numa)) < 0 || (r = json_is_array(v) ? 0 : -EBADMSG) < 0)
                                break;
                        json_array_foreach(v, j, id) {
                                if ((r = add_id(e, id, numa)) < 0)
                                        break;
                        }
                        if (r < 0)
                                break;
                }
        else if (!json_is_null(ids) && ids)
                r = -EBADMSG;
        if (r < 0)
                return cub_err_set(err, -r, "Data.PodDeviceEntries[%zu].DeviceIDs: %s", i,
                                   r == -ENOMEM ? "out of memory"
                                                : "expected {\"<numa>\":[\"id\",...]} or [\"id\",...]");
        if (json_is_string(resp)) {
                r = cub_base64_decode(json_string_value(resp), strlen(json_string_value(resp)), &e->raw, &e->raw_len);
                if (r < 0)
                        return cub_err_set(err, -r, "Data.PodDeviceEntries[%zu].AllocResp: %s", i,
                                           r == -ENOMEM ? "out of memory" : "not base64");
        } else if (resp && !json_is_null(resp))
                return cub_err_set(err, EBADMSG, "Data.PodDeviceEntries[%zu].AllocResp: expected a base64 string", i);
        return 0;
}

int dp_checkpoint_parse(const char *data, size_t len, DpCheckpoint *ret, CubError *err) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        _cleanup_(dp_checkpoint_done) DpCheckpoint cp = {};
        _cleanup_free_ char *dump = NULL;
        const json_t *d, *sum, *entries, *reg, *v;
        json_error_t jerr;
        const char *key;
        size_t i;
        int r;

        root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root)
                return cub_err_set(err, EBADMSG, "line %d: %s", jerr.line, jerr.text);
        d = json_object_get(root, "Data");
        sum = json_object_get(root, "Checksum");
        if (!json_is_object(d))
                return cub_err_set(err, EBADMSG, "Data: missing or not an object");
        if (!json_is_integer(sum) || json_integer_value(sum) < 0 || json_integer_value(sum) > (json_int_t) UINT32_MAX)
                return cub_err_set(err, EBADMSG, "Checksum: missing or not a 32-bit unsigned integer");
        dump = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
        if (!dump)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (dp_checkpoint_checksum(dump) != (uint32_t) json_integer_value(sum))
                return cub_err_set(err, EBADMSG, "Checksum: %lld does not match the data (%u)",
                                   (long long) json_integer_value(sum), dp_checkpoint_checksum(dump));

        entries = json_object_get(d, "PodDeviceEntries");
        if (entries && !json_is_null(entries) && !json_is_array(entries))
                return cub_err_set(err, EBADMSG, "Data.PodDeviceEntries: expected an array");
        if (json_array_size(entries) > 0) {
                cp.entries = calloc(json_array_size(entries), sizeof(DpCheckpointEntry));
                if (!cp.entries)
                        return cub_err_set(err, ENOMEM, "out of memory");
        }
        json_array_foreach(entries, i, v) {
                if (!json_is_object(v))
                        return cub_err_set(err, EBADMSG, "Data.PodDeviceEntries[%zu]: expected an object", i);
                cp.n_entries++;
                r = parse_entry(v, i, &cp.entries[i], err);
                if (r < 0)
                        return r;
        }

        reg = json_object_get(d, "RegisteredDevices");
        if (reg && !json_is_null(reg) && !json_is_object(reg))
                return cub_err_set(err, EBADMSG, "Data.RegisteredDevices: expected an object");
        if (json_object_size(reg) > 0) {
                cp.res = calloc(json_object_size(reg), sizeof(DpCheckpointRes));
                if (!cp.res)
                        return cub_err_set(err, ENOMEM, "out of memory");
        }
        json_object_foreach((json_t *) reg, key, v) {
                DpCheckpointRes *cr = &cp.res[cp.n_res++];
                DpCheckpointEntry tmp = {};
                const json_t *id;
                size_t j;

                if (!(cr->name = strdup(key)))
                        return cub_err_set(err, ENOMEM, "out of memory");
                if (!json_is_array(v) && !json_is_null(v))
                        return cub_err_set(err, EBADMSG, "Data.RegisteredDevices.%s: expected an array", key);
                json_array_foreach(v, j, id) {
                        r = add_id(&tmp, id, -1);
                        if (r < 0) {
                                cr->ids = tmp.ids, cr->n_ids = tmp.n_ids;
                                free(tmp.numa);
                                return cub_err_set(err, -r, "Data.RegisteredDevices.%s[%zu]: %s", key, j,
                                                   r == -ENOMEM ? "out of memory" : "expected a string");
                        }
                }
                cr->ids = tmp.ids;
                cr->n_ids = tmp.n_ids;
                free(tmp.numa);
        }
        *ret = cp;
        cp = (DpCheckpoint){};
        return 0;
}

/* ---- the manager's file ------------------------------------------------------------- */

static int load(DpManager *m, const char *text, size_t len, CubError *err) {
        _cleanup_(dp_checkpoint_done) DpCheckpoint cp = {};
        DpAlloc **allocs = NULL;
        size_t n = 0;
        int r;

        r = dp_checkpoint_parse(text, len, &cp, err);
        if (r < 0)
                return r;
        allocs = calloc(cp.n_entries + 1, sizeof(DpAlloc *));
        if (!allocs)
                return cub_err_set(err, ENOMEM, "out of memory");
        for (; n < cp.n_entries; n++) {
                DpCheckpointEntry *e = &cp.entries[n];
                DpAlloc *a = calloc(1, sizeof(*a));

                if (!a) {
                        r = cub_err_set(err, ENOMEM, "out of memory");
                        break;
                }
                allocs[n] = a;
                a->pub.pod_uid = TAKE_PTR(e->pod_uid);
                a->pub.container = TAKE_PTR(e->container);
                a->pub.resource = TAKE_PTR(e->resource);
                a->pub.n_ids = e->n_ids;
                a->pub.ids = TAKE_PTR(e->ids);
                a->numa = TAKE_PTR(e->numa);
                e->n_ids = 0;
                if (e->raw) {
                        r = dp_container_response_from_raw(e->raw, e->raw_len, &a->pub.resp, err);
                        if (r < 0) {
                                r = cub_err_wrap_errno(err, r, "Data.PodDeviceEntries[%zu].AllocResp", n);
                                n++;
                                break;
                        }
                }
        }
        for (size_t i = 0; r >= 0 && i < cp.n_res; i++) {
                DpRes *res;

                if (dp_validate_resource_name(cp.res[i].name, NULL) >= 0 &&
                    dp_manager_resource_get(m, cp.res[i].name, &res) < 0)
                        r = cub_err_set(err, ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < n; i++)
                if (r < 0 || dp_manager_add_alloc(m, allocs[i]) < 0)
                        dp_alloc_free(allocs[i]);
        free(allocs);
        return r;
}

int dp_manager_load_checkpoint(DpManager *m, CubError *err) {
        _cleanup_free_ char *text = NULL, *aside = NULL;
        CubError lerr = {};
        size_t len = 0;
        int r;

        (void) err;
        r = cub_read_file(m->checkpoint_path, DP_CHECKPOINT_MAX, &text, &len, &lerr);
        if (r == -ENOENT)
                return 0;
        if (r >= 0)
                r = load(m, text, len, &lerr);
        if (r >= 0)
                return 0;
        /* never an error: keep the file aside and start empty */
        for (size_t i = m->n_allocs; i-- > 0;)
                dp_alloc_free(m->allocs[i]);
        m->n_allocs = 0;
        if (m->checkpoint_read_only) {
                (void) snprintf(m->note, sizeof(m->note), "checkpoint '%s': %.512s; not used (read-only)",
                                m->checkpoint_path, lerr.msg);
                return 0;
        }
        if (asprintf(&aside, "%s.corrupt", m->checkpoint_path) < 0) {
                aside = NULL;
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        if (rename(m->checkpoint_path, aside) < 0)
                (void) snprintf(m->note, sizeof(m->note),
                                "checkpoint '%s': %.512s; not used (cannot keep it aside: %s)", m->checkpoint_path,
                                lerr.msg, strerror(errno));
        else
                (void) snprintf(m->note, sizeof(m->note), "checkpoint '%s': %.512s; kept aside as '%s', starting empty",
                                m->checkpoint_path, lerr.msg, aside);
        return 0;
}

int dp_manager_save_checkpoint(DpManager *m, CubError *err) {
        _cleanup_free_ DpCheckpointEntry *entries = NULL;
        _cleanup_free_ DpCheckpointRes *res = NULL;
        _cleanup_free_ char *text = NULL;
        DpCheckpoint cp = {};
        char **idv = NULL;
        size_t n_idv = 0, n_entries = 0;
        int r;

        if (m->checkpoint_read_only)
                return 0;
        for (size_t i = 0; i < m->n_res; i++)
                n_idv += m->res[i]->pub.n_devices;
        entries = calloc(m->n_allocs + 1, sizeof(*entries));
        res = calloc(m->n_res + 1, sizeof(*res));
        idv = calloc(n_idv + 1, sizeof(char *));
        if (!entries || !res || !idv) {
                free(idv);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < m->n_allocs; i++) {
                DpAlloc *a = m->allocs[i];

                /* only what a plugin has answered: a restart during a pass
                 * finds no half allocation */
                if (a->pub.pending)
                        continue;
                entries[n_entries++] = (DpCheckpointEntry){ .pod_uid = a->pub.pod_uid,
                                                            .container = a->pub.container,
                                                            .resource = a->pub.resource,
                                                            .ids = a->pub.ids,
                                                            .numa = a->numa,
                                                            .n_ids = a->pub.n_ids,
                                                            .raw = a->pub.resp.raw,
                                                            .raw_len = a->pub.resp.raw_len };
        }
        n_idv = 0;
        for (size_t i = 0; i < m->n_res; i++) {
                DpResource *pr = &m->res[i]->pub;

                res[i].name = pr->name;
                res[i].ids = idv + n_idv;
                for (size_t j = 0; j < pr->n_devices; j++)
                        if (pr->connected && pr->devices[j].healthy)
                                idv[n_idv + res[i].n_ids++] = pr->devices[j].id;
                n_idv += res[i].n_ids;
        }
        cp = (DpCheckpoint){ .entries = entries, .n_entries = n_entries, .res = res, .n_res = m->n_res };
        r = dp_checkpoint_format(&cp, &text, err);
        free(idv);
        if (r < 0)
                return r;
        r = cub_write_file_atomic(m->checkpoint_path, text, strlen(text), 0600, err);
        if (r < 0)
                return cub_err_wrap_errno(err, r, "device manager checkpoint");
        return 0;
}
