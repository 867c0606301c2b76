/* SPDX-License-Identifier: Apache-2.0 */
/* `cubelet describe POD`: one pod of the running agent the way `kubectl
 * describe pod` prints it, events last. It reads the status socket's
 * document, the same one `cubelet status` prints: the reasons, messages and
 * events are the ones status and /pods show (agent/lifecycle/reasons.c). */
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../api/api.h"
#include "../util/cleanup.h"
#include "../util/log.h"
#include "cli.h"

static const char *str(json_t *o, const char *k) {
        const char *s = json_string_value(json_object_get(o, k));
        return s ? s : "";
}

static long long num(json_t *o, const char *k) {
        return (long long) json_integer_value(json_object_get(o, k));
}

/* apimachinery's duration.HumanDuration, as kubectl prints ages */
static void human(long long s, char *buf, size_t size) {
        long long m = s / 60, h = s / 3600;

        if (s < 0)
                (void) snprintf(buf, size, "0s");
        else if (s < 120)
                (void) snprintf(buf, size, "%llds", s);
        else if (m < 10 && s % 60)
                (void) snprintf(buf, size, "%lldm%llds", m, s % 60);
        else if (m < 180)
                (void) snprintf(buf, size, "%lldm", m);
        else if (h < 8 && m % 60)
                (void) snprintf(buf, size, "%lldh%lldm", h, m % 60);
        else if (h < 48)
                (void) snprintf(buf, size, "%lldh", h);
        else if (h < 24 * 8 && h % 24)
                (void) snprintf(buf, size, "%lldd%lldh", h / 24, h % 24);
        else
                (void) snprintf(buf, size, "%lldd", h / 24);
}

static void print_container(json_t *c) {
        json_t *last = json_object_get(c, "lastTermination");
        const char *state = str(c, "state");

        printf("  %s:\n", str(c, "name"));
        printf("    Container ID:   %s%s\n", *str(c, "id") ? "containerd://" : "", str(c, "id"));
        printf("    Image:          %s\n", str(c, "image"));
        printf("    State:          %s\n", strcmp(state, "Terminating") == 0 ? "Running" : state);
        if (*str(c, "waitingReason"))
                printf("      Reason:       %s\n", str(c, "waitingReason"));
        if (*str(c, "waitingMessage"))
                printf("      Message:      %s\n", str(c, "waitingMessage"));
        if (last) {
                printf("    Last State:     Terminated\n");
                printf("      Reason:       %s\n", *str(last, "reason") ? str(last, "reason") : "Error");
                printf("      Exit Code:    %lld\n", num(last, "exitCode"));
        }
        printf("    Ready:          %s\n", json_is_true(json_object_get(c, "ready")) ? "True" : "False");
        printf("    Restart Count:  %lld\n", num(c, "restarts"));
}

