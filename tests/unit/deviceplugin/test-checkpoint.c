/* SPDX-License-Identifier: Apache-2.0 */
/*
 * deviceplugin: kubelet_internal_checkpoint: the text, the round trip through
 * a manager, the pre-1.21 flat DeviceIDs, corrupt files (kept aside, noted,
 * an empty start; left alone when read-only).
 */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/util/fileio.h"
#include "deviceplugin/dp-internal.h"
#include "proto/deviceplugin/api.pb-c.h"

typedef struct T {
        char dir[64];
        char path[128];
} T;

static int setup(void **state) {
        T *t = calloc(1, sizeof(*t));

        (void) snprintf(t->dir, sizeof(t->dir), "/tmp/dp-cp-XXXXXX");
        assert_non_null(mkdtemp(t->dir));
        (void) snprintf(t->path, sizeof(t->path), "%s/%s", t->dir, DP_CHECKPOINT_FILE);
        *state = t;
        return 0;
}

static int teardown(void **state) {
        T *t = *state;
        char p[160];

        (void) unlink(t->path);
        (void) snprintf(p, sizeof(p), "%s.corrupt", t->path);
        (void) unlink(p);
        (void) rmdir(t->dir);
        free(t);
        return 0;
}

/* Data with our checksum, as the file. */
static char *with_checksum(const char *data_json) {
        json_error_t e;
        json_t *d = json_loads(data_json, 0, &e);
        char *dump, *text;

        assert_non_null(d);
        dump = json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
        assert_int_not_equal(asprintf(&text, "{\"Data\":%s,\"Checksum\":%u}", data_json, dp_checkpoint_checksum(dump)),
                             -1);
        free(dump);
        json_decref(d);
        return text;
}

