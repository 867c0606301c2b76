/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cubelet-gpu-plugin: a Kubernetes device plugin (v1beta1) for NVIDIA GPUs.
 *
 * It serves v1beta1.DevicePlugin on <dir>/cubelet-gpu.sock, then registers
 * "nvidia.com/gpu" with the kubelet on <dir>/kubelet.sock. NVML comes
 * through dlopen (nvml.c); a health thread turns critical XIDs into
 * Unhealthy devices (nvml.c → GpuState → the ListAndWatch streams of
 * server.c). This file owns the sd-event loop: signals, the inotify watch
 * on <dir> (kubelet restarts, its own socket removed), the registration and
 * NVML-init retry timers, sd_notify. It is the only part that exits.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "agent/util/cleanup.h"
#include "agent/util/fileio.h"
#include "agent/util/log.h"
#include "agent/util/parse.h"
#include "agent/util/time.h"
#include "deviceplugin/deviceplugin.h"
#include "deviceplugin/gpu/gpu-internal.h"
#include "proto/deviceplugin/api.pb-c.h"

#define REGISTER_TIMEOUT_USEC (5 * CUB_USEC_PER_SEC)
#define REGISTER_RETRY_USEC (3 * CUB_USEC_PER_SEC)
#define REGISTER_SOON_USEC (100 * CUB_USEC_PER_MSEC)
#define INIT_RETRY_SEC_DEFAULT 30
#define RECHECK_SEC_DEFAULT 30

typedef struct Plugin {
        /* options */
        const char *dir;
        const char *nvml_library;
        const char *dev_root;
        const char *sys_root;
        unsigned replicas;
        bool fail_on_init_error;
        uint64_t init_retry_usec;
        GpuXidPolicy xids;
        uint64_t recheck_usec;
        /* derived */
        char *sock_path;
        char *kubelet_path;
        /* state */
        GpuState st;
        bool st_ready;
        GpuNvml *nv;
        GpuHealth *health;
        GrpcxServer *server;
        sd_event *event;
        sd_event_source *register_timer;
        sd_event_source *init_timer;
        sd_event_source *inotify_src;
        char last_register_error[CUB_ERR_MSG_MAX];
        char last_init_error[CUB_ERR_MSG_MAX];
        bool waiting_logged;
} Plugin;

static void help(void) {
        printf("Usage: cubelet-gpu-plugin [OPTIONS]\n"
               "\n"
               "A Kubernetes device plugin (v1beta1) advertising NVIDIA GPUs as '" GPU_RESOURCE_NAME "'.\n"
               "\n"
               "  --device-plugin-dir DIR         kubelet's device-plugin directory (default " DP_DEFAULT_DIR ");\n"
               "                                  serves DIR/" GPU_SOCKET_NAME ", registers with DIR/" DP_KUBELET_SOCKET
               "\n"
               "  --nvml-library PATH             NVML to dlopen (default " GPU_NVML_DEFAULT ")\n"
               "  --dev-root DIR                  where the /dev nodes are checked (default /)\n"
               "  --replicas N                    advertise each GPU N times as <uuid>::<k> (default 1)\n"
               "  --fail-on-init-error=true|false exit 1 without NVML or GPUs (default true); false\n"
               "                                  advertises nothing and retries every 30 s\n"
               "  --health-ignore-xids LIST       XIDs that leave a GPU healthy (default 13,31,43,45,68,94,109;\n"
               "                                  'none': every critical XID counts)\n"
               "  --health-recheck-sec N          an unhealthy GPU is checked again after N s and is healthy\n"
               "                                  again once NVML says it works (default 30; 0: never)\n"
               "  --help                          this text\n"
               "  --version                       the version\n");
}

static int parse_bool(const char *s, bool *ret) {
        if (!s || strcmp(s, "true") == 0 || strcmp(s, "1") == 0 || strcmp(s, "yes") == 0)
                *ret = true;
        else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0 || strcmp(s, "no") == 0)
                *ret = false;
        else
                return -EINVAL;
        return 0;
}

