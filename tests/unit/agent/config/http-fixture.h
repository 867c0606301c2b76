/* SPDX-License-Identifier: Apache-2.0 */
/* The nginx of agent/config's manifest URL tests (test-http.c,
 * test-http-cache.c): a server on 127.0.0.1 with the config http-nginx.sh
 * writes, its document root DIR/root (put()), a source for a path on it
 * (make()) and one GET through curl_easy_perform (fetch()). Include after
 * cmocka.h and podsrc.h; the group's setup and teardown are these. */
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NODE "node1"

static char dir[256];
static int port, tls_port;
static pid_t nginx_pid = -1;

static inline void put(const char *name, const char *text, size_t len) {
        char path[512];
        struct timespec ts[2];
        static time_t t = 1700000000;
        FILE *f;

        snprintf(path, sizeof(path), "%s/root/%s", dir, name);
        f = fopen(path, "we");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, len, f), len);
        fclose(f);
        /* a new Last-Modified and ETag each time, even within one second */
        ts[0].tv_sec = ts[1].tv_sec = t++;
        ts[0].tv_nsec = ts[1].tv_nsec = 0;
        assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static inline void puts_(const char *name, const char *text) {
        put(name, text, strlen(text));
}

static inline int free_port(void) {
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t l = sizeof(a);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), p;

        if (fd < 0 || bind(fd, (struct sockaddr *) &a, sizeof(a)) < 0 ||
            getsockname(fd, (struct sockaddr *) &a, &l) < 0)
                return -1;
        p = ntohs(a.sin_port);
        close(fd);
        return p;
}

static inline bool connects(int p) {
        struct sockaddr_in a = { .sin_family = AF_INET,
                                 .sin_port = htons((uint16_t) p),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        bool ok = fd >= 0 && connect(fd, (struct sockaddr *) &a, sizeof(a)) == 0;

        if (fd >= 0)
                close(fd);
        return ok;
}

static inline int run_wait(char *const argv[]) {
        int st;
        pid_t pid = fork();

        if (pid == 0) {
                execvp(argv[0], argv);
                _exit(127);
        }
        if (pid < 0 || waitpid(pid, &st, 0) < 0)
                return -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static inline void nginx_start(void) {
        char conf[300];

        snprintf(conf, sizeof(conf), "%s/nginx.conf", dir);
        nginx_pid = fork();
        if (nginx_pid == 0) {
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

                if (null >= 0) {
                        dup2(null, 1);
                        dup2(null, 2);
                }
                execlp("nginx", "nginx", "-p", dir, "-c", conf, (char *) NULL);
                _exit(127);
        }
        for (int i = 0; i < 500 && !(connects(port) && connects(tls_port)); i++)
                usleep(10000);
}

static inline void nginx_stop(void) {
        if (nginx_pid > 0) {
                kill(nginx_pid, SIGTERM);
                waitpid(nginx_pid, NULL, 0);
        }
        nginx_pid = -1;
}

static inline int setup(void **state) {
        char p1[16], p2[16];
        const char *script = getenv("HTTP_NGINX_SCRIPT");

        (void) state;
        if (!script)
                script = "tests/unit/agent/config/http-nginx.sh";
        if (access(script, R_OK) < 0 || access("/usr/sbin/nginx", X_OK) < 0) {
                printf("# skipped: nginx (/usr/sbin/nginx) or %s missing\n", script);
                exit(77);
        }
        snprintf(dir, sizeof(dir), "/tmp/cubelet-test-http-XXXXXX");
        assert_non_null(mkdtemp(dir));
        port = free_port();
        tls_port = free_port();
        snprintf(p1, sizeof(p1), "%d", port);
        snprintf(p2, sizeof(p2), "%d", tls_port);
        {
                char *argv[] = { (char *) "sh", (char *) script, dir, p1, p2, NULL };

                assert_int_equal(run_wait(argv), 0);
        }
        nginx_start();
        if (!connects(port)) {
                printf("# nginx did not start, see %s/error.log\n", dir);
                return -1;
        }
        return 0;
}

static inline int teardown(void **state) {
        char *argv[] = { (char *) "rm", (char *) "-rf", dir, NULL };

        (void) state;
        nginx_stop();
        (void) run_wait(argv);
        return 0;
}

static inline PodsrcHttp *make(const char *path, const PodsrcHttpOptions *extra) {
        PodsrcHttpOptions o = extra ? *extra : (PodsrcHttpOptions){};
        char url[300];
        PodsrcHttp *h = NULL;
        CubError err = {};

        snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path ? path : "");
        if (!o.url)
                o.url = url;
        o.node_name = NODE;
        assert_int_equal(podsrc_http_new(&o, &h, &err), 0);
        return h;
}

static inline int fetch(PodsrcHttp *h, PodsrcSet *set, CubError *err) {
        CURL *c = NULL;

        int r;

        assert_int_equal(podsrc_http_begin(h, &c, err), 0);
        r = podsrc_http_finish(h, c, curl_easy_perform(c), set, err);
        (void) podsrc_http_save_cache(h); /* as the poller does: after the set */
        return r;
}
