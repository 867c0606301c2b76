/* SPDX-License-Identifier: Apache-2.0 */
/* ExecSync and ReopenContainerLog. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cri-internal.h"
#include "cri.h"

#define EXEC_SLACK_USEC (5ULL * 1000000ULL)

static char *copy_bytes(const ProtobufCBinaryData *b, size_t *ret_n) {
        char *p = malloc(b->len + 1);

        if (!p)
                return NULL;
        if (b->len)
                memcpy(p, b->data, b->len);
        p[b->len] = '\0';
        *ret_n = b->len;
        return p;
}

int cri_exec_sync(CriClient *c, const char *container_id, const char *const *cmd, int64_t timeout_s, CriExecResult *ret,
                  CubError *err) {
        Runtime__V1__ExecSyncRequest req = RUNTIME__V1__EXEC_SYNC_REQUEST__INIT;
        Runtime__V1__ExecSyncResponse *resp = NULL;
        size_t n = 0;
        uint64_t deadline = 0;
        int r;

        *ret = (CriExecResult){};
        while (cmd && cmd[n])
                n++;
        req.container_id = (char *) container_id;
        req.cmd = (char **) cmd;
        req.n_cmd = n;
        req.timeout = timeout_s > 0 ? timeout_s : 0;
        /* the runtime enforces the timeout; the call waits a little longer
         * (no timeout: as long as the command runs, a day at most) */
        deadline = timeout_s > 0 ? (uint64_t) timeout_s * 1000000ULL + EXEC_SLACK_USEC : 86400ULL * 1000000ULL;
        r = cri_call(c, CRI_RT "ExecSync", &req, &runtime__v1__exec_sync_response__descriptor, deadline, &resp, err);
        if (r < 0)
                return cub_err_wrap(err, "exec in container %s", container_id);
        ret->exit_code = resp->exit_code;
        ret->out = copy_bytes(&resp->stdout, &ret->n_out);
        ret->err_out = copy_bytes(&resp->stderr, &ret->n_err);
        cri_free_msg(resp);
        if (!ret->out || !ret->err_out) {
                cri_exec_result_done(ret);
                return cub_err_set(err, ENOMEM, "out of memory");
        }
        return 0;
}

void cri_exec_result_done(CriExecResult *r) {
        free(r->out);
        free(r->err_out);
        *r = (CriExecResult){};
}

int cri_reopen_container_log(CriClient *c, const char *container_id, CubError *err) {
        Runtime__V1__ReopenContainerLogRequest req = RUNTIME__V1__REOPEN_CONTAINER_LOG_REQUEST__INIT;

        req.container_id = (char *) container_id;
        return cri_by_id(c, CRI_RT "ReopenContainerLog", &req.base,
                         &runtime__v1__reopen_container_log_response__descriptor, /* not_found_ok= */ false, err);
}