/* 0: run, 1: done (help/version), -EINVAL: usage error (logged) */
static int parse_args(Plugin *p, int argc, char **argv) {
        enum {
                ARG_DIR = 0x100,
                ARG_NVML,
                ARG_DEV_ROOT,
                ARG_REPLICAS,
                ARG_FAIL,
                ARG_SYS_ROOT,
                ARG_VERSION,
                ARG_IGNORE_XIDS,
                ARG_RECHECK,
        };
        static const struct option opts[] = {
                { "device-plugin-dir", required_argument, NULL, ARG_DIR },
                { "nvml-library", required_argument, NULL, ARG_NVML },
                { "dev-root", required_argument, NULL, ARG_DEV_ROOT },
                { "replicas", required_argument, NULL, ARG_REPLICAS },
                { "fail-on-init-error", optional_argument, NULL, ARG_FAIL },
                { "health-ignore-xids", required_argument, NULL, ARG_IGNORE_XIDS },
                { "health-recheck-sec", required_argument, NULL, ARG_RECHECK },
                { "sys-root", required_argument, NULL, ARG_SYS_ROOT }, /* hidden: tests */
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {},
        };
        CubError err = { 0 };
        const char *e;
        int c;

        p->dir = DP_DEFAULT_DIR;
        p->nvml_library = GPU_NVML_DEFAULT;
        p->dev_root = "/";
        p->sys_root = "/sys";
        p->replicas = 1;
        p->fail_on_init_error = true;
        p->init_retry_usec = INIT_RETRY_SEC_DEFAULT * CUB_USEC_PER_SEC;
        p->recheck_usec = RECHECK_SEC_DEFAULT * CUB_USEC_PER_SEC;
        gpu_xid_policy_default(&p->xids);

        e = getenv("CUBELET_GPU_SYS_ROOT");
        if (e && e[0])
                p->sys_root = e;
        e = getenv("CUBELET_GPU_RETRY_SEC");
        if (e && e[0]) {
                uint64_t v;

                if (cub_safe_atou64(e, &v) < 0 || v == 0 || v > 3600) {
                        cub_log(LOG_ERR, "CUBELET_GPU_RETRY_SEC='%s': not a number of seconds in 1..3600", e);
                        return -EINVAL;
                }
                p->init_retry_usec = v * CUB_USEC_PER_SEC;
        }

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (c) {
                case ARG_DIR:
                        p->dir = optarg;
                        break;
                case ARG_NVML:
                        p->nvml_library = optarg;
                        break;
                case ARG_DEV_ROOT:
                        p->dev_root = optarg;
                        break;
                case ARG_SYS_ROOT:
                        p->sys_root = optarg;
                        break;
                case ARG_REPLICAS: {
                        uint64_t v;

                        if (cub_safe_atou64(optarg, &v) < 0 || v < 1 || v > GPU_REPLICAS_MAX) {
                                cub_log(LOG_ERR, "--replicas '%s': not a number in 1..%d", optarg, GPU_REPLICAS_MAX);
                                return -EINVAL;
                        }
                        p->replicas = (unsigned) v;
                        break;
                }
                case ARG_IGNORE_XIDS:
                        if (gpu_xid_policy_parse(&p->xids, optarg, &err) < 0) {
                                cub_log(LOG_ERR, "%s", err.msg);
                                return -EINVAL;
                        }
                        break;
                case ARG_RECHECK: {
                        uint64_t v;

                        if (cub_safe_atou64(optarg, &v) < 0 || v > 86400) {
                                cub_log(LOG_ERR, "--health-recheck-sec '%s': not a number of seconds in 0..86400",
                                        optarg);
                                return -EINVAL;
                        }
                        p->recheck_usec = v * CUB_USEC_PER_SEC;
                        break;
                }
                case ARG_FAIL:
                        if (parse_bool(optarg, &p->fail_on_init_error) < 0) {
                                cub_log(LOG_ERR, "--fail-on-init-error='%s': not true or false", optarg);
                                return -EINVAL;
                        }
                        break;
                case 'h':
                        help();
                        return 1;
                case ARG_VERSION:
                        printf("cubelet-gpu-plugin %s\n", CUBELET_VERSION);
                        return 1;
                default:
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                cub_log(LOG_ERR, "unexpected argument '%s' (see --help)", argv[optind]);
                return -EINVAL;
        }
        /* NVIDIA's plugin's variables, over the flags */
        if (gpu_xid_policy_env(&p->xids, getenv("DP_DISABLE_HEALTHCHECKS"), getenv("DP_ENABLE_HEALTHCHECKS"), &err) <
            0) {
                cub_log(LOG_ERR, "%s", err.msg);
                return -EINVAL;
        }
        if (p->dir[0] != '/' || p->dev_root[0] != '/') {
                cub_log(LOG_ERR, "--device-plugin-dir and --dev-root take absolute paths");
                return -EINVAL;
        }
        return 0;
}

