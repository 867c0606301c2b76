/* SPDX-License-Identifier: Apache-2.0 */
/* agent/pod/decode-security.c and security.c: the securityContext model,
 * its API validation, kubelet's effective security context, no_new_privs,
 * runAsNonRoot against the image user, and the sysctl classification and
 * allow list. */
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

#define HDR "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  uid: u1\nspec:\n"
#define CTR "  containers:\n  - name: a\n    image: x:1\n"

static Pod *decode(const char *text) {
        Pod *pod = NULL;
        CubError err = {};

        if (pod_decode(text, strlen(text), "s.yaml", POD_FORMAT_AUTO, &pod, &err) < 0)
                fail_msg("decoding failed: %s", err.msg);
        assert_int_equal(pod->refused.n, 0);
        return pod;
}

static void assert_decode_error(const char *text, const char *want) {
        Pod *pod = NULL;
        CubError err = {};

        assert_int_equal(pod_decode(text, strlen(text), "s.yaml", POD_FORMAT_AUTO, &pod, &err), -EINVAL);
        assert_null(pod);
        assert_string_equal(err.msg, want);
}

static void test_decode(void **state) {
        Pod *pod;
        const PodSecurity *s, *c;

        (void) state;
        pod = decode(HDR "  hostPID: true\n  hostIPC: true\n"
                         "  securityContext:\n    runAsUser: 1000\n    runAsGroup: 3000\n    runAsNonRoot: true\n"
                         "    supplementalGroups: [4, 5]\n"
                         "    sysctls: [{name: net.ipv4.tcp_syncookies, value: '1'}, {name: kernel.shm_rmid_forced}]\n"
                         "    seccompProfile: {type: RuntimeDefault}\n" CTR
                         "    securityContext:\n      runAsUser: 0\n      privileged: true\n"
                         "      capabilities: {add: [NET_ADMIN, SYS_TIME], drop: [ALL]}\n"
                         "      readOnlyRootFilesystem: true\n      allowPrivilegeEscalation: true\n"
                         "      procMount: Unmasked\n");
        s = &pod->security;
        c = &pod->containers[0].security;
        assert_true(pod->host_pid && pod->host_ipc && !pod->share_process_namespace);
        assert_true(s->run_as_user_set && s->run_as_user == 1000);
        assert_true(s->run_as_group_set && s->run_as_group == 3000);
        assert_true(s->run_as_non_root_set && s->run_as_non_root);
        assert_int_equal(s->n_supplemental_groups, 2);
        assert_int_equal(s->supplemental_groups[1], 5);
        assert_int_equal(s->n_sysctls, 2);
        assert_string_equal(s->sysctls[0].name, "net.ipv4.tcp_syncookies");
        assert_string_equal(s->sysctls[0].value, "1");
        assert_string_equal(s->sysctls[1].value, "");
        /* the seccomp decoder still sees its field */
        assert_string_equal(pod->seccomp.type, "RuntimeDefault");
        assert_true(c->run_as_user_set && c->run_as_user == 0);
        assert_false(c->run_as_group_set);
        assert_true(c->privileged_set && c->privileged);
        assert_int_equal(c->cap_add.n, 2);
        assert_string_equal(c->cap_add.items[0], "NET_ADMIN");
        assert_string_equal(c->cap_drop.items[0], "ALL");
        assert_true(c->read_only_root_fs);
        assert_true(c->allow_privilege_escalation_set && c->allow_privilege_escalation);
        assert_string_equal(c->proc_mount, "Unmasked");
        assert_true(pod_security_any_privileged(pod));
        pod_free(pod);

        pod = decode(HDR CTR);
        assert_false(pod->containers[0].security.run_as_user_set);
        assert_false(pod_security_any_privileged(pod));
        pod_free(pod);
}

