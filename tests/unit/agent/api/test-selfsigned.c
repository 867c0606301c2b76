/* SPDX-License-Identifier: Apache-2.0 */
/* agent/api/selfsigned.c: the kubelet server's own serving pair, made once
 * (for the node's name and address, a year, the key 0600) and reused; one
 * that is not a certificate is made again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <ftw.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "agent/api/selfsigned.h"
#include "agent/util/fileio.h"

static char dir[64];

static char *slurp(const char *path) {
        char *text = NULL;
        size_t len = 0;
        CubError err = {};

        assert_int_equal(cub_read_file(path, 1 << 20, &text, &len, &err), 0);
        return text;
}

static void test_made_and_kept(void **state) {
        char pki[128], *cert = NULL, *key = NULL, *first, *again, san[256];
        gnutls_x509_crt_t crt;
        gnutls_datum_t d;
        unsigned char ip[16];
        size_t len;
        unsigned critical;
        struct stat st;
        CubError err = {};
        time_t now = time(NULL);

        (void) state;
        (void) snprintf(pki, sizeof(pki), "%s/pki", dir);
        assert_int_equal(api_selfsigned_ensure(pki, "node-a", "10.1.2.3", &cert, &key, &err), 0);
        assert_int_equal(stat(key, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        first = slurp(cert);
        assert_int_equal(gnutls_x509_crt_init(&crt), 0);
        d = (gnutls_datum_t){ .data = (unsigned char *) first, .size = (unsigned) strlen(first) };
        assert_int_equal(gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM), 0);
        len = sizeof(san);
        assert_int_equal(gnutls_x509_crt_get_subject_alt_name(crt, 0, san, &len, &critical), GNUTLS_SAN_DNSNAME);
        assert_string_equal(san, "node-a");
        len = sizeof(ip);
        assert_int_equal(gnutls_x509_crt_get_subject_alt_name(crt, 1, ip, &len, &critical), GNUTLS_SAN_IPADDRESS);
        assert_int_equal(len, 4);
        assert_true(ip[0] == 10 && ip[1] == 1 && ip[2] == 2 && ip[3] == 3);
        assert_true(gnutls_x509_crt_get_expiration_time(crt) > now + 364 * 86400);
        assert_true(gnutls_x509_crt_get_activation_time(crt) <= now);
        gnutls_x509_crt_deinit(crt);
        free(cert);
        free(key);
        /* kept */
        assert_int_equal(api_selfsigned_ensure(pki, "node-a", "10.1.2.3", &cert, &key, &err), 0);
        again = slurp(cert);
        assert_string_equal(first, again);
        free(again);
        /* not a certificate: made again */
        assert_int_equal(cub_write_file_atomic(cert, "junk", 4, 0644, &err), 0);
        free(cert);
        free(key);
        assert_int_equal(api_selfsigned_ensure(pki, "node-a", NULL, &cert, &key, &err), 0);
        again = slurp(cert);
        assert_non_null(strstr(again, "-----BEGIN CERTIFICATE-----"));
        assert_string_not_equal(first, again);
        free(again);
        free(first);
        free(cert);
        free(key);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path);
}

static int setup(void **state) {
        (void) state;
        (void) snprintf(dir, sizeof(dir), "/tmp/cubelet-test-selfsigned-XXXXXX");
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
        (void) state;
        return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_made_and_kept),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
