/* SPDX-License-Identifier: Apache-2.0 */
/* agent/pod/fields-table.c and fields.c: the one table of every v1 Pod
 * field and its walker through pod_decode(): refused, warned, unknown and
 * inert fields, their paths, lines and messages, and the table itself. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/pod/pod.h"

#define HDR "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n"
#define CTR "  containers:\n  - name: a\n    image: x:1\n"

static Pod *decode(const char *source, const char *text) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode(text, strlen(text), source, POD_FORMAT_AUTO, &pod, &err) < 0)
                fail_msg("decoding %s failed: %s", source, err.msg);
        return pod;
}

/* The refused notes of a manifest, joined without a source. */
static char *refused_of(const char *text) {
        Pod *pod = decode("f.yaml", text);
        char *s = pod_field_notes_join(&pod->refused, NULL);

        assert_non_null(s);
        pod_free(pod);
        return s;
}

#define ASSERT_REFUSED(text, want)               \
        do {                                     \
                char *s_ = refused_of(text);     \
                assert_string_equal(s_, (want)); \
                free(s_);                        \
        } while (0)

#define ASSERT_CLEAN(text)                                            \
        do {                                                          \
                Pod *p_ = decode("clean.yaml", (text));               \
                char *r_ = pod_field_notes_join(&p_->refused, NULL);  \
                char *w_ = pod_field_notes_join(&p_->warnings, NULL); \
                assert_string_equal(r_, "");                          \
                assert_string_equal(w_, "");                          \
                free(r_);                                             \
                free(w_);                                             \
                pod_free(p_);                                         \
        } while (0)

/* ---- the walker ------------------------------------------------------------ */

static void test_every_implemented_field_is_clean(void **state) {
        (void) state;
        ASSERT_CLEAN(
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: ns\n  uid: u-1\n"
                "  labels: {a: b}\n  annotations: {c: d}\n"
                "spec:\n  restartPolicy: OnFailure\n  terminationGracePeriodSeconds: 5\n  nodeName: 'n'\n"
                "  nodeSelector: {kubernetes.io/os: linux}\n  priority: 10\n  priorityClassName: x\n"
                "  preemptionPolicy: Never\n  overhead: {cpu: 10m}\n  hostNetwork: true\n"
                "  resources: {requests: {cpu: 1}, limits: {cpu: 2, memory: 1Gi}}\n"
                "  os: {name: linux}\n  dnsPolicy: ClusterFirstWithHostNet\n"
                "  securityContext:\n    seccompProfile: {type: RuntimeDefault}\n"
                "    appArmorProfile: {type: RuntimeDefault}\n    runAsNonRoot: false\n"
                "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
                "        nodeSelectorTerms:\n        - matchExpressions: [{key: a, operator: In, values: [b]}]\n"
                "          matchFields: [{key: metadata.name, operator: In, values: ['n']}]\n"
                "  tolerations: [{key: k, operator: Equal, value: v, effect: NoExecute, tolerationSeconds: 3}]\n"
                "  initContainers:\n  - name: i\n    image: x:1\n    restartPolicy: Always\n"
                "  containers:\n  - name: a\n    image: x:1\n    imagePullPolicy: Never\n    command: [sh]\n"
                "    args: [-c, 'true']\n    workingDir: /\n    env: [{name: A, value: b}]\n"
                "    ports: [{name: web, containerPort: 80, hostPort: 80, hostIP: 0.0.0.0, protocol: TCP}]\n"
                "    resources: {limits: {cpu: 1}, requests: {cpu: 1}}\n"
                "    securityContext:\n      seccompProfile: {type: Localhost, localhostProfile: p.json}\n"
                "      privileged: false\n      allowPrivilegeEscalation: true\n      procMount: Default\n"
                "      readOnlyRootFilesystem: false\n      capabilities: {add: [], drop: []}\n"
                "    stdin: false\n    stdinOnce: false\n    tty: false\n"
                "    terminationMessagePath: /dev/termination-log\n    terminationMessagePolicy: File\n"
                "    livenessProbe: {httpGet: {path: /h, port: web, host: 127.0.0.1, scheme: HTTP,\n"
                "      httpHeaders: [{name: X, value: 'y'}]}, initialDelaySeconds: 1, timeoutSeconds: 1,\n"
                "      periodSeconds: 1, successThreshold: 1, failureThreshold: 1, terminationGracePeriodSeconds: 1}\n"
                "    readinessProbe: {tcpSocket: {port: 80, host: 127.0.0.1}}\n"
                "    startupProbe: {grpc: {port: 80, service: s}}\n"
                "    lifecycle: {postStart: {exec: {command: [a]}}, preStop: {sleep: {seconds: 1}}}\n"
                "  schedulerName: default-scheduler\n  enableServiceLinks: true\n  hostPID: false\n"
                "  hostIPC: false\n  shareProcessNamespace: false\n  hostUsers: true\n"
                "  setHostnameAsFQDN: false\n  volumes: []\n  hostname: ''\n  dnsConfig: null\n");
}