static void test_validation(void **state) {
        (void) state;
        assert_decode_error(HDR CTR "    securityContext: {allowPrivilegeEscalation: false, privileged: true}\n",
                            "s.yaml:10: spec.containers[0].securityContext: Invalid value: cannot set "
                            "`allowPrivilegeEscalation` to false and `privileged` to true");
        assert_decode_error(HDR CTR "    securityContext:\n      allowPrivilegeEscalation: false\n"
                                    "      capabilities: {add: [CAP_SYS_ADMIN]}\n",
                            "s.yaml:11: spec.containers[0].securityContext: Invalid value: cannot set "
                            "`allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN");
        assert_decode_error(HDR CTR "    securityContext: {runAsUser: -1}\n",
                            "s.yaml:10: spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be "
                            "between 0 and 2147483647, inclusive");
        assert_decode_error(HDR CTR "  securityContext: {supplementalGroups: [1, 4294967296]}\n",
                            "s.yaml:10: spec.securityContext.supplementalGroups[1]: Invalid value: 4294967296: must "
                            "be between 0 and 2147483647, inclusive");
        assert_decode_error(HDR CTR "    securityContext: {procMount: Masked}\n",
                            "s.yaml:10: spec.containers[0].securityContext.procMount: Unsupported value: \"Masked\": "
                            "supported values: \"Default\", \"Unmasked\"");
        assert_decode_error(HDR CTR "  securityContext:\n    sysctls:\n    - {name: Net.Core, value: '1'}\n",
                            "s.yaml:12: spec.securityContext.sysctls[0].name: Invalid value: \"Net.Core\": must have "
                            "at most 253 characters and match regex "
                            "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$");
        assert_decode_error(HDR CTR "  securityContext:\n    sysctls:\n    - {name: net.a.b, value: '1'}\n"
                                    "    - {name: net/a/b, value: '2'}\n",
                            "s.yaml:13: spec.securityContext.sysctls[1].name: Duplicate value: \"net/a/b\"");
        assert_decode_error(HDR CTR "  hostPID: true\n  shareProcessNamespace: true\n",
                            "s.yaml:11: spec.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and "
                            "HostPID cannot both be enabled");
}

static void test_effective(void **state) {
        Pod *pod;
        PodSecurity e;

        (void) state;
        pod = decode(HDR "  securityContext: {runAsUser: 1000, runAsGroup: 2000, runAsNonRoot: true,"
                         " supplementalGroups: [7]}\n" CTR "    securityContext: {runAsUser: 0, runAsNonRoot: false}\n"
                         "  - name: b\n    image: x:1\n"
                         "  - name: c\n    image: x:1\n    securityContext:\n      runAsGroup: 5\n"
                         "      allowPrivilegeEscalation: false\n      capabilities: {drop: [NET_RAW]}\n");
        /* the container overrides what it sets */
        pod_security_effective(pod, &pod->containers[0], &e);
        assert_true(e.run_as_user_set && e.run_as_user == 0);
        assert_true(e.run_as_group_set && e.run_as_group == 2000);
        assert_true(e.run_as_non_root_set && !e.run_as_non_root);
        assert_int_equal(e.n_supplemental_groups, 1);
        assert_int_equal(e.supplemental_groups[0], 7);
        assert_false(pod_security_no_new_privs(&e));
        /* nothing of its own: the pod's */
        pod_security_effective(pod, &pod->containers[1], &e);
        assert_true(e.run_as_user == 1000 && e.run_as_group == 2000 && e.run_as_non_root);
        assert_int_equal(e.cap_drop.n, 0);
        assert_false(pod_security_no_new_privs(&e));
        pod_security_effective(pod, &pod->containers[2], &e);
        assert_true(e.run_as_user == 1000 && e.run_as_group == 5);
        assert_true(pod_security_no_new_privs(&e));
        assert_int_equal(e.cap_drop.n, 1);
        assert_string_equal(e.cap_drop.items[0], "NET_RAW");
        pod_free(pod);
}

/* seLinuxOptions: decoded at both levels; the container's replaces the
 * pod's whole (DetermineEffectiveSecurityContext), even an empty one */
static void test_selinux(void **state) {
        Pod *pod;
        PodSecurity e;

        (void) state;
        pod = decode(HDR "  securityContext:\n    seLinuxOptions: {level: 's0:c0,c1', type: spc_t}\n" CTR
                         "  - name: b\n    image: x:1\n    securityContext:\n      seLinuxOptions: {user: system_u}\n"
                         "  - name: c\n    image: x:1\n    securityContext: {seLinuxOptions: {}}\n");
        assert_true(pod->security.selinux.set);
        assert_string_equal(pod->security.selinux.level, "s0:c0,c1");
        assert_string_equal(pod->security.selinux.type, "spc_t");
        assert_null(pod->security.selinux.user);
        pod_security_effective(pod, &pod->containers[0], &e);
        assert_true(e.selinux.set);
        assert_string_equal(e.selinux.level, "s0:c0,c1");
        pod_security_effective(pod, &pod->containers[1], &e);
        assert_true(e.selinux.set);
        assert_string_equal(e.selinux.user, "system_u");
        assert_null(e.selinux.level);
        pod_security_effective(pod, &pod->containers[2], &e);
        assert_true(e.selinux.set);
        assert_null(e.selinux.level);
        assert_null(e.selinux.type);
        pod_free(pod);
        /* none at all: nothing for the runtime */
        pod = decode(HDR CTR);
        pod_security_effective(pod, &pod->containers[0], &e);
        assert_false(e.selinux.set);
        pod_free(pod);
}

