/* SPDX-License-Identifier: Apache-2.0 */
/* The manifest URL's last good answer on disk, so that a node that starts
 * with the URL unreachable runs the pods it ran before. One JSON file,
 * replaced whole (temporary file, fsync, rename):
 *
 *   {"version":1,"url":"<the URL>","etag":"<ETag>","lastModified":"<...>",
 *    "sha256":"<hex of body>","body":"<the 200's body, as received>"}
 *
 * etag and lastModified are left out when the answer had none. The body's
 * SHA-256 catches a file changed or cut by anything else than this code. */
#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cleanup.h"
#include "../util/fileio.h"
#include "http-internal.h"

/* the body is escaped in JSON: at most 6 bytes for one ("\u0001") */
#define CACHE_FILE_MAX ((size_t) PODSRC_HTTP_BODY_MAX * 6 + 64 * 1024)

int podsrc_http_body_hash(const char *buf, size_t len, unsigned char out[static 32]) {
        unsigned int n = 0;

        return EVP_Digest(buf, len, out, &n, EVP_sha256(), NULL) && n == 32 ? 0 : -EIO;
}

static void hash_hex(const unsigned char hash[static 32], char out[static 65]) {
        for (size_t i = 0; i < 32; i++)
                (void) snprintf(out + 2 * i, 3, "%02x", hash[i]);
}

int podsrc_http_cache_write(const char *path, const char *url, const char *etag, const char *last_modified,
                            const char *body, size_t len, const unsigned char hash[static 32], CubError *err) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        _cleanup_free_ char *text = NULL;
        json_t *b;
        char hex[65];

        b = json_stringn(body, len);
        if (!b)
                return cub_err_set(err, EINVAL, "'%s': the answer of %s is not UTF-8 text, not kept", path, url);
        hash_hex(hash, hex);
        root = json_pack("{s:i,s:s,s:s*,s:s*,s:s,s:o}", "version", 1, "url", url, "etag", etag, "lastModified",
                         last_modified, "sha256", hex, "body", b);
        if (!root)
                return cub_err_set(err, ENOMEM, "'%s': out of memory", path);
        text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!text)
                return cub_err_set(err, ENOMEM, "'%s': out of memory", path);
        return cub_write_file_atomic(path, text, strlen(text), 0600, err);
}

static int dup_member(json_t *root, const char *name, bool required, char **ret) {
        json_t *v = json_object_get(root, name);

        if (!v && !required) {
                *ret = NULL;
                return 0;
        }
        if (!json_is_string(v))
                return -EBADMSG;
        *ret = strdup(json_string_value(v));
        return *ret ? 0 : -ENOMEM;
}

int podsrc_http_cache_read(const char *path, const char *url, PodsrcHttpCache *ret, CubError *err) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        _cleanup_free_ char *data = NULL;
        _cleanup_(podsrc_http_cache_done) PodsrcHttpCache c = {};
        const char *names[] = { "url", "etag", "lastModified" };
        char **fields[] = { &c.url, &c.etag, &c.last_modified };
        const char *sum;
        char hex[65];
        json_error_t jerr;
        json_t *body, *version;
        size_t size;
        int r;

        r = cub_read_file(path, CACHE_FILE_MAX, &data, &size, err);
        if (r < 0)
                return r; /* "'<path>': <what>" */
        root = json_loadb(data, size, JSON_ALLOW_NUL, &jerr);
        if (!root)
                return cub_err_set(err, EBADMSG, "'%s': line %d: %s", path, jerr.line, jerr.text);
        version = json_object_get(root, "version");
        if (!json_is_integer(version) || json_integer_value(version) != 1)
                return cub_err_set(err, EBADMSG, "'%s': version: expected 1", path);
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                r = dup_member(root, names[i], /* required= */ i == 0, fields[i]);
                if (r == -ENOMEM)
                        return cub_err_set(err, ENOMEM, "'%s': out of memory", path);
                if (r < 0)
                        return cub_err_set(err, EBADMSG, "'%s': %s: not a string", path, names[i]);
        }
        if (strcmp(c.url, url) != 0)
                return cub_err_set(err, ESTALE, "'%s': the answer of %s, not of %s", path, c.url, url);
        body = json_object_get(root, "body");
        sum = json_string_value(json_object_get(root, "sha256"));
        if (!json_is_string(body) || json_string_length(body) == 0)
                return cub_err_set(err, EBADMSG, "'%s': body: not a string, or empty", path);
        if (!sum)
                return cub_err_set(err, EBADMSG, "'%s': sha256: not a string", path);
        if (podsrc_http_body_hash(json_string_value(body), json_string_length(body), c.hash) < 0)
                return cub_err_set(err, EIO, "'%s': hashing the body failed", path);
        hash_hex(c.hash, hex);
        if (strcmp(hex, sum) != 0)
                return cub_err_set(err, EBADMSG, "'%s': sha256: the body does not match it", path);
        c.len = json_string_length(body);
        c.body = malloc(c.len + 1);
        if (!c.body)
                return cub_err_set(err, ENOMEM, "'%s': out of memory", path);
        memcpy(c.body, json_string_value(body), c.len);
        c.body[c.len] = '\0';
        *ret = c;
        c = (PodsrcHttpCache){};
        return 0;
}

void podsrc_http_cache_done(PodsrcHttpCache *c) {
        free(c->url);
        free(c->etag);
        free(c->last_modified);
        free(c->body);
        *c = (PodsrcHttpCache){};
}
