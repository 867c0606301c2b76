/* SPDX-License-Identifier: Apache-2.0 */
/* The pods of agent/cgroup/values.c's tests (test-values.c,
 * test-values-pod-level.c): a manifest header with a fixed UID, container
 * and resources snippets, the decoded pod, the options (16 GiB node) and
 * the pod cgroup's values. Include after cmocka.h, cgroup.h and pod.h. */
#pragma once

#define UID "7e3c5c2e-1b6f-4b7a-9a34-2f2d3b7a8c10"
#define CAPACITY_16GI 17179869184ULL

#define HDR "apiVersion: v1\nkind: Pod\nmetadata:\n  name: v\n  uid: " UID "\nspec:\n"
#define C(name, extra) "  - name: " name "\n    image: x:1\n" extra
#define RES(req, lim) "    resources:\n      requests: {" req "}\n      limits: {" lim "}\n"
#define REQ(req) "    resources:\n      requests: {" req "}\n"
#define LIM(lim) "    resources:\n      limits: {" lim "}\n"

static Pod *pod_of(const char *spec) {
        char text[4096];
        Pod *pod = NULL;
        CubError err = {};

        assert_true((size_t) snprintf(text, sizeof(text), "%s%s", HDR, spec) < sizeof(text));
        if (pod_decode(text, strlen(text), "v.yaml", POD_FORMAT_YAML, &pod, &err) < 0)
                fail_msg("decode failed: %s", err.msg);
        return pod;
}

static CgOptions opts(void) {
        CgOptions o;

        cg_options_init(&o);
        o.memory_capacity = CAPACITY_16GI;
        return o;
}

/* Pod cgroup values of spec under o; the pod is freed before returning. */
static CgGroupValues pod_values(const char *spec, const CgOptions *o, PodQOSClass *ret_qos) {
        Pod *pod = pod_of(spec);
        PodEffective eff;
        CgGroupValues g;
        CubError err = {};
        PodQOSClass qos = pod_qos_class(pod);
        int r;

        assert_int_equal(pod_effective(pod, &eff, &err), 0);
        r = cg_pod_values(pod, &eff, qos, o, &g, &err);
        pod_effective_done(&eff);
        pod_free(pod);
        if (r < 0)
                fail_msg("cg_pod_values failed: %s", err.msg);
        if (ret_qos)
                *ret_qos = qos;
        return g;
}

/* CRI resources of container `name` (app or init) of spec under o. */
static CgContainerResources container_res(const char *spec, const char *name, const CgOptions *o) {
        Pod *pod = pod_of(spec);
        const PodContainer *c = NULL;
        CgContainerResources r;

        for (size_t i = 0; i < pod->n_init_containers + pod->n_containers; i++)
                if (strcmp(pod_container_at(pod, i, NULL)->name, name) == 0)
                        c = pod_container_at(pod, i, NULL);
        if (!c) {
                pod_free(pod);
                fail_msg("no container %s", name);
        }
        memset(&r, 0x5a, sizeof(r));
        cg_container_resources(pod, pod_qos_class(pod), c, o, &r);
        pod_free(pod);
        return r;
}