static void test_no_new_privs(void **state) {
        PodSecurity s = {};

        (void) state;
        /* unset: kubelet sends false (containerd then keeps the runtime's default) */
        assert_false(pod_security_no_new_privs(&s));
        s.allow_privilege_escalation_set = true;
        s.allow_privilege_escalation = true;
        assert_false(pod_security_no_new_privs(&s));
        s.allow_privilege_escalation = false;
        assert_true(pod_security_no_new_privs(&s));
}

/* runAsNonRoot against the image user as containerd reports it */
static int non_root(const char *pod_sc, const char *ctr_sc, const char *image_user, char *msg, size_t size) {
        char text[1024];
        Pod *pod;
        bool uid_set;
        int64_t uid;
        char name[64];
        int r;

        (void) snprintf(text, sizeof(text), HDR "  securityContext: %s\n" CTR "    securityContext: %s\n", pod_sc,
                        ctr_sc);
        pod = decode(text);
        pod_image_user_parse(image_user, &uid_set, &uid, name, sizeof(name));
        msg[0] = 0;
        r = pod_security_check_non_root(pod, &pod->containers[0], uid_set, uid, name, msg, size);
        pod_free(pod);
        return r;
}

static void test_run_as_non_root(void **state) {
        char msg[512];
        bool set;
        int64_t uid;
        char name[64];

        (void) state;
        pod_image_user_parse("1000:1000", &set, &uid, name, sizeof(name));
        assert_true(set && uid == 1000 && !*name);
        pod_image_user_parse("0", &set, &uid, name, sizeof(name));
        assert_true(set && uid == 0);
        pod_image_user_parse("root", &set, &uid, name, sizeof(name));
        assert_false(set);
        assert_string_equal(name, "root");
        pod_image_user_parse("nobody:nogroup", &set, &uid, name, sizeof(name));
        assert_string_equal(name, "nobody");
        pod_image_user_parse("", &set, &uid, name, sizeof(name));
        assert_true(!set && !*name);

        /* not asked: anything goes */
        assert_int_equal(non_root("{}", "{}", "", msg, sizeof(msg)), 0);
        assert_int_equal(non_root("{runAsNonRoot: false}", "{}", "0", msg, sizeof(msg)), 0);
        /* numeric non-zero image users pass */
        assert_int_equal(non_root("{runAsNonRoot: true}", "{}", "1000", msg, sizeof(msg)), 0);
        assert_int_equal(non_root("{runAsNonRoot: true}", "{}", "1000:1000", msg, sizeof(msg)), 0);
        /* root by number, or no user at all */
        assert_int_equal(non_root("{runAsNonRoot: true}", "{}", "0", msg, sizeof(msg)), -EPERM);
        assert_string_equal(msg, "container has runAsNonRoot and image will run as root (pod: \"p_default(u1)\", "
                                 "container: a)");
        assert_int_equal(non_root("{}", "{runAsNonRoot: true}", "", msg, sizeof(msg)), -EPERM);
        assert_string_equal(msg, "container has runAsNonRoot and image will run as root (pod: \"p_default(u1)\", "
                                 "container: a)");
        assert_int_equal(non_root("{runAsNonRoot: true}", "{}", "0:0", msg, sizeof(msg)), -EPERM);
        /* names cannot be verified, "root" neither */
        assert_int_equal(non_root("{runAsNonRoot: true}", "{}", "root", msg, sizeof(msg)), -EPERM);
        assert_string_equal(msg, "container has runAsNonRoot and image has non-numeric user (root), cannot verify user "
                                 "is non-root (pod: \"p_default(u1)\", container: a)");
        assert_int_equal(non_root("{runAsNonRoot: true}", "{}", "www-data:www-data", msg, sizeof(msg)), -EPERM);
        assert_string_equal(msg, "container has runAsNonRoot and image has non-numeric user (www-data), cannot verify "
                                 "user is non-root (pod: \"p_default(u1)\", container: a)");
        /* runAsUser decides before the image */
        assert_int_equal(non_root("{runAsNonRoot: true, runAsUser: 1000}", "{}", "root", msg, sizeof(msg)), 0);
        assert_int_equal(non_root("{runAsNonRoot: true}", "{runAsUser: 0}", "1000", msg, sizeof(msg)), -EPERM);
        assert_string_equal(msg, "container's runAsUser breaks non-root policy (pod: \"p_default(u1)\", container: a)");
        /* the container's runAsNonRoot false wins */
        assert_int_equal(non_root("{runAsNonRoot: true}", "{runAsNonRoot: false}", "0", msg, sizeof(msg)), 0);
}

