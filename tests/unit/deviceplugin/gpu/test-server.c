/* SPDX-License-Identifier: Apache-2.0 */
/*
 * deviceplugin/gpu/server.c and nvml.c's pure helpers: the advertised list
 * (replicas, topology, health), the Allocate and GetPreferredAllocation
 * handlers' replies over a tmpdir --dev-root, the state's generation, the
 * PCI bus id normalisation and the NUMA node read from a tmpdir sysfs.
 */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "../../../../deviceplugin/gpu/alloc.c"
#include "../../../../deviceplugin/gpu/nvml.c"
#include "../../../../deviceplugin/gpu/server.c"
#include "agent/util/fileio.h"

#define U0 "GPU-00000000-aaaa-0000-0000-000000000000"
#define U1 "GPU-11111111-bbbb-0000-0000-000000000001"

static char tmpdir[] = "/tmp/gpu-server-test-XXXXXX";

static const GpuDevice devs[2] = {
        { .uuid = U0, .minor = 4, .index = 0, .numa = 1, .healthy = true },
        { .uuid = U1, .minor = 7, .index = 1, .numa = -1, .healthy = true },
};

static void write_file(const char *rel, const char *content) {
        _cleanup_free_ char *p = NULL;
        FILE *f;

        assert_true(asprintf(&p, "%s/%s", tmpdir, rel) > 0);
        f = fopen(p, "we");
        assert_non_null(f);
        fputs(content, f);
        fclose(f);
}

static void mkdirs(const char *rel) {
        _cleanup_free_ char *p = NULL;

        assert_true(asprintf(&p, "%s/%s", tmpdir, rel) > 0);
        assert_int_equal(cub_mkdir_p(p, 0755), 0);
}

static int setup(void **state) {
        (void) state;
        if (!mkdtemp(tmpdir))
                return -1;
        return 0;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
        (void) sb;
        (void) flag;
        (void) ftw;
        return remove(path);
}