static void test_refused_volumes(void **state) {
        Pod *pod;
        char *s;

        (void) state;
        pod = decode("vol.yaml", HDR CTR "  volumes:\n  - name: a\n    gitRepo: {repository: r}\n"
                                         "  - name: b\n    nfs: {server: s, path: /x}\n"
                                         "  - name: c\n    configMap: {name: cm}\n");
        assert_int_equal(pod->refused.n, 3);
        assert_string_equal(pod->refused.items[1].path, "spec.volumes[1].nfs");
        assert_string_equal(pod->refused.items[1].what, "not supported by cubelet");
        assert_int_equal(pod->refused.items[1].line, 13);
        assert_string_equal(pod->refused.items[2].what,
                            "static pods may not reference configmaps (via configmap volumes)");
        s = pod_field_notes_join(&pod->refused, "vol.yaml");
        assert_string_equal(s, "vol.yaml:11: spec.volumes[0].gitRepo: not supported by cubelet; "
                               "spec.volumes[1].nfs: not supported by cubelet; spec.volumes[2].configMap: static "
                               "pods may not reference configmaps (via configmap volumes)");
        free(s);
        s = pod_field_note_format(&pod->refused.items[1], "vol.yaml");
        assert_string_equal(s, "vol.yaml:13: spec.volumes[1].nfs: not supported by cubelet");
        free(s);
        pod_free(pod);

        ASSERT_REFUSED(HDR CTR "  volumes:\n  - name: s\n    secret: {secretName: x}\n",
                       "spec.volumes[0].secret: static pods may not reference secrets (via secret volumes)");
        ASSERT_REFUSED(HDR CTR "  volumes:\n  - name: c\n    persistentVolumeClaim: {claimName: x}\n",
                       "spec.volumes[0].persistentVolumeClaim: static pods may not reference persistentvolumeclaims");
        ASSERT_REFUSED(HDR CTR "  volumes:\n  - name: t\n    projected:\n      defaultMode: 420\n      sources:\n"
                               "      - serviceAccountToken: {path: token}\n      - downwardAPI: {items: []}\n",
                       "spec.volumes[0].projected.sources[0].serviceAccountToken: static pods may not reference "
                       "serviceaccounts (via projected volumes)");
        /* volumes cubelet implements: their fields are clean */
        ASSERT_CLEAN(HDR CTR "    volumeMounts: [{name: h, mountPath: /h, readOnly: true, subPath: a, "
                             "mountPropagation: HostToContainer}]\n"
                             "  volumes:\n  - name: h\n    hostPath: {path: /data, type: DirectoryOrCreate}\n"
                             "  - name: e\n    emptyDir: {medium: Memory, sizeLimit: 1Mi}\n"
                             "  - name: d\n    downwardAPI:\n      defaultMode: 420\n      items:\n"
                             "      - {path: l, fieldRef: {apiVersion: v1, fieldPath: metadata.labels}, mode: 384}\n"
                             "      - {path: c, resourceFieldRef: {containerName: a, resource: limits.cpu, "
                             "divisor: 1m}}\n");
        ASSERT_REFUSED(HDR CTR "    volumeMounts: [{name: h, mountPath: /h, recursiveReadOnly: Enabled}]\n"
                               "  volumes:\n  - name: h\n    hostPath: {path: /data}\n",
                       "spec.containers[0].volumeMounts[0].recursiveReadOnly: not supported by cubelet");
}