static void test_sysctl_classes(void **state) {
        char buf[64];

        (void) state;
        pod_sysctl_normalize("net/ipv4/conf/eno2.100/rp_filter", buf, sizeof(buf));
        assert_string_equal(buf, "net.ipv4.conf.eno2/100.rp_filter");
        pod_sysctl_normalize("net.ipv4.tcp_syncookies", buf, sizeof(buf));
        assert_string_equal(buf, "net.ipv4.tcp_syncookies");
        assert_int_equal(pod_sysctl_namespace("net.core.somaxconn"), POD_SYSCTL_NS_NET);
        assert_int_equal(pod_sysctl_namespace("net/core/somaxconn"), POD_SYSCTL_NS_NET);
        assert_int_equal(pod_sysctl_namespace("kernel.shmmax"), POD_SYSCTL_NS_IPC);
        assert_int_equal(pod_sysctl_namespace("kernel.msgmax"), POD_SYSCTL_NS_IPC);
        assert_int_equal(pod_sysctl_namespace("kernel.sem"), POD_SYSCTL_NS_IPC);
        assert_int_equal(pod_sysctl_namespace("fs.mqueue.msg_max"), POD_SYSCTL_NS_IPC);
        assert_int_equal(pod_sysctl_namespace("kernel.hostname"), POD_SYSCTL_NS_UTS);
        assert_int_equal(pod_sysctl_namespace("kernel.shm*"), POD_SYSCTL_NS_IPC);
        assert_int_equal(pod_sysctl_namespace("net.*"), POD_SYSCTL_NS_NET);
        /* node-level */
        assert_int_equal(pod_sysctl_namespace("vm.swappiness"), POD_SYSCTL_NS_UNKNOWN);
        assert_int_equal(pod_sysctl_namespace("kernel.pid_max"), POD_SYSCTL_NS_UNKNOWN);
        assert_int_equal(pod_sysctl_namespace("kernel.*"), POD_SYSCTL_NS_UNKNOWN);
        assert_true(pod_sysctl_is_safe("kernel.shm_rmid_forced"));
        assert_true(pod_sysctl_is_safe("net.ipv4.ip_unprivileged_port_start"));
        assert_true(pod_sysctl_is_safe("net/ipv4/tcp_keepalive_probes"));
        assert_false(pod_sysctl_is_safe("net.core.somaxconn"));
        assert_false(pod_sysctl_is_safe("net.ipv4.tcp_rmem"));
}

static void test_sysctl_patterns(void **state) {
        CubError err = {};

        (void) state;
        assert_int_equal(pod_sysctl_pattern_check("net.core.somaxconn", &err), 0);
        assert_int_equal(pod_sysctl_pattern_check("net.*", &err), 0);
        assert_int_equal(pod_sysctl_pattern_check("kernel.msg*", &err), 0);
        assert_int_equal(pod_sysctl_pattern_check("kernel.sem", &err), 0);
        assert_int_equal(pod_sysctl_pattern_check("vm.swappiness", &err), -EINVAL);
        assert_string_equal(err.msg, "the sysctl \"vm.swappiness\" are not known to be namespaced");
        assert_int_equal(pod_sysctl_pattern_check("kernel.*", &err), -EINVAL);
        assert_string_equal(err.msg, "the sysctl \"kernel.\" are not known to be namespaced");
        assert_int_equal(pod_sysctl_pattern_check("Net.Core", &err), -EINVAL);
        assert_string_equal(err.msg, "sysctl \"Net.Core\" must have at most 253 characters and match regex "
                                     "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\\*)?$");
        assert_int_equal(pod_sysctl_pattern_check("net.**", &err), -EINVAL);
}

static int admit(const char *spec_extra, const char *sysctls, const char *const *unsafe, char *msg, size_t size) {
        char text[1024];
        PodStrv allowed = { .items = (char **) unsafe, .n = 0 };
        Pod *pod;
        int r;

        while (unsafe && unsafe[allowed.n])
                allowed.n++;
        (void) snprintf(text, sizeof(text), HDR "%s  securityContext:\n    sysctls: %s\n" CTR, spec_extra, sysctls);
        pod = decode(text);
        msg[0] = 0;
        r = pod_sysctl_admit(pod, &allowed, msg, size);
        pod_free(pod);
        return r;
}

