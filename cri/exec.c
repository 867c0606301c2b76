/* SPDX-License-Identifier: Apache-2.0 */
/* ExecSync: a command run to its end in a running container. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cri-internal.h"

static char *copy_bytes(const ProtobufCBinaryData *b, size_t *ret_n) {
        char *s = malloc(b->len + 1);

        if (!s)
                return NULL;
        if (b->len)
                memcpy(s, b->data, b->len);
        s[b->len] = '\0';
        *ret_n = b->len;
        return s;
}

int cri_exec_sync(CriClient *c, const char *container_id, const char *const *cmd, int64_t timeout_s, CriExecResult *ret,
                  CubError *err) {
        Runtime__V1__ExecSyncRequest req = RUNTIME__V1__EXEC_SYNC_REQUEST__INIT;
        Runtime__V1__ExecSyncResponse *resp = NULL;
        CriExecResult o = {};
        uint64_t deadline;
        int r;

        req.container_id = (char *) container_id;
        req.cmd = (char **) cmd;
        req.n_cmd = cri_strv_len(cmd);
        req.timeout = timeout_s > 0 ? timeout_s : 0;
        /* the runtime ends the command at timeout_s; the call itself gets 2 s more */
        deadline = timeout_s > 0 ? (uint64_t) timeout_s * 1000000ULL + 2000000ULL : 0;
        r = cri_call(c, CRI_RT "ExecSync", &req, &runtime__v1__exec_sync_response__descriptor, deadline, &resp, err);
        if (r < 0)
                return r;
        o.exit_code = resp->exit_code;
        o.out = copy_bytes(&resp->stdout, &o.n_out);
        o.err_out = copy_bytes(&resp->stderr, &o.n_err);
        cri_free_msg(resp);
        if (!o.out || !o.err_out) {
                cri_exec_result_done(&o);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        *ret = o;
        return 0;
}

void cri_exec_result_done(CriExecResult *r) {
        if (!r)
                return;
        free(r->out);
        free(r->err_out);
        *r = (CriExecResult){};
}
