/* SPDX-License-Identifier: Apache-2.0 */
/* The CRI client, security context: the image's user from ImageStatus
 * (kubelet's getImageUser), for runAsNonRoot and run_as_user. */
#include "cri-internal.h"
#include "cri.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int cri_image_user(CriClient *c, const char *image, bool *ret_uid_set, int64_t *ret_uid, char **ret_username,
                   CubError *err) {
        Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
        Runtime__V1__ImageStatusResponse *resp = NULL;
        const Runtime__V1__Image *img;
        int r;

        *ret_uid_set = false;
        *ret_uid = 0;
        *ret_username = NULL;
        spec.image = (char *) image;
        req.image = &spec;
        r = cri_call(c, CRI_IMG "ImageStatus", &req, &runtime__v1__image_status_response__descriptor, 0, &resp, err);
        if (r < 0)
                return r;
        img = resp->image;
        if (!img) {
                cri_free_msg(resp);
                return cub_err_set(err, ENOENT, "'%s': ImageStatus of '%s': no such image", cri_client_endpoint(c),
                                   image);
        }
        if (img->uid) {
                *ret_uid_set = true;
                *ret_uid = img->uid->value;
        } else if (img->username && *img->username) {
                *ret_username = strdup(img->username);
                if (!*ret_username) {
                        cri_free_msg(resp);
                        return cub_err_set(err, ENOMEM, "out of memory");
                }
        }
        cri_free_msg(resp);
        return 0;
}
