/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet server's self-signed serving certificate (selfsigned.h). */
#include "selfsigned.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"

#define VALID_S (365LL * 24 * 3600)
#define RENEW_S (24LL * 3600)
#define PEM_MAX (64 * 1024)

/* the certificate at path is there and has more than a day left */
static bool still_good(const char *path) {
        _cleanup_free_ char *pem = NULL;
        gnutls_x509_crt_t crt = NULL;
        gnutls_datum_t d;
        size_t len = 0;
        bool good = false;
        CubError err = {};

        if (cub_read_file(path, PEM_MAX, &pem, &len, &err) < 0 || gnutls_x509_crt_init(&crt) < 0)
                return false;
        d = (gnutls_datum_t){ .data = (unsigned char *) pem, .size = (unsigned) len };
        if (gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM) >= 0)
                good = gnutls_x509_crt_get_expiration_time(crt) > time(NULL) + RENEW_S;
        gnutls_x509_crt_deinit(crt);
        return good;
}

static int make(const char *node_name, const char *ip, gnutls_datum_t *cert_pem, gnutls_datum_t *key_pem) {
        gnutls_x509_privkey_t key = NULL;
        gnutls_x509_crt_t crt = NULL;
        unsigned char serial[16], a4[4];
        char cn[512];
        time_t now = time(NULL);
        int r;

        (void) snprintf(cn, sizeof(cn), "%s@%lld", node_name, (long long) now);
        if ((r = gnutls_x509_privkey_init(&key)) < 0 || (r = gnutls_x509_crt_init(&crt)) < 0)
                goto done;
        if ((r = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1),
                                              0)) < 0 ||
            (r = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial))) < 0)
                goto done;
        serial[0] &= 0x7f; /* a positive serial */
        if ((r = gnutls_x509_crt_set_version(crt, 3)) < 0 ||
            (r = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial))) < 0 ||
            (r = gnutls_x509_crt_set_activation_time(crt, now - 3600)) < 0 ||
            (r = gnutls_x509_crt_set_expiration_time(crt, now + VALID_S)) < 0 ||
            (r = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn, strlen(cn))) < 0 ||
            (r = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, node_name, strlen(node_name),
                                                      GNUTLS_FSAN_APPEND)) < 0 ||
            (ip && inet_pton(AF_INET, ip, a4) == 1 &&
             (r = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, a4, sizeof(a4), GNUTLS_FSAN_APPEND)) <
                     0) ||
            (r = gnutls_x509_crt_set_basic_constraints(crt, 0, -1)) < 0 ||
            (r = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE | GNUTLS_KEY_KEY_ENCIPHERMENT)) < 0 ||
            (r = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0 ||
            (r = gnutls_x509_crt_set_key(crt, key)) < 0 ||
            (r = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0)) < 0)
                goto done;
        if ((r = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, cert_pem)) < 0)
                goto done;
        r = gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, key_pem);
done:
        gnutls_x509_crt_deinit(crt);
        gnutls_x509_privkey_deinit(key);
        return r;
}

int api_selfsigned_ensure(const char *dir, const char *node_name, const char *ip, char **ret_cert, char **ret_key,
                          CubError *err) {
        _cleanup_free_ char *cert = NULL, *key = NULL;
        gnutls_datum_t c = {}, k = {};
        int r;

        *ret_cert = *ret_key = NULL;
        if (asprintf(&cert, "%s/kubelet.crt", dir) < 0 || asprintf(&key, "%s/kubelet.key", dir) < 0)
                return cub_err_set(err, ENOMEM, "out of memory");
        if (!still_good(cert) || access(key, R_OK) < 0) {
                if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                        return cub_err_set(err, errno, "'%s': %s", dir, strerror(errno));
                r = make(node_name, ip, &c, &k);
                if (r < 0)
                        return cub_err_set(err, EINVAL, "a self-signed serving certificate: %s", gnutls_strerror(r));
                r = cub_write_file_atomic(key, k.data, k.size, 0600, err);
                if (r >= 0)
                        r = cub_write_file_atomic(cert, c.data, c.size, 0644, err);
                gnutls_free(c.data);
                gnutls_free(k.data);
                if (r < 0)
                        return r;
        }
        *ret_cert = TAKE_PTR(cert);
        *ret_key = TAKE_PTR(key);
        return 0;
}