static void test_refused_container_fields(void **state) {
        (void) state;
        /* probes are implemented; a lifecycle hook's tcpSocket is refused (kubelet does not run it) */
        ASSERT_REFUSED(HDR CTR
                       "    livenessProbe: {exec: {command: [\"true\"]}}\n    readinessProbe: {tcpSocket: {port: 1}}\n"
                       "    startupProbe: {grpc: {port: 1}}\n    lifecycle: {preStop: {tcpSocket: {port: 1}}}\n"
                       "    volumeDevices: [{name: d, devicePath: /d}]\n"
                       "    stdin: true\n    stdinOnce: true\n    tty: true\n",
                       "spec.containers[0].lifecycle.preStop.tcpSocket: not supported for lifecycle hooks (kubelet "
                       "does not run it either); spec.containers[0].volumeDevices: not supported by cubelet");
        /* init containers have the same table */
        ASSERT_REFUSED(
                HDR CTR
                "  initContainers:\n  - name: i\n    image: x:1\n    volumeDevices: [{name: d, devicePath: /d}]\n",
                "spec.initContainers[0].volumeDevices: not supported by cubelet");
        ASSERT_REFUSED(HDR CTR "  ephemeralContainers: [{name: e, image: x:1}]\n",
                       "spec.ephemeralContainers: Forbidden: cannot be set on create");
        /* pod-level resources: claims are forbidden (the API's validation), others unknown */
        ASSERT_REFUSED(HDR CTR "  resources:\n    claims: [{name: c}]\n    limits: {cpu: 1}\n    shares: 3\n",
                       "spec.resources.claims: Forbidden: claims may not be set for Resources at pod-level; "
                       "spec.resources.shares: unknown field");
}

static void test_env_sources(void **state) {
        (void) state;
        ASSERT_REFUSED(HDR CTR "    env:\n    - name: A\n      valueFrom: {configMapKeyRef: {name: c, key: k}}\n"
                               "    - name: B\n      valueFrom: {secretKeyRef: {name: s, key: k}}\n"
                               "    - name: C\n      valueFrom: {fieldRef: {fieldPath: status.podIP}}\n"
                               "    - name: D\n      valueFrom: {resourceFieldRef: {resource: limits.cpu}}\n",
                       "spec.containers[0].env[0].valueFrom.configMapKeyRef: static pods may not reference configmaps; "
                       "spec.containers[0].env[1].valueFrom.secretKeyRef: static pods may not reference secrets");
        ASSERT_REFUSED(HDR CTR
                       "    envFrom:\n    - prefix: X_\n      configMapRef: {name: c}\n    - secretRef: {name: s}\n",
                       "spec.containers[0].envFrom[0].configMapRef: static pods may not reference configmaps; "
                       "spec.containers[0].envFrom[1].secretRef: static pods may not reference secrets");
        ASSERT_REFUSED(HDR CTR "  imagePullSecrets: [{name: regcred}]\n",
                       "spec.imagePullSecrets: static pods may not reference secrets");
        ASSERT_REFUSED(HDR CTR "  resourceClaims: [{name: gpu}]\n",
                       "spec.resourceClaims: static pods may not use ResourceClaims");
}

static void test_unknown_fields(void **state) {
        (void) state;
        ASSERT_REFUSED("apiVersion: v1\nkind: Pod\nfoo: 1\nmetadata:\n  name: p\n  nmae: q\nspec:\n" CTR
                       "    resource: {limits: {cpu: 1}}\n    ports: [{containerPort: 80, hostport: 80}]\n"
                       "  affinity:\n    nodeAfinity: {}\n",
                       "foo: unknown field; metadata.nmae: unknown field; spec.containers[0].resource: unknown field; "
                       "spec.containers[0].ports[0].hostport: unknown field; spec.affinity.nodeAfinity: unknown "
                       "field");
        /* nothing below a refused field is looked at */
        ASSERT_REFUSED(HDR CTR "    volumeDevices: [{name: d, devicePath: /d, bogus: 1}]\n",
                       "spec.containers[0].volumeDevices: not supported by cubelet");
        /* below an implemented one, an unknown field is one */
        ASSERT_REFUSED(HDR CTR "    livenessProbe: {exec: {command: [a]}, bogus: 1}\n",
                       "spec.containers[0].livenessProbe.bogus: unknown field");
}