static int teardown(void **state) {
        (void) state;
        return nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_bus_id(void **state) {
        char out[32];

        (void) state;
        bus_id_normalize("00000000:3B:00.0", out, sizeof(out));
        assert_string_equal(out, "0000:3b:00.0");
        bus_id_normalize("0000:AF:00.0", out, sizeof(out));
        assert_string_equal(out, "0000:af:00.0");
        bus_id_normalize("00000001:0A:1F.7", out, sizeof(out));
        assert_string_equal(out, "0001:0a:1f.7");
}

static void test_numa_node(void **state) {
        _cleanup_free_ char *sys = NULL;

        (void) state;
        assert_true(asprintf(&sys, "%s/sys", tmpdir) > 0);
        mkdirs("sys/bus/pci/devices/0000:3b:00.0");
        mkdirs("sys/bus/pci/devices/0000:af:00.0");
        mkdirs("sys/bus/pci/devices/0000:d8:00.0");
        write_file("sys/bus/pci/devices/0000:3b:00.0/numa_node", "1\n");
        write_file("sys/bus/pci/devices/0000:af:00.0/numa_node", "-1\n");
        write_file("sys/bus/pci/devices/0000:d8:00.0/numa_node", "garbage\n");
        assert_int_equal(read_numa_node(sys, "0000:3b:00.0"), 1);
        assert_int_equal(read_numa_node(sys, "0000:af:00.0"), -1);
        assert_int_equal(read_numa_node(sys, "0000:d8:00.0"), -1);
        assert_int_equal(read_numa_node(sys, "0000:00:00.0"), -1);
}

static void test_list(void **state) {
        GpuState st;
        V1beta1__ListAndWatchResponse *m = NULL;
        uint64_t gen;

        (void) state;
        assert_int_equal(gpu_state_init(&st, 3, "/"), 0);
        assert_int_equal(gpu_state_set_devices(&st, devs, 2), 0);
        gen = st.generation;
        assert_int_equal(build_list(&st, &m), 0);
        assert_int_equal(m->n_devices, 6);
        assert_string_equal(m->devices[0]->id, U0 "::0");
        assert_string_equal(m->devices[2]->id, U0 "::2");
        assert_string_equal(m->devices[3]->id, U1 "::0");
        assert_string_equal(m->devices[0]->health, "Healthy");
        assert_non_null(m->devices[0]->topology);
        assert_int_equal(m->devices[0]->topology->n_nodes, 1);
        assert_int_equal(m->devices[0]->topology->nodes[0]->id, 1);
        assert_null(m->devices[4]->topology);
        protobuf_c_message_free_unpacked(&m->base, NULL);

        /* unhealthy: once, then no change; "" marks all */
        assert_int_equal(gpu_state_set_health(&st, U1, false), 1);
        assert_int_equal(st.generation, gen + 1);
        assert_int_equal(gpu_state_set_health(&st, U1, false), 0);
        assert_int_equal(gpu_state_set_health(&st, "GPU-other", false), 0);
        assert_int_equal(st.generation, gen + 1);
        assert_int_equal(build_list(&st, &m), 0);
        assert_string_equal(m->devices[0]->health, "Healthy");
        assert_string_equal(m->devices[5]->health, "Unhealthy");
        protobuf_c_message_free_unpacked(&m->base, NULL);
        assert_int_equal(gpu_state_set_health(&st, "", false), 1);
        assert_false(st.devs[0].healthy);
        /* healthy again (a GPU that recovered): one change, listed so */
        assert_int_equal(gpu_state_set_health(&st, U1, true), 1);
        assert_int_equal(st.generation, gen + 3);
        assert_int_equal(gpu_state_set_health(&st, U1, true), 0);
        assert_int_equal(build_list(&st, &m), 0);
        assert_string_equal(m->devices[0]->health, "Unhealthy");
        assert_string_equal(m->devices[5]->health, "Healthy");
        protobuf_c_message_free_unpacked(&m->base, NULL);
        gpu_state_done(&st);
}

static void test_allocate_handler(void **state) {
        _cleanup_free_ char *root = NULL;
        char *ids0[] = { (char *) U1, (char *) U0 };
        char *ids1[] = { (char *) "GPU-nope" };
        V1beta1__ContainerAllocateRequest c0 = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT;
        V1beta1__ContainerAllocateRequest *cs[] = { &c0 };
        V1beta1__AllocateRequest req = V1BETA1__ALLOCATE_REQUEST__INIT;
        V1beta1__AllocateResponse *resp;
        ProtobufCMessage *out = NULL;
        char details[256] = "";
        GpuState st;

        (void) state;
        mkdirs("root/dev");
        write_file("root/dev/nvidia-uvm-tools", "");
        assert_true(asprintf(&root, "%s/root", tmpdir) > 0);
        assert_int_equal(gpu_state_init(&st, 1, root), 0);
        assert_int_equal(gpu_state_set_devices(&st, devs, 2), 0);
        c0.devices_ids = ids0;
        c0.n_devices_ids = 2;
        req.container_requests = cs;
        req.n_container_requests = 1;
        assert_int_equal(on_allocate(&st, &req.base, &out, details, sizeof(details)), GRPCX_OK);
        resp = (V1beta1__AllocateResponse *) out;
        assert_int_equal(resp->n_container_responses, 1);
        assert_int_equal(resp->container_responses[0]->n_envs, 1);
        assert_string_equal(resp->container_responses[0]->envs[0]->key, "NVIDIA_VISIBLE_DEVICES");
        assert_string_equal(resp->container_responses[0]->envs[0]->value, U0 "," U1);
        /* only uvm-tools exists under this root */
        assert_int_equal(resp->container_responses[0]->n_devices, 3);
        assert_string_equal(resp->container_responses[0]->devices[0]->host_path, "/dev/nvidia4");
        assert_string_equal(resp->container_responses[0]->devices[1]->container_path, "/dev/nvidia7");
        assert_string_equal(resp->container_responses[0]->devices[2]->host_path, "/dev/nvidia-uvm-tools");
        assert_string_equal(resp->container_responses[0]->devices[2]->permissions, "rw");
        free_msg(NULL, out);

        out = NULL;
        c0.devices_ids = ids1;
        c0.n_devices_ids = 1;
        assert_int_equal(on_allocate(&st, &req.base, &out, details, sizeof(details)), GRPCX_INVALID_ARGUMENT);
        assert_string_equal(details, "unknown device ID 'GPU-nope'");
        assert_null(out);
        gpu_state_done(&st);
}

static void test_preferred_handler(void **state) {
        char *avail[] = { (char *) U1, (char *) U0 };
        V1beta1__ContainerPreferredAllocationRequest c0 = V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT;
        V1beta1__ContainerPreferredAllocationRequest *cs[] = { &c0 };
        V1beta1__PreferredAllocationRequest req = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
        V1beta1__PreferredAllocationResponse *resp;
        ProtobufCMessage *out = NULL;
        char details[256] = "";
        GpuState st;

        (void) state;
        assert_int_equal(gpu_state_init(&st, 1, "/"), 0);
        assert_int_equal(gpu_state_set_devices(&st, devs, 2), 0);
        c0.available_deviceids = avail;
        c0.n_available_deviceids = 2;
        c0.allocation_size = 1;
        req.container_requests = cs;
        req.n_container_requests = 1;
        assert_int_equal(on_preferred(&st, &req.base, &out, details, sizeof(details)), GRPCX_OK);
        resp = (V1beta1__PreferredAllocationResponse *) out;
        assert_int_equal(resp->n_container_responses, 1);
        assert_int_equal(resp->container_responses[0]->n_deviceids, 1);
        assert_string_equal(resp->container_responses[0]->deviceids[0], U0);
        free_msg(NULL, out);

        out = NULL;
        c0.allocation_size = 5;
        assert_int_equal(on_preferred(&st, &req.base, &out, details, sizeof(details)), GRPCX_INVALID_ARGUMENT);
        assert_null(out);
        gpu_state_done(&st);
}

static void test_options(void **state) {
        ProtobufCMessage *out = NULL;
        V1beta1__DevicePluginOptions *o;
        char details[64];

        (void) state;
        assert_int_equal(on_options(NULL, NULL, &out, details, sizeof(details)), GRPCX_OK);
        o = (V1beta1__DevicePluginOptions *) out;
        assert_true(o->get_preferred_allocation_available);
        assert_false(o->pre_start_required);
        free_msg(NULL, out);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bus_id),
                cmocka_unit_test(test_numa_node),
                cmocka_unit_test(test_list),
                cmocka_unit_test(test_allocate_handler),
                cmocka_unit_test(test_preferred_handler),
                cmocka_unit_test(test_options),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