/* ---- NVML ----------------------------------------------------------------------- */

/* dlopen + init + discovery + the health thread; the devices go to the state */
static int nvml_start(Plugin *p, CubError *err) {
        const GpuDevice *devs;
        CubError eerr = { 0 };
        unsigned made = 0;
        bool events;
        size_t n;
        int r;

        r = gpu_nvml_open(p->nvml_library, p->sys_root, &p->nv, err);
        if (r < 0)
                return r;
        devs = gpu_nvml_devices(p->nv, &n);
        if (n == 0) {
                p->nv = gpu_nvml_close(p->nv);
                return cub_err_set(err, ENODEV, "NVML '%s' found no GPUs", p->nvml_library);
        }
        r = gpu_devchar_links(p->dev_root, &made, &eerr);
        if (r < 0)
                cub_log(LOG_WARNING,
                        "%s: under the systemd cgroup driver a daemon-reload takes such a device from its containers",
                        eerr.msg);
        else if (made > 0)
                cub_log(LOG_INFO, "made %u /dev/char link(s) for the NVIDIA device nodes", made);
        eerr = (CubError){ 0 };
        events = !p->xids.off && gpu_nvml_events_open(p->nv, &eerr) >= 0;
        if (p->xids.off)
                cub_log(LOG_INFO, "health checks are off (DP_DISABLE_HEALTHCHECKS)");
        else if (!events)
                cub_log(LOG_WARNING, "health checks are off: %s", eerr.msg);
        r = gpu_state_set_devices(&p->st, devs, n);
        if (r < 0) {
                p->nv = gpu_nvml_close(p->nv);
                return cub_err_set(err, -r, "out of memory");
        }
        if (events) {
                r = gpu_health_start(p->nv, &p->st, &p->xids, p->recheck_usec, &p->health, &eerr);
                if (r < 0)
                        cub_log(LOG_WARNING, "health checks are off: %s", eerr.msg);
        }
        cub_log(LOG_INFO, "NVML '%s' (driver %s): advertising %zu GPU(s)%s", p->nvml_library,
                gpu_nvml_driver_version(p->nv)[0] ? gpu_nvml_driver_version(p->nv) : "unknown", n,
                p->replicas >= 2 ? " with replicas" : "");
        (void) sd_notifyf(false, "STATUS=%zu GPU(s)", n);
        return 0;
}

static int on_init_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Plugin *p = userdata;
        CubError err = { 0 };

        (void) usec;
        if (nvml_start(p, &err) >= 0) {
                p->last_init_error[0] = '\0';
                return sd_event_source_set_enabled(s, SD_EVENT_OFF);
        }
        if (strcmp(err.msg, p->last_init_error) != 0) {
                cub_log(LOG_ERR, "%s: advertising no GPUs, retrying every %llu s", err.msg,
                        (unsigned long long) (p->init_retry_usec / CUB_USEC_PER_SEC));
                (void) snprintf(p->last_init_error, sizeof(p->last_init_error), "%s", err.msg);
        }
        (void) sd_event_source_set_time_relative(s, p->init_retry_usec);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

/* ---- registration ----------------------------------------------------------- */

static void schedule_register(Plugin *p, uint64_t delay_usec) {
        (void) sd_event_source_set_time_relative(p->register_timer, delay_usec);
        (void) sd_event_source_set_enabled(p->register_timer, SD_EVENT_ONESHOT);
}