static void test_inert_and_absent_values(void **state) {
        (void) state;
        /* a value that means the default says nothing; another is refused */
        ASSERT_REFUSED(HDR CTR "  hostUsers: false\n  os: {name: windows}\n"
                               "  securityContext:\n    appArmorProfile: {type: Unconfined}\n"
                               "    supplementalGroupsPolicy: Strict\n",
                       "spec.hostUsers: not supported by cubelet; "
                       "spec.os.name: not supported by cubelet; "
                       "spec.securityContext.appArmorProfile.type: not supported by cubelet; "
                       "spec.securityContext.supplementalGroupsPolicy: not supported by cubelet");
        /* the security context is implemented (issue 11 point 4), seLinuxOptions too (to the runtime) */
        ASSERT_CLEAN(HDR CTR "    securityContext:\n      allowPrivilegeEscalation: false\n      privileged: false\n"
                             "      procMount: Unmasked\n      readOnlyRootFilesystem: true\n"
                             "      capabilities: {add: [NET_ADMIN], drop: [ALL]}\n      runAsNonRoot: true\n"
                             "  hostPID: true\n  hostIPC: true\n"
                             "  securityContext: {runAsUser: 1000, runAsGroup: 0, supplementalGroups: [5],"
                             " sysctls: [{name: kernel.shm_rmid_forced, value: '1'}]}\n");
        ASSERT_CLEAN(HDR CTR "    securityContext: {seLinuxOptions: {type: spc_t}}\n"
                             "  securityContext: {seLinuxOptions: {user: u, role: r, type: t, level: 's0:c0,c1'}}\n");
        /* null, "" and [] are absent; {} is not (emptyDir: {} is a volume) */
        ASSERT_CLEAN(HDR CTR "    volumeMounts: ~\n  activeDeadlineSeconds: null\n  hostAliases: []\n"
                             "  runtimeClassName: ''\n");
        ASSERT_CLEAN(HDR CTR "  dnsConfig: {}\n"); /* network: implemented */
        /* nfs: {} is a value */
        ASSERT_REFUSED(HDR CTR "  volumes: [{name: v, nfs: {}}]\n", "spec.volumes[0].nfs: not supported by cubelet");
}

static void test_warnings(void **state) {
        Pod *pod;
        char *s;

        (void) state;
        /* resizePolicy is implemented (in-place resize): no warning, its line kept */
        pod = decode("w.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  resourceVersion: '5'\nspec:\n" CTR
                               "    resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]\n"
                               "    terminationMessagePath: /tmp/m\n"
                               "    securityContext: {windowsOptions: {runAsUserName: x}}\n"
                               "  schedulerName: other\n  serviceAccount: sa\n  automountServiceAccountToken: false\n"
                               "  enableServiceLinks: false\n  schedulingGates: [{name: g}]\n"
                               "  affinity: {podAffinity: {}}\nstatus: {phase: Running}\n");
        assert_int_equal(pod->refused.n, 0);
        s = pod_field_notes_join(&pod->warnings, NULL);
        assert_string_equal(
                s, "metadata.resourceVersion: ignored: set by the API server, there is none; "
                   "spec.containers[0].securityContext.windowsOptions: ignored on Linux; "
                   "spec.schedulerName: ignored: a static pod is not scheduled; spec.serviceAccount: ignored: static "
                   "pods get no service account token; spec.automountServiceAccountToken: ignored: static pods get "
                   "no service account token; spec.schedulingGates: ignored: a static pod is not scheduled; "
                   "spec.affinity.podAffinity: "
                   "ignored: a static pod is not scheduled; status: ignored: cubelet computes the status");
        free(s);
        /* the line of each field, booleans included */
        assert_int_equal(pod->warnings.items[0].line, 5);
        assert_int_equal(pod->warnings.items[4].line, 15);
        s = pod_field_note_format(&pod->warnings.items[4], "w.yaml");
        assert_string_equal(s, "w.yaml:15: spec.automountServiceAccountToken: ignored: static pods get no service "
                               "account token");
        free(s);
        pod_free(pod);
}

static void test_json_and_types(void **state) {
        Pod *pod;
        char *s;
        CubError err = {};
        const char *bad_type = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
                               "\"spec\":{\"os\":\"linux\",\"volumes\":[5],"
                               "\"containers\":[{\"name\":\"a\",\"image\":\"x:1\",\"env\":[{\"name\":\"A\","
                               "\"valueFrom\":[]}]}]}}";
        const char *both = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n" CTR
                           "    bogus: 1\n    resources: {limits: {cpu: 1.5.5}}\n";

        (void) state;
        /* JSON: no lines; objects the decoder does not read are type-checked here */
        pod = decode("p.json", bad_type);
        s = pod_field_notes_join(&pod->refused, "p.json");
        assert_string_equal(s, "p.json: spec.os: Invalid type: expected object; spec.volumes[0]: Invalid type: "
                               "expected object");
        free(s);
        pod_free(pod);
        /* a decoding error wins over the notes: there is no pod */
        pod = NULL;
        assert_int_equal(pod_decode(both, strlen(both), "b.yaml", POD_FORMAT_YAML, &pod, &err), -EINVAL);
        assert_null(pod);
        assert_string_equal(err.msg, "b.yaml:10: spec.containers[0].resources.limits[cpu]: invalid quantity "
                                     "\"1.5.5\": more than one '.'");
}