static void print_pod(json_t *doc, json_t *p) {
        json_t *c, *e;
        size_t i;
        bool any_init = false;

        printf("Name:             %s\n", str(p, "name"));
        printf("Namespace:        %s\n", str(p, "namespace"));
        if (json_object_get(p, "priority"))
                printf("Priority:         %lld\n", num(p, "priority"));
        printf("Node:             %s/%s\n", str(doc, "node"), str(p, "hostIP"));
        printf("UID:              %s\n", str(p, "uid"));
        printf("Source:           %s\n", str(p, "source"));
        printf("Status:           %s\n", str(p, "phase"));
        if (*str(p, "reason"))
                printf("Reason:           %s\n", str(p, "reason"));
        if (*str(p, "message"))
                printf("Message:          %s\n", str(p, "message"));
        printf("IP:               %s\n", str(p, "podIP"));
        json_array_foreach(json_object_get(p, "containers"), i, c) any_init =
                any_init || json_is_true(json_object_get(c, "init"));
        if (any_init) {
                printf("Init Containers:\n");
                json_array_foreach(json_object_get(p, "containers"), i, c) {
                        if (json_is_true(json_object_get(c, "init")))
                                print_container(c);
                }
        }
        printf("Containers:\n");
        json_array_foreach(json_object_get(p, "containers"), i, c) {
                if (!json_is_true(json_object_get(c, "init")))
                        print_container(c);
        }
        printf("Conditions:\n  Type              Status\n");
        printf("  Ready             %s\n", json_is_true(json_object_get(p, "ready")) ? "True" : "False");
        printf("QoS Class:        %s\n", str(p, "qosClass"));
        if (*str(p, "lastError"))
                printf("Last Error:       %s\n", str(p, "lastError"));
        if (json_array_size(json_object_get(p, "events")) == 0) {
                printf("Events:           <none>\n");
                return;
        }
        printf("Events:\n  %-8s %-24s %-22s %-8s %s\n", "Type", "Reason", "Age", "From", "Message");
        printf("  %-8s %-24s %-22s %-8s %s\n", "----", "------", "----", "----", "-------");
        json_array_foreach(json_object_get(p, "events"), i, e) {
                char age[64], last[24], first[24];

                human(num(e, "lastSeenSecondsAgo"), last, sizeof(last));
                human(num(e, "firstSeenSecondsAgo"), first, sizeof(first));
                if (num(e, "count") > 1)
                        (void) snprintf(age, sizeof(age), "%s (x%lld over %s)", last, num(e, "count"), first);
                else
                        (void) snprintf(age, sizeof(age), "%s", last);
                printf("  %-8s %-24s %-22s %-8s %s\n", str(e, "type"), str(e, "reason"), age, "cubelet",
                       str(e, "message"));
        }
}

int cli_describe(int argc, char **argv) {
        static const struct option options[] = {
                { "socket", required_argument, NULL, 's' },
                { "namespace", required_argument, NULL, 'n' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *socket_path = "/run/cubelet/cubelet.sock", *ns = NULL, *name;
        _cleanup_free_ char *text = NULL;
        CubError err = {};
        json_t *doc, *p;
        json_error_t jerr;
        size_t i;
        int c;

        optind = 1;
        while ((c = getopt_long(argc, argv, "hn:", options, NULL)) >= 0) {
                switch (c) {
                case 's':
                        socket_path = optarg;
                        break;
                case 'n':
                        ns = optarg;
                        break;
                case 'h':
                        puts("Usage: cubelet describe [--socket PATH] [-n NAMESPACE] POD\n\n"
                             "One pod of the running agent as `kubectl describe pod` prints it: its containers'\n"
                             "states with kubelet's reasons and messages, and its events last. POD is the pod's\n"
                             "name (a static pod's carries the node's name: web-node1) or NAMESPACE/NAME.");
                        return 0;
                default:
                        return CLI_EXIT_BAD_INPUT;
                }
        }
        if (optind != argc - 1) {
                cub_log(LOG_ERR, "describe: expected one pod name");
                return CLI_EXIT_BAD_INPUT;
        }
        name = argv[optind];
        if (strchr(name, '/') && !ns) {
                static char nsbuf[256];

                (void) snprintf(nsbuf, sizeof(nsbuf), "%.*s", (int) (strchr(name, '/') - name), name);
                ns = nsbuf;
                name = strchr(name, '/') + 1;
        }
        if (api_fetch(socket_path, &text, &err) < 0) {
                cub_log(LOG_ERR, "%s", err.msg);
                return 1;
        }
        doc = json_loads(text, 0, &jerr);
        if (!doc) {
                cub_log(LOG_ERR, "status socket '%s': malformed reply: %s", socket_path, jerr.text);
                return 1;
        }
        json_array_foreach(json_object_get(doc, "pods"), i, p) {
                char full[512];

                (void) snprintf(full, sizeof(full), "%s-%s", name, str(doc, "node"));
                if ((ns && strcmp(str(p, "namespace"), ns) != 0) ||
                    (strcmp(str(p, "name"), name) != 0 && strcmp(str(p, "name"), full) != 0))
                        continue;
                print_pod(doc, p);
                json_decref(doc);
                return 0;
        }
        json_decref(doc);
        cub_log(LOG_ERR, "describe: pod '%s%s%s' not found", ns ? ns : "", ns ? "/" : "", name);
        return 1;
}