static int do_register(Plugin *p, CubError *err) {
        _cleanup_(grpcx_channel_freep) GrpcxChannel *ch = NULL;
        _cleanup_free_ char *target = NULL;
        V1beta1__DevicePluginOptions opts = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
        V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
        ProtobufCMessage *resp = NULL;
        int r;

        if (asprintf(&target, "unix:%s", p->kubelet_path) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        r = grpcx_channel_new(target, &ch, err);
        if (r < 0)
                return r;
        opts.get_preferred_allocation_available = true;
        req.version = (char *) DP_API_VERSION;
        req.endpoint = (char *) GPU_SOCKET_NAME;
        req.resource_name = (char *) GPU_RESOURCE_NAME;
        req.options = &opts;
        r = grpcx_unary(ch, "/v1beta1.Registration/Register", &req.base, &v1beta1__empty__descriptor,
                        REGISTER_TIMEOUT_USEC, /* wait_for_ready= */ true, &resp, NULL, err);
        if (r < 0)
                return r;
        protobuf_c_message_free_unpacked(resp, NULL);
        return 0;
}

static int on_register_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Plugin *p = userdata;
        CubError err = { 0 };
        struct stat sb;
        int r;

        (void) s;
        (void) usec;
        if (stat(p->kubelet_path, &sb) < 0) {
                if (!p->waiting_logged)
                        cub_log(LOG_INFO, "waiting for the kubelet's '%s'", p->kubelet_path);
                p->waiting_logged = true;
                schedule_register(p, REGISTER_RETRY_USEC);
                return 0;
        }
        r = do_register(p, &err);
        if (r < 0) {
                if (strcmp(err.msg, p->last_register_error) != 0) {
                        cub_log(LOG_WARNING, "registering with '%s': %s: retrying every %llu s", p->kubelet_path,
                                err.msg, (unsigned long long) (REGISTER_RETRY_USEC / CUB_USEC_PER_SEC));
                        (void) snprintf(p->last_register_error, sizeof(p->last_register_error), "%s", err.msg);
                }
                schedule_register(p, REGISTER_RETRY_USEC);
                return 0;
        }
        p->last_register_error[0] = '\0';
        p->waiting_logged = false;
        cub_log(LOG_INFO, "registered '%s' with '%s' (endpoint '%s')", GPU_RESOURCE_NAME, p->kubelet_path,
                GPU_SOCKET_NAME);
        (void) sd_notify(false, "STATUS=registered with the kubelet");
        return 0;
}

/* ---- the plugin's own server ------------------------------------------------ */

static void server_stop(Plugin *p) {
        if (!p->server)
                return;
        gpu_state_stop(&p->st, /* stopping= */ true);
        p->server = grpcx_server_stop(p->server);
        gpu_state_stop(&p->st, /* stopping= */ false);
}