static void test_static_decode_keeps_notes(void **state) {
        const char *m = HDR CTR "    volumeDevices: [{name: d, devicePath: /d}]\n  schedulerName: s\n";
        Pod *pod = NULL;
        CubError err = {};

        (void) state;
        assert_int_equal(pod_decode_static(m, strlen(m), "s.yaml", POD_FORMAT_YAML, "n1", POD_SOURCE_FILE, "/s.yaml",
                                           &pod, &err),
                         0);
        assert_int_equal(pod->refused.n, 1);
        assert_int_equal(pod->warnings.n, 1);
        assert_string_equal(pod->name, "p-n1");
        pod_free(pod);
}

/* ---- the table ----------------------------------------------------------------- */

typedef struct Counts {
        size_t n[_POD_FIELD_CLASS_MAX];
        bool nfs, probe, cm_env, scheduler, image, host_pid, shared_twice;
        char last[512];
} Counts;

static void count_field(const char *path, PodFieldClass cls, const char *what, const char *const *inert,
                        void *userdata) {
        Counts *c = userdata;

        if (strcmp(path, "spec.hostUsers") == 0) {
                assert_non_null(inert);
                assert_string_equal(inert[0], "true");
                assert_null(inert[1]);
                c->host_pid = true;
        }
        assert_true(cls >= 0 && cls < _POD_FIELD_CLASS_MAX);
        assert_non_null(pod_field_class_to_string(cls));
        assert_non_null(what);
        if (cls != POD_FIELD_IMPLEMENTED)
                assert_true(*what);
        /* no field twice in a row (a duplicate in one table) */
        assert_string_not_equal(path, c->last);
        (void) snprintf(c->last, sizeof(c->last), "%s", path);
        c->n[cls]++;
        if (strcmp(path, "spec.volumes[].nfs") == 0 && cls == POD_FIELD_REFUSE)
                c->nfs = true;
        if (strcmp(path, "spec.containers[].livenessProbe") == 0 && cls == POD_FIELD_IMPLEMENTED)
                c->probe = true;
        if (strcmp(path, "spec.containers[].env[].valueFrom.configMapKeyRef") == 0 &&
            strcmp(what, "static pods may not reference configmaps") == 0)
                c->cm_env = true;
        if (strcmp(path, "spec.schedulerName") == 0 && cls == POD_FIELD_WARN)
                c->scheduler = true;
        if (strcmp(path, "spec.containers[].image") == 0 && cls == POD_FIELD_IMPLEMENTED)
                c->image = true;
        /* the container table is visited once */
        if (strncmp(path, "spec.initContainers[].", 22) == 0)
                c->shared_twice = true;
}

static void test_table(void **state) {
        Counts c = {};

        (void) state;
        pod_field_table_visit(count_field, &c);
        assert_true(c.nfs && c.probe && c.cm_env && c.scheduler && c.image && c.host_pid);
        assert_false(c.shared_twice);
        print_message("# fields: %zu implemented, %zu accepted with a warning, %zu refused\n",
                      c.n[POD_FIELD_IMPLEMENTED], c.n[POD_FIELD_WARN], c.n[POD_FIELD_REFUSE]);
        assert_int_equal(c.n[POD_FIELD_IMPLEMENTED], 191);
        assert_int_equal(c.n[POD_FIELD_WARN], 20);
        assert_int_equal(c.n[POD_FIELD_REFUSE], 50);
        assert_string_equal(pod_field_class_to_string(POD_FIELD_REFUSE), "refuse");
        assert_null(pod_field_class_to_string(_POD_FIELD_CLASS_MAX));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_implemented_field_is_clean),
                cmocka_unit_test(test_refused_volumes),
                cmocka_unit_test(test_refused_container_fields),
                cmocka_unit_test(test_env_sources),
                cmocka_unit_test(test_unknown_fields),
                cmocka_unit_test(test_inert_and_absent_values),
                cmocka_unit_test(test_warnings),
                cmocka_unit_test(test_json_and_types),
                cmocka_unit_test(test_static_decode_keeps_notes),
                cmocka_unit_test(test_table),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
