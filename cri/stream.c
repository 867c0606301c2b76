/* SPDX-License-Identifier: Apache-2.0 */
/* Exec, Attach and PortForward: each answers with a URL of the runtime's
 * streaming server (containerd's, on loopback), valid for one connection
 * within a minute; the kubelet server proxies the client's upgraded
 * connection to it (agent/api/stream.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cri-internal.h"
#include "cri.h"

static int take_url(const char *what, const char *id, int r, char *url, char **ret, CubError *err) {
        if (r < 0)
                return cub_err_wrap(err, "%s %s", what, id);
        if (!url || strncmp(url, "http", 4) != 0)
                return cub_err_set(err, EPROTO, "%s %s: the runtime answered no streaming URL ('%s')", what, id,
                                   url ? url : "");
        *ret = strdup(url);
        return *ret ? 0 : cub_err_set(err, ENOMEM, "out of memory");
}

int cri_exec(CriClient *c, const char *container_id, const char *const *cmd, const CriStreamFlags *f, char **ret_url,
             CubError *err) {
        Runtime__V1__ExecRequest req = RUNTIME__V1__EXEC_REQUEST__INIT;
        Runtime__V1__ExecResponse *resp = NULL;
        size_t n = 0;
        int r;

        *ret_url = NULL;
        while (cmd && cmd[n])
                n++;
        req.container_id = (char *) container_id;
        req.cmd = (char **) cmd;
        req.n_cmd = n;
        req.tty = f->tty;
        req.stdin = f->in;
        req.stdout = f->out;
        req.stderr = f->err;
        r = cri_call(c, CRI_RT "Exec", &req, &runtime__v1__exec_response__descriptor, 0, &resp, err);
        r = take_url("exec in container", container_id, r, resp ? resp->url : NULL, ret_url, err);
        cri_free_msg(resp);
        return r;
}

int cri_attach(CriClient *c, const char *container_id, const CriStreamFlags *f, char **ret_url, CubError *err) {
        Runtime__V1__AttachRequest req = RUNTIME__V1__ATTACH_REQUEST__INIT;
        Runtime__V1__AttachResponse *resp = NULL;
        int r;

        *ret_url = NULL;
        req.container_id = (char *) container_id;
        req.tty = f->tty;
        req.stdin = f->in;
        req.stdout = f->out;
        req.stderr = f->err;
        r = cri_call(c, CRI_RT "Attach", &req, &runtime__v1__attach_response__descriptor, 0, &resp, err);
        r = take_url("attach to container", container_id, r, resp ? resp->url : NULL, ret_url, err);
        cri_free_msg(resp);
        return r;
}

int cri_port_forward(CriClient *c, const char *sandbox_id, const int32_t *ports, size_t n_ports, char **ret_url,
                     CubError *err) {
        Runtime__V1__PortForwardRequest req = RUNTIME__V1__PORT_FORWARD_REQUEST__INIT;
        Runtime__V1__PortForwardResponse *resp = NULL;
        int r;

        *ret_url = NULL;
        req.pod_sandbox_id = (char *) sandbox_id;
        req.port = (int32_t *) ports;
        req.n_port = n_ports;
        r = cri_call(c, CRI_RT "PortForward", &req, &runtime__v1__port_forward_response__descriptor, 0, &resp, err);
        r = take_url("port-forward to sandbox", sandbox_id, r, resp ? resp->url : NULL, ret_url, err);
        cri_free_msg(resp);
        return r;
}