static int server_start(Plugin *p, CubError *err) {
        _cleanup_free_ char *addr = NULL;
        const GrpcxMethod *m;
        size_t n;

        if (asprintf(&addr, "unix:%s", p->sock_path) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (unlink(p->sock_path) < 0 && errno != ENOENT)
                return cub_err_set(err, errno, "cannot remove the stale '%s': %m", p->sock_path);
        m = gpu_server_methods(&n);
        return grpcx_server_start(addr, m, n, &p->st, &p->server, err);
}

static int on_dir_event(sd_event_source *s, const struct inotify_event *ev, void *userdata) {
        Plugin *p = userdata;
        struct stat sb;

        (void) s;
        if (ev->mask & IN_Q_OVERFLOW) {
                schedule_register(p, REGISTER_SOON_USEC);
                return 0;
        }
        if (ev->len == 0)
                return 0;
        if (strcmp(ev->name, DP_KUBELET_SOCKET) == 0 && (ev->mask & (IN_CREATE | IN_MOVED_TO))) {
                cub_log(LOG_INFO, "'%s' was created (kubelet restart): registering again", p->kubelet_path);
                schedule_register(p, REGISTER_SOON_USEC);
        } else if (strcmp(ev->name, GPU_SOCKET_NAME) == 0 && (ev->mask & (IN_DELETE | IN_MOVED_FROM)) &&
                   stat(p->sock_path, &sb) < 0 && errno == ENOENT) {
                CubError err = { 0 };
                int r;

                cub_log(LOG_INFO, "'%s' was removed: serving it again and registering again", p->sock_path);
                server_stop(p);
                r = server_start(p, &err);
                if (r < 0) {
                        cub_log_errno(LOG_ERR, r, &err, "serving '%s'", p->sock_path);
                        return sd_event_exit(sd_event_source_get_event(s), 1);
                }
                schedule_register(p, REGISTER_SOON_USEC);
        }
        return 0;
}

/* ---- main -------------------------------------------------------------------- */

static void plugin_done(Plugin *p) {
        p->register_timer = sd_event_source_disable_unref(p->register_timer);
        p->init_timer = sd_event_source_disable_unref(p->init_timer);
        p->inotify_src = sd_event_source_disable_unref(p->inotify_src);
        if (p->st_ready)
                server_stop(p);
        if (p->sock_path && unlink(p->sock_path) < 0 && errno != ENOENT)
                cub_log(LOG_WARNING, "cannot remove '%s': %m, ignoring", p->sock_path);
        p->health = gpu_health_stop(p->health);
        p->nv = gpu_nvml_close(p->nv);
        if (p->st_ready)
                gpu_state_done(&p->st);
        p->event = sd_event_unref(p->event);
        free(p->sock_path);
        free(p->kubelet_path);
}

static int run(Plugin *p) {
        CubError err = { 0 };
        sigset_t mask;
        int r;

        if (asprintf(&p->sock_path, "%s/%s", p->dir, GPU_SOCKET_NAME) < 0 ||
            asprintf(&p->kubelet_path, "%s/%s", p->dir, DP_KUBELET_SOCKET) < 0)
                return cub_log_errno(LOG_ERR, -ENOMEM, NULL, "out of memory");
        /* before any thread exists: the loop takes the signals */
        (void) sigemptyset(&mask);
        (void) sigaddset(&mask, SIGTERM);
        (void) sigaddset(&mask, SIGINT);
        (void) sigaddset(&mask, SIGPIPE);
        (void) sigprocmask(SIG_BLOCK, &mask, NULL);

        r = gpu_state_init(&p->st, p->replicas, p->dev_root);
        if (r < 0)
                return cub_log_errno(LOG_ERR, r, NULL, "cannot set up the device state");
        p->st_ready = true;

        r = sd_event_default(&p->event);
        if (r < 0)
                return cub_log_errno(LOG_ERR, r, NULL, "sd_event_default");
        r = nvml_start(p, &err);
        if (r < 0) {
                if (p->fail_on_init_error) {
                        cub_log(LOG_ERR, "%s", err.msg);
                        return r;
                }
                cub_log(LOG_ERR, "%s: advertising no GPUs, retrying every %llu s", err.msg,
                        (unsigned long long) (p->init_retry_usec / CUB_USEC_PER_SEC));
                (void) snprintf(p->last_init_error, sizeof(p->last_init_error), "%s", err.msg);
                r = sd_event_add_time_relative(p->event, &p->init_timer, CLOCK_MONOTONIC, p->init_retry_usec, 0,
                                               on_init_timer, p);
                if (r < 0)
                        return cub_log_errno(LOG_ERR, r, NULL, "sd_event_add_time_relative");
                (void) sd_event_source_set_description(p->init_timer, "nvml-init-retry");
        }

        r = sd_event_add_signal(p->event, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(p->event, NULL, SIGINT, NULL, NULL);
        if (r < 0)
                return cub_log_errno(LOG_ERR, r, NULL, "sd_event_add_signal");
        r = cub_mkdir_p(p->dir, 0755);
        if (r < 0)
                return cub_log_errno(LOG_ERR, r, NULL, "cannot create '%s'", p->dir);
        r = sd_event_add_inotify(p->event, &p->inotify_src, p->dir,
                                 IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR, on_dir_event, p);
        if (r < 0)
                return cub_log_errno(LOG_ERR, r, NULL, "cannot watch '%s'", p->dir);
        (void) sd_event_source_set_description(p->inotify_src, "device-plugin-dir");
        r = sd_event_add_time_relative(p->event, &p->register_timer, CLOCK_MONOTONIC, 0, 0, on_register_timer, p);
        if (r < 0)
                return cub_log_errno(LOG_ERR, r, NULL, "sd_event_add_time_relative");
        (void) sd_event_source_set_description(p->register_timer, "register");

        /* serve before registering: the kubelet dials back during Register */
        r = server_start(p, &err);
        if (r < 0)
                return cub_log_errno(LOG_ERR, r, &err, "serving '%s'", p->sock_path);
        cub_log(LOG_INFO, "serving '%s'", p->sock_path);
        (void) sd_notify(false, "READY=1");

        r = sd_event_loop(p->event);
        (void) sd_notify(false, "STOPPING=1");
        if (r < 0)
                return cub_log_errno(LOG_ERR, r, NULL, "event loop");
        cub_log(LOG_INFO, "stopping");
        return r > 0 ? -EIO : 0;
}

int main(int argc, char **argv) {
        Plugin p = { 0 };
        int r;

        r = parse_args(&p, argc, argv);
        if (r != 0)
                return r > 0 ? EXIT_SUCCESS : 2;
        r = run(&p);
        plugin_done(&p);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