static void test_format_parse(void **state) {
        uint8_t raw[] = { 0x0a, 0x05, 0x0a, 0x01, 'K', 0x12, 0x00 }; /* envs {K: ""} */
        char a[] = "a", b[] = "b", c[] = "c", uid[] = "uid-1", c1[] = "c1", gpu[] = "x.com/gpu";
        char *ids[] = { a, b, c };
        int numa[] = { 0, 1, 0 };
        char *reg_ids[] = { a, b };
        DpCheckpointEntry e = { .pod_uid = uid,
                                .container = c1,
                                .resource = gpu,
                                .ids = ids,
                                .numa = numa,
                                .n_ids = 3,
                                .raw = raw,
                                .raw_len = sizeof(raw) };
        DpCheckpointRes r = { .name = gpu, .ids = reg_ids, .n_ids = 2 };
        DpCheckpoint cp = { .entries = &e, .n_entries = 1, .res = &r, .n_res = 1 }, back = {};
        CubError err = {};
        char *text = NULL;

        (void) state;
        assert_int_equal(dp_checkpoint_format(&cp, &text, &err), 0);
        assert_non_null(strstr(text, "{\"Data\":{\"PodDeviceEntries\":[{\"PodUID\":\"uid-1\",\"ContainerName\":\"c1\","
                                     "\"ResourceName\":\"x.com/gpu\",\"DeviceIDs\":{\"0\":[\"a\",\"c\"],\"1\":[\"b\"]},"
                                     "\"AllocResp\":\"CgUKAUsSAA==\"}],\"RegisteredDevices\":{\"x.com/gpu\":[\"a\","
                                     "\"b\"]}},\"Checksum\":"));
        if (dp_checkpoint_parse(text, strlen(text), &back, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(back.n_entries, 1);
        assert_string_equal(back.entries[0].pod_uid, "uid-1");
        assert_int_equal(back.entries[0].n_ids, 3);
        assert_int_equal(back.entries[0].raw_len, sizeof(raw));
        assert_memory_equal(back.entries[0].raw, raw, sizeof(raw));
        assert_int_equal(back.n_res, 1);
        assert_int_equal(back.res[0].n_ids, 2);
        dp_checkpoint_done(&back);

        /* one byte changed: the checksum no longer matches */
        char *p = strstr(text, "uid-1");
        p[4] = '2';
        assert_int_equal(dp_checkpoint_parse(text, strlen(text), &back, &err), -EBADMSG);
        assert_non_null(strstr(err.msg, "Checksum"));
        free(text);
}

static void test_legacy_flat(void **state) {
        char *text = with_checksum("{\"PodDeviceEntries\":[{\"PodUID\":\"u\",\"ContainerName\":\"c\","
                                   "\"ResourceName\":\"x.com/gpu\",\"DeviceIDs\":[\"g1\",\"g0\"],\"AllocResp\":\"\"}],"
                                   "\"RegisteredDevices\":{\"x.com/gpu\":[\"g0\",\"g1\"]}}");
        DpCheckpoint cp = {};
        CubError err = {};

        (void) state;
        if (dp_checkpoint_parse(text, strlen(text), &cp, &err) < 0)
                fail_msg("%s", err.msg);
        assert_int_equal(cp.n_entries, 1);
        assert_int_equal(cp.entries[0].n_ids, 2);
        assert_string_equal(cp.entries[0].ids[0], "g1");
        assert_int_equal(cp.entries[0].numa[0], -1);
        assert_int_equal(cp.entries[0].raw_len, 0);
        dp_checkpoint_done(&cp);
        free(text);

        /* malformed shapes are named */
        text = with_checksum("{\"PodDeviceEntries\":[{\"PodUID\":\"u\",\"ContainerName\":\"c\","
                             "\"ResourceName\":\"x\",\"DeviceIDs\":{\"zero\":[\"g\"]}}]}");
        assert_int_equal(dp_checkpoint_parse(text, strlen(text), &cp, &err), -EBADMSG);
        assert_non_null(strstr(err.msg, "Data.PodDeviceEntries[0].DeviceIDs"));
        free(text);
        text = with_checksum("{\"PodDeviceEntries\":[{\"PodUID\":\"u\",\"ContainerName\":\"c\","
                             "\"ResourceName\":\"x\",\"DeviceIDs\":[],\"AllocResp\":\"@@@\"}]}");
        assert_int_equal(dp_checkpoint_parse(text, strlen(text), &cp, &err), -EBADMSG);
        assert_non_null(strstr(err.msg, "AllocResp"));
        free(text);
}

static void test_manager_round_trip(void **state) {
        T *t = *state;
        DpManager *m = NULL;
        CubError err = {};
        DpDevice d[] = { { .id = "g0", .healthy = true, .numa = 1 }, { .id = "g1", .healthy = true, .numa = 0 } };
        const DpAllocation *a;

        assert_int_equal(dp_manager_new(&(DpManagerOptions){ .dir = t->dir }, &m, &err), 0);
        assert_int_equal(dp_manager_set_devices(m, "x.com/gpu", d, 2, true), 1);
        assert_int_equal(dp_manager_adopt(m, "pod", "c", "x.com/gpu", (const char *const[]){ "g1", "g0" }, 2, &err), 0);
        dp_manager_free(m);

        assert_int_equal(dp_manager_new(&(DpManagerOptions){ .dir = t->dir }, &m, &err), 0);
        assert_string_equal(dp_manager_checkpoint_note(m), "");
        assert_int_equal(dp_manager_n_allocations(m), 1);
        a = dp_manager_allocation(m, 0);
        assert_string_equal(a->pod_uid, "pod");
        assert_int_equal(a->n_ids, 2);
        assert_string_equal(a->ids[0], "g0");
        assert_string_equal(a->ids[1], "g1");
        assert_null(a->resp.raw);
        /* RegisteredDevices: the resource is known, with no devices until its plugin registers */
        assert_non_null(dp_manager_find(m, "x.com/gpu"));
        assert_int_equal(dp_resource_capacity(dp_manager_find(m, "x.com/gpu")), 0);
        assert_int_equal(dp_manager_release_pod(m, "pod", &err), 0);
        dp_manager_free(m);

        char *text = NULL;
        size_t len = 0;
        assert_int_equal(cub_read_file(t->path, 1 << 20, &text, &len, &err), 0);
        assert_non_null(strstr(text, "\"PodDeviceEntries\":[]"));
        free(text);
}

static void test_corrupt(void **state) {
        T *t = *state;
        DpManager *m = NULL;
        CubError err = {};
        char aside[160], *text = NULL;
        size_t len;

        assert_int_equal(cub_write_file_atomic(t->path, "{\"Data\":", 8, 0600, &err), 0);
        /* read-only: noted, not moved */
        assert_int_equal(dp_manager_new(&(DpManagerOptions){ .dir = t->dir, .checkpoint_read_only = true }, &m, &err),
                         0);
        assert_non_null(strstr(dp_manager_checkpoint_note(m), "not used (read-only)"));
        dp_manager_free(m);
        assert_int_equal(access(t->path, F_OK), 0);

        assert_int_equal(dp_manager_new(&(DpManagerOptions){ .dir = t->dir }, &m, &err), 0);
        assert_non_null(strstr(dp_manager_checkpoint_note(m), "kept aside as"));
        assert_int_equal(dp_manager_n_allocations(m), 0);
        dp_manager_free(m);
        (void) snprintf(aside, sizeof(aside), "%s.corrupt", t->path);
        assert_int_equal(cub_read_file(aside, 1024, &text, &len, &err), 0);
        assert_string_equal(text, "{\"Data\":");
        free(text);
        assert_int_equal(access(t->path, F_OK), -1);

        /* an AllocResp that is base64 but not a ContainerAllocateResponse */
        text = with_checksum("{\"PodDeviceEntries\":[{\"PodUID\":\"u\",\"ContainerName\":\"c\","
                             "\"ResourceName\":\"x.com/gpu\",\"DeviceIDs\":{\"-1\":[\"g\"]},\"AllocResp\":\"/w==\"}],"
                             "\"RegisteredDevices\":{}}");
        assert_int_equal(cub_write_file_atomic(t->path, text, strlen(text), 0600, &err), 0);
        free(text);
        assert_int_equal(dp_manager_new(&(DpManagerOptions){ .dir = t->dir }, &m, &err), 0);
        assert_non_null(strstr(dp_manager_checkpoint_note(m), "AllocResp"));
        assert_int_equal(dp_manager_n_allocations(m), 0);
        dp_manager_free(m);
}

static void test_sockets_removed(void **state) {
        T *t = *state;
        DpManager *m = NULL;
        CubError err = {};
        char other[160];

        (void) snprintf(other, sizeof(other), "%s/keep.txt", t->dir);
        assert_int_equal(cub_write_file_atomic(other, "x", 1, 0600, &err), 0);
        assert_int_equal(dp_manager_new(&(DpManagerOptions){ .dir = t->dir }, &m, &err), 0);
        dp_manager_free(m);
        assert_int_equal(access(other, F_OK), 0);
        (void) unlink(other);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format_parse),
                cmocka_unit_test(test_legacy_flat),
                cmocka_unit_test_setup_teardown(test_manager_round_trip, setup, teardown),
                cmocka_unit_test_setup_teardown(test_corrupt, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sockets_removed, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