static void test_sysctl_admit(void **state) {
        static const char *const unsafe[] = { "net.core.somaxconn", "kernel.msg*", "vm.swappiness", NULL };
        static const char *const net_all[] = { "net.*", NULL };
        char msg[256];

        (void) state;
        assert_int_equal(admit("", "[{name: kernel.shm_rmid_forced, value: '1'}]", NULL, msg, sizeof(msg)), 0);
        assert_int_equal(
                admit("", "[{name: net.ipv4.ip_local_port_range, value: '1024 65535'}]", NULL, msg, sizeof(msg)), 0);
        assert_int_equal(admit("", "[{name: net.core.somaxconn, value: '1024'}]", NULL, msg, sizeof(msg)), -EPERM);
        assert_string_equal(msg, "forbidden sysctl: \"net.core.somaxconn\" not allowlisted");
        /* allowedUnsafeSysctls: names and prefix* wildcards */
        assert_int_equal(admit("", "[{name: net.core.somaxconn, value: '1024'}]", unsafe, msg, sizeof(msg)), 0);
        assert_int_equal(admit("", "[{name: kernel.msgmax, value: '1'}]", unsafe, msg, sizeof(msg)), 0);
        assert_int_equal(admit("", "[{name: net/core/rmem_max, value: '1'}]", net_all, msg, sizeof(msg)), 0);
        assert_int_equal(admit("", "[{name: net.core.rmem_max, value: '1'}]", unsafe, msg, sizeof(msg)), -EPERM);
        assert_string_equal(msg, "forbidden sysctl: \"net.core.rmem_max\" not allowlisted");
        /* node-level: never, even when listed */
        assert_int_equal(admit("", "[{name: vm.swappiness, value: '1'}]", unsafe, msg, sizeof(msg)), -EPERM);
        assert_string_equal(msg, "forbidden sysctl: \"vm.swappiness\" not allowlisted");
        /* the host's namespaces */
        assert_int_equal(
                admit("  hostNetwork: true\n", "[{name: net.ipv4.tcp_syncookies, value: '1'}]", NULL, msg, sizeof(msg)),
                -EPERM);
        assert_string_equal(msg, "forbidden sysctl: \"net.ipv4.tcp_syncookies\" not allowed with host net enabled");
        assert_int_equal(
                admit("  hostIPC: true\n", "[{name: kernel.shm_rmid_forced, value: '1'}]", NULL, msg, sizeof(msg)),
                -EPERM);
        assert_string_equal(msg, "forbidden sysctl: \"kernel.shm_rmid_forced\" not allowed with host ipc enabled");
        assert_int_equal(
                admit("  hostIPC: true\n", "[{name: net.ipv4.tcp_syncookies, value: '1'}]", NULL, msg, sizeof(msg)), 0);
}

static void test_config_key(void **state) {
        static const char ok[] = "allowedUnsafeSysctls: [net.core.somaxconn, 'kernel.msg*', 'net.*']\n";
        static const char bad[] = "allowedUnsafeSysctls: [net.core.somaxconn, vm.swappiness]\n";
        PodKubeletConfig c;
        CubError err = {};

        (void) state;
        assert_int_equal(pod_kubelet_config_decode(ok, strlen(ok), "k.yaml", &c, &err), 0);
        assert_int_equal(c.allowed_unsafe_sysctls.n, 3);
        assert_string_equal(c.allowed_unsafe_sysctls.items[1], "kernel.msg*");
        assert_int_equal(c.ignored.n, 0);
        pod_kubelet_config_done(&c);
        assert_int_equal(pod_kubelet_config_decode(bad, strlen(bad), "k.yaml", &c, &err), -EINVAL);
        assert_string_equal(
                err.msg,
                "k.yaml: allowedUnsafeSysctls[1]: the sysctl \"vm.swappiness\" are not known to be namespaced");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decode),          cmocka_unit_test(test_validation),
                cmocka_unit_test(test_effective),
                cmocka_unit_test(test_selinux),       cmocka_unit_test(test_no_new_privs),
                cmocka_unit_test(test_run_as_non_root), cmocka_unit_test(test_sysctl_classes),
                cmocka_unit_test(test_sysctl_patterns), cmocka_unit_test(test_sysctl_admit),
                cmocka_unit_test(test_config_key),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
