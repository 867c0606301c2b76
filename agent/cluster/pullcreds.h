/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Image pull secrets as kubelet's credentialprovider keyring reads them
 * (pkg/credentialprovider: BasicDockerKeyring, URLsMatch): each Secret's
 * `.dockerconfigjson` ({"auths": {LOCATION: ENTRY}}) or `.dockercfg`
 * ({LOCATION: ENTRY}); an entry's username and password, or its `auth`
 * (base64 of "user:password"). A location is a registry host with an
 * optional port and path ("https://" and a trailing /v1/ or /v2/ dropped);
 * it matches an image when the port is the same, the host has as many
 * labels and each matches as a glob ("*.example.com"), and its path is a
 * prefix of the image's. The credentials of every matching location, most
 * specific first (the locations in reverse order), are tried one after the
 * other; an image of the default registry ("busybox", "library/x",
 * "docker.io/x") also takes those of index.docker.io. Pure: no I/O.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "../util/err.h"

typedef struct KubePullCred {
        char *username;
        char *password;
        char *server; /* the location's host[:port], the CRI AuthConfig's server_address */
} KubePullCred;

void kube_pull_creds_free(KubePullCred *c, size_t n);

/* secrets: the pull secrets' keys (kube_projected_keys objects; NULL ones
 * skipped). *ret: the credentials for image, in the order to try (none:
 * pull without). A malformed docker config is skipped (*ret_skipped names
 * the first: "default/regcred: .dockerconfigjson: ..."); -ENOMEM. */
int kube_pull_creds(const json_t *const *secrets, const char *const *names, size_t n, const char *image,
                    KubePullCred **ret, size_t *ret_n, char **ret_skipped);

/* URLsMatchStr: a location (glob) and an image or location (target), both without scheme */
bool kube_urls_match(const char *glob, const char *target);
