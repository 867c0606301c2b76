/* SPDX-License-Identifier: Apache-2.0 */
/* `cubelet run`: the agent. Flags win over the config file, which wins
 * over the defaults. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "../../cri/cri.h"
#include "../../eviction/eviction.h"
#include "../cgroup/cgroup.h"
#include "../cluster/node.h"
#include "../loop/agent.h"
#include "../node/machine.h"
#include "../util/duration.h"
#include "../util/log.h"
#include "cli.h"

static void run_usage(FILE *f) {
        fputs("Usage: cubelet run [OPTIONS]\n"
              "\n"
              "Runs the node agent: keeps the pods of the manifest directory running through the\n"
              "container runtime's CRI, with their cgroup v2 limits under <cgroup-root>/kubepods\n"
              "(cgroupfs driver) or in kubepods.slice (systemd driver).\n"
              "\n"
              "  --manifest-dir DIR       static pod manifests (default /etc/kubernetes/manifests)\n"
              "  --manifest-url URL       static pods from a URL (a v1 Pod or PodList), fetched every\n"
              "                           --http-check-frequency (a Go duration, default 20s)\n"
              "  --runtime-endpoint EP    CRI socket (default unix:///run/containerd/containerd.sock)\n"
              "  --cgroup-root DIR        the cgroup v2 mount (default /sys/fs/cgroup)\n"
              "  --cgroup-driver DRIVER   cgroupfs or systemd (default: the config's cgroupDriver, else\n"
              "                           systemd when PID 1 is systemd, cgroupfs otherwise); containerd's\n"
              "                           runc SystemdCgroup must agree\n"
              "  --state-dir DIR          state and pod logs (default /var/lib/cubelet)\n"
              "  --node-name NAME         node name for static pod names (default: the hostname)\n"
              "  --socket PATH            status API socket (default /run/cubelet/cubelet.sock)\n"
              "  --config FILE            KubeletConfiguration (staticPodPath, containerRuntimeEndpoint,\n"
              "                           cgroupDriver, cpuCFSQuota, podPidsLimit, kubeReserved,\n"
              "                           systemReserved; cubelet: {stateDir, socket, nodeName,\n"
              "                           cgroupMount})\n"
              "  --relist-period SECONDS  how often the runtime is relisted (default 1)\n"
              "  --evented-relist-period SECONDS\n"
              "                           with containerd's event stream, how often a node whose pods\n"
              "                           are all settled is relisted (default 10; 0 = no event stream)\n"
              "  --http-address IP        the HTTP API's address (config address; default 127.0.0.1)\n"
              "  --http-port PORT         the HTTP API's port (config readOnlyPort; default 10255, 0 = off;\n"
              "                           with --kubeconfig default 0)\n"
              "  --kubeconfig FILE        join a cluster: the API server and the node's credentials\n"
              "  --node-ip IP             the node's address (status.addresses, hostIP; default: the\n"
              "                           default route's interface)\n"
              "                           (registers the Node, keeps its status and its Lease)\n"
              "  --register-node BOOL     create the Node object (default true; false: it must exist)\n"
              "  --node-labels K=V,...    labels for the Node at registration\n"
              "  --register-with-taints K=V:EFFECT,...\n"
              "                           taints for the Node at registration\n",
              f);
}

/* Footprint (issue #9). glibc gives every thread that mallocs an arena of its
 * own, up to 8 per CPU: gRPC's threads and the workers each touch one, and
 * each keeps its freed chunks resident. Two arenas are enough for the loop,
 * the workers and gRPC, which never contend much. A fixed trim threshold stops
 * glibc from raising it (and the mmap threshold) after each freed large chunk,
 * so freed heap tops go back to the kernel. MALLOC_ARENA_MAX or GLIBC_TUNABLES
 * in the environment win (they are how the bench measures the defaults).
 * Transparent huge pages (Debian's kernel defaults to "always") made the
 * first touch of a thread's 8 MiB stack or of an arena fault in a whole
 * 2 MiB page: 2 MB of RSS for a few KiB used, measured in the bench. cubelet
 * has no working set a huge page would speed up, so they are off for it. */
static void run_malloc_settings(void) {
        if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0)
                cub_log(LOG_DEBUG, "transparent huge pages stay on: %m");
        if (getenv("MALLOC_ARENA_MAX") || getenv("GLIBC_TUNABLES"))
                return;
        (void) mallopt(M_ARENA_MAX, 2);
        (void) mallopt(M_TRIM_THRESHOLD, 256 * 1024);
}

static int set_str(char **dst, const char *flag, const char *cfg, const char *dflt) {
        const char *v = flag ? flag : cfg ? cfg : dflt;

        free(*dst);
        *dst = strdup(v);
        return *dst ? 0 : -ENOMEM;
}

