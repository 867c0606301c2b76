/* SPDX-License-Identifier: Apache-2.0 */
/* cri/events.c: which of containerd's events ask for a relist, from
 * Envelopes packed with the real field numbers (Envelope namespace 2, topic
 * 3, event 4 as google.protobuf.Any; TaskExit container_id 1, id 2). */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cri/cri-internal.h"
#include "proto/containerd/events.pb-c.h"

/* ns, topic; exit: a TaskExit payload (container_id, id) unless NULL */
static bool wanted(const char *ns, const char *topic, const char *container_id, const char *id) {
        Containerd__Services__Events__V1__Envelope e = CONTAINERD__SERVICES__EVENTS__V1__ENVELOPE__INIT;
        Containerd__Services__Events__V1__EventAny any = CONTAINERD__SERVICES__EVENTS__V1__EVENT_ANY__INIT;
        Containerd__Services__Events__V1__TaskExit te = CONTAINERD__SERVICES__EVENTS__V1__TASK_EXIT__INIT;
        uint8_t inner[256], buf[512];
        size_t len;

        e.namespace_ = (char *) ns;
        e.topic = (char *) topic;
        if (container_id) {
                te.container_id = (char *) container_id;
                te.id = (char *) id;
                te.exit_status = 137;
                any.type_url = (char *) "containerd.events.TaskExit";
                any.value.len = protobuf_c_message_pack(&te.base, inner);
                any.value.data = inner;
                e.event = &any;
        }
        len = protobuf_c_message_pack(&e.base, buf);
        return cri_event_wanted("k8s.io", buf, len);
}

static void test_wanted(void **state) {
        (void) state;
        /* a container's init process ended */
        assert_true(wanted("k8s.io", "/tasks/exit", "c1", "c1"));
        /* an exec (ExecSync, an exec probe) ended in it: no relist */
        assert_false(wanted("k8s.io", "/tasks/exit", "c1", "e-42"));
        /* no payload: relist to be safe */
        assert_true(wanted("k8s.io", "/tasks/exit", NULL, NULL));
        assert_true(wanted("k8s.io", "/tasks/oom", NULL, NULL));
        assert_true(wanted("k8s.io", "/tasks/start", NULL, NULL));
        assert_true(wanted("k8s.io", "/containers/delete", NULL, NULL));
        /* other topics and namespaces */
        assert_false(wanted("k8s.io", "/images/create", NULL, NULL));
        assert_false(wanted("k8s.io", "/tasks/exec-started", NULL, NULL));
        assert_false(wanted("moby", "/tasks/exit", "c1", "c1"));
        assert_false(wanted("", "/tasks/oom", NULL, NULL));
}

static void test_malformed(void **state) {
        static const uint8_t junk[] = { 0x1a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01 };

        (void) state;
        assert_false(cri_event_wanted("k8s.io", junk, sizeof(junk)));
        assert_false(cri_event_wanted("k8s.io", NULL, 0));
}

static void test_state_names(void **state) {
        (void) state;
        assert_string_equal(cri_events_state_to_string(CRI_EVENTS_SUBSCRIBED), "subscribed");
        assert_string_equal(cri_events_state_to_string(CRI_EVENTS_UNSUPPORTED), "unsupported");
        assert_null(cri_events_state_to_string(_CRI_EVENTS_STATE_MAX));
}

static size_t count_lines(const char *text, const char *needle) {
        size_t n = 0;

        for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

/* A runtime socket that is not there: the stream is tried three times in
 * 3.5 s (back-off 1 s, 2 s); the journal hears of it once, not three times,
 * and the state says what failed. */
static void test_dead_socket_logged_once(void **state) {
        char path[] = "/tmp/cubelet-test-events-XXXXXX", endpoint[128], log[8192] = "", msg[CUB_ERR_MSG_MAX];
        CriClient *c = NULL;
        CriEvents *ev = NULL;
        CubError err = {};
        int fd, saved;
        ssize_t n;

        (void) state;
        assert_non_null(mkdtemp(path));
        (void) snprintf(endpoint, sizeof(endpoint), "unix://%s/none.sock", path);
        assert_int_equal(cri_client_new(endpoint, 2 * 1000000ULL, &c, &err), 0);
        fd = open(path, O_RDWR | O_TMPFILE, 0600);
        assert_true(fd >= 0);
        fflush(stderr);
        saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
        assert_true(saved >= 0);
        assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
        assert_int_equal(cri_events_start(c, "k8s.io", &ev, &err), 0);
        (void) usleep(3500 * 1000);
        assert_int_equal(cri_events_state(ev, NULL, msg, sizeof(msg)), CRI_EVENTS_CONNECTING);
        assert_non_null(strstr(msg, "UNAVAILABLE"));
        ev = cri_events_free(ev);
        fflush(stderr);
        assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
        close(saved);
        n = pread(fd, log, sizeof(log) - 1, 0);
        close(fd);
        assert_true(n > 0);
        log[n] = '\0';
        assert_int_equal(count_lines(log, "runtime events: subscribing to "), 1);
        assert_int_equal(count_lines(log, "relisting on the timer until the stream is back"), 1);
        assert_int_equal(count_lines(log, "\n"), 2); /* nothing else */
        c = cri_client_free(c);
        assert_int_equal(rmdir(path), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_wanted),
                cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_state_names),
                cmocka_unit_test(test_dead_socket_logged_once),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