/* The manifest URL: staticPodURL (or --manifest-url), httpCheckFrequency
 * (or --http-check-frequency), cubelet.staticPodURLTimeout: the
 * configuration's durations are parsed and bounded by its decoder, the
 * flag here with the same floor. */
static int run_url_options(AgentOptions *opt, const char *f_url, const char *f_freq) {
        const char *url = f_url ? f_url : opt->kc.static_pod_url;
        CubError err = {};

        if (!url || !*url)
                return 0;
        opt->http_check_usec = (uint64_t) opt->kc.http_check_frequency.usec;
        opt->http_timeout_usec = (uint64_t) opt->kc.static_pod_url_timeout.usec;
        if (f_freq && cub_duration_parse(f_freq, &opt->http_check_usec, &err) < 0) {
                cub_log(LOG_ERR, "run: --http-check-frequency: %s", err.msg);
                return -EINVAL;
        }
        if (opt->http_check_usec < CUB_USEC_PER_SEC / 10) {
                cub_log(LOG_ERR, "run: --http-check-frequency '%s': must be at least 100ms", f_freq);
                return -EINVAL;
        }
        if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
                cub_log(LOG_ERR, "run: staticPodURL '%s': expected an http:// or https:// URL", url);
                return -EINVAL;
        }
        opt->manifest_url = strdup(url);
        return opt->manifest_url ? 0 : -ENOMEM;
}

/* The API server: --kubeconfig and the registration flags, the config's
 * registerNode and the node status and lease periods. */
static int run_cluster_options(AgentOptions *opt, const char *f_kubeconfig, int register_node, const char *f_labels,
                               const char *f_taints) {
        CubError err = {};

        if (!f_kubeconfig)
                return 0;
        opt->node_status_update_usec = (uint64_t) opt->kc.node_status_update_frequency.usec;
        opt->node_status_report_usec = (uint64_t) opt->kc.node_status_report_frequency.usec;
        if (opt->kc.node_lease_duration_seconds < 1 || opt->kc.node_lease_duration_seconds > 3600) {
                cub_log(LOG_ERR, "run: nodeLeaseDurationSeconds %lld: expected 1 to 3600",
                        (long long) opt->kc.node_lease_duration_seconds);
                return -EINVAL;
        }
        if (kube_node_labels_check(f_labels, &err) < 0) {
                cub_log(LOG_ERR, "run: %s", err.msg);
                return -EINVAL;
        }
        opt->node_lease_seconds = opt->kc.node_lease_duration_seconds;
        opt->register_node = register_node >= 0 ? register_node : opt->kc.register_node;
        opt->kubeconfig = strdup(f_kubeconfig);
        opt->node_labels = f_labels ? strdup(f_labels) : NULL;
        opt->register_taints = f_taints ? strdup(f_taints) : NULL;
        if (!opt->kubeconfig || (f_labels && !opt->node_labels) || (f_taints && !opt->register_taints))
                return -ENOMEM;
        return 0;
}

int cli_run(int argc, char **argv) {
        static const struct option options[] = {
                { "manifest-dir", required_argument, NULL, 'm' },
                { "runtime-endpoint", required_argument, NULL, 'r' },
                { "cgroup-root", required_argument, NULL, 'g' },
                { "state-dir", required_argument, NULL, 's' },
                { "node-name", required_argument, NULL, 'n' },
                { "socket", required_argument, NULL, 'S' },
                { "config", required_argument, NULL, 'c' },
                { "relist-period", required_argument, NULL, 'p' },
                { "evented-relist-period", required_argument, NULL, 'E' },
                { "http-address", required_argument, NULL, 'A' },
                { "http-port", required_argument, NULL, 'P' },
                { "manifest-url", required_argument, NULL, 'u' },
                { "http-check-frequency", required_argument, NULL, 'f' },
                { "cgroup-driver", required_argument, NULL, 'd' },
                { "kubeconfig", required_argument, NULL, 'K' },
                { "register-node", required_argument, NULL, 'R' },
                { "node-labels", required_argument, NULL, 'L' },
                { "register-with-taints", required_argument, NULL, 'T' },
                { "node-ip", required_argument, NULL, 'I' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *f_manifest = NULL, *f_endpoint = NULL, *f_cgroup = NULL, *f_state = NULL, *f_node = NULL,
                   *f_socket = NULL, *f_config = NULL, *f_http_address = NULL, *f_url = NULL, *f_freq = NULL,
                   *f_driver = NULL, *f_kubeconfig = NULL, *f_labels = NULL, *f_taints = NULL, *f_node_ip = NULL;
        int register_node = -1;
        long http_port = -1;
        AgentOptions opt;
        AgentNode host = {};
        Agent *agent = NULL;
        CubError err = {};
        sigset_t mask;
        double period = 1.0, evented_period = (double) AGENT_EVENTS_RELIST_USEC / 1e6;
        const char *driver_from;
        int c, r;

        optind = 1;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (c) {
                case 'm':
                        f_manifest = optarg;
                        break;
                case 'r':
                        f_endpoint = optarg;
                        break;
                case 'g':
                        f_cgroup = optarg;
                        break;
                case 's':
                        f_state = optarg;
                        break;
                case 'n':
                        f_node = optarg;
                        break;
                case 'S':
                        f_socket = optarg;
                        break;
                case 'c':
                        f_config = optarg;
                        break;
                case 'u':
                        f_url = optarg;
                        break;
                case 'f':
                        f_freq = optarg;
                        break;
                case 'd':
                        if (cg_driver_from_string(optarg) == _CG_DRIVER_INVALID) {
                                cub_log(LOG_ERR, "run: --cgroup-driver '%s': expected cgroupfs or systemd", optarg);
                                return CLI_EXIT_BAD_INPUT;
                        }
                        f_driver = optarg;
                        break;
                case 'p': {
                        char *end;
                        period = strtod(optarg, &end);
                        if (*end || period < 0.05 || period > 3600) {
                                cub_log(LOG_ERR, "run: --relist-period '%s': expected seconds between 0.05 and 3600",
                                        optarg);
                                return CLI_EXIT_BAD_INPUT;
                        }
                        break;
                }
                case 'E': {
                        char *end;
                        evented_period = strtod(optarg, &end);
                        if (*end || evented_period < 0 || evented_period > 3600) {
                                cub_log(LOG_ERR,
                                        "run: --evented-relist-period '%s': expected seconds between 0 (no event "
                                        "stream) and 3600",
                                        optarg);
                                return CLI_EXIT_BAD_INPUT;
                        }
                        break;
                }
                case 'A':
                        f_http_address = optarg;
                        break;
                case 'P': {
                        char *end;
                        http_port = strtol(optarg, &end, 10);
                        if (*end || end == optarg || http_port < 0 || http_port > 65535) {
                                cub_log(LOG_ERR, "run: --http-port '%s': expected a port, 0 to 65535 (0 = off)",
                                        optarg);
                                return CLI_EXIT_BAD_INPUT;
                        }
                        break;
                }
                case 'K':
                        f_kubeconfig = optarg;
                        break;
                case 'R':
                        if (strcmp(optarg, "true") != 0 && strcmp(optarg, "false") != 0) {
                                cub_log(LOG_ERR, "run: --register-node '%s': expected true or false", optarg);
                                return CLI_EXIT_BAD_INPUT;
                        }
                        register_node = strcmp(optarg, "true") == 0;
                        break;
                case 'L':
                        f_labels = optarg;
                        break;
                case 'T':
                        f_taints = optarg;
                        break;
                case 'I': {
                        struct in_addr a4;

                        if (inet_pton(AF_INET, optarg, &a4) != 1) {
                                cub_log(LOG_ERR, "run: --node-ip '%s': expected an IPv4 address", optarg);
                                return CLI_EXIT_BAD_INPUT;
                        }
                        f_node_ip = optarg;
                        break;
                }
                case 'h':
                        run_usage(stdout);
                        return 0;
                default:
                        run_usage(stderr);
                        return CLI_EXIT_BAD_INPUT;
                }
        }
        if (optind < argc) {
                cub_log(LOG_ERR, "run: unexpected argument '%s'", argv[optind]);
                return CLI_EXIT_BAD_INPUT;
        }

        agent_options_init(&opt);
        if (f_config) {
                r = pod_kubelet_config_load_file(f_config, &opt.kc, &err);
                if (r < 0) {
                        cub_log(LOG_ERR, "%s", err.msg);
                        agent_options_done(&opt);
                        return CLI_EXIT_BAD_INPUT;
                }
                for (size_t i = 0; i < opt.kc.ignored.n; i++)
                        cub_log(LOG_WARNING, "%s: field '%s' is not supported by cubelet, ignoring", f_config,
                                opt.kc.ignored.items[i]);
        }
        /* the flag, the config's cgroupDriver, or what PID 1 is */
        driver_from = f_driver                                          ? " (--cgroup-driver)"
                      : opt.kc.cgroup_driver != POD_CGROUP_DRIVER_UNSET ? " (cgroupDriver)"
                                                                        : " (default)";
        if (f_driver) /* checked with the options */
                opt.kc.cgroup_driver = pod_cgroup_driver_from_string(f_driver);
        else if (opt.kc.cgroup_driver == POD_CGROUP_DRIVER_UNSET)
                opt.kc.cgroup_driver = cg_driver_default() == CG_DRIVER_SYSTEMD ? POD_CGROUP_DRIVER_SYSTEMD
                                                                                : POD_CGROUP_DRIVER_CGROUPFS;
        cub_log(LOG_INFO, "cgroup driver: %s%s", pod_cgroup_driver_to_string(opt.kc.cgroup_driver), driver_from);
        if (!f_node && !opt.kc.node_name && agent_host_node(&host, &err) < 0) {
                cub_log(LOG_ERR, "%s", err.msg);
                agent_options_done(&opt);
                return 1;
        }
        if (set_str(&opt.manifest_dir, f_manifest, opt.kc.static_pod_path, "/etc/kubernetes/manifests") < 0 ||
            set_str(&opt.runtime_endpoint, f_endpoint, opt.kc.runtime_endpoint, CRI_DEFAULT_ENDPOINT) < 0 ||
            set_str(&opt.cgroup_root, f_cgroup, opt.kc.cgroup_mount, "/sys/fs/cgroup") < 0 ||
            set_str(&opt.state_dir, f_state, opt.kc.state_dir, "/var/lib/cubelet") < 0 ||
            set_str(&opt.node_name, f_node, opt.kc.node_name, host.name) < 0 ||
            set_str(&opt.socket_path, f_socket, opt.kc.socket_path, "/run/cubelet/cubelet.sock") < 0 ||
            set_str(&opt.http_address, f_http_address, opt.kc.address, "127.0.0.1") < 0 ||
            set_str(&opt.kubelet_address, f_http_address, opt.kc.address, "0.0.0.0") < 0) {
                cub_log(LOG_ERR, "out of memory");
                agent_options_done(&opt);
                return 1;
        }
        opt.node_ip = f_node_ip ? strdup(f_node_ip) : NULL;
        opt.relist_usec = (uint64_t) (period * 1e6);
        opt.events_relist_usec = (uint64_t) (evented_period * 1e6);
        if (http_port < 0 && (opt.kc.read_only_port < 0 || opt.kc.read_only_port > 65535)) {
                cub_log(LOG_ERR, "%s: readOnlyPort %lld: expected 0 to 65535 (0 = off)", f_config,
                        (long long) opt.kc.read_only_port);
                agent_options_done(&opt);
                return CLI_EXIT_BAD_INPUT;
        }
        if (opt.kc.port < 0 || opt.kc.port > 65535) {
                cub_log(LOG_ERR, "%s: port %lld: expected 0 to 65535 (0 = off)", f_config, (long long) opt.kc.port);
                agent_options_done(&opt);
                return CLI_EXIT_BAD_INPUT;
        }
        /* a node of a cluster has no read-only port unless it is asked for (kubelet's default) */
        opt.http_port = (unsigned) (http_port >= 0                               ? http_port
                                    : f_kubeconfig && !opt.kc.read_only_port_set ? 0
                                                                                 : opt.kc.read_only_port);
        /* the static pod directory's rescan (fileCheckFrequency) and the CPU
         * manager's reconcile period (cpuManagerReconcilePeriod) */
        opt.rescan_usec = (uint64_t) opt.kc.file_check_frequency.usec;
        opt.cpu_reconcile_usec = (uint64_t) opt.kc.cpu_manager_reconcile_period.usec;
        if (run_url_options(&opt, f_url, f_freq) < 0 ||
            run_cluster_options(&opt, f_kubeconfig, register_node, f_labels, f_taints) < 0) {
                agent_options_done(&opt);
                return CLI_EXIT_BAD_INPUT;
        }

        /* before any thread exists: arenas are per thread */
        run_malloc_settings();

        /* block the signals the loop handles before any thread exists (gRPC, workers) */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        (void) sigprocmask(SIG_BLOCK, &mask, NULL);
        (void) signal(SIGPIPE, SIG_IGN);

        r = agent_new(&opt, &agent, &err);
        if (r < 0) {
                agent_options_done(&opt);
                cub_log_errno(LOG_ERR, r, &err, "cannot start");
                return 1;
        }
        /* the start-up burst (config, CRI channel, recovery lists) is freed by now */
        (void) malloc_trim(0);
        r = agent_run(agent);
        agent_free(agent);
        agent_options_done(&opt);
        if (r < 0) {
                cub_log_errno(LOG_ERR, r, NULL, "event loop failed");
                return 1;
        }
        cub_log(LOG_INFO, "stopped; pods keep running");
        return 0;
}
