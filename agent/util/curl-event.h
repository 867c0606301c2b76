/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <curl/curl.h>
#include <systemd/sd-event.h>

#include "err.h"

/* libcurl's multi interface on an sd-event loop, for the manifest URL's
 * poller (agent/config), the API server's client (agent/cluster) and the
 * httpGet probes (agent/probes): fn gets each finished transfer (already
 * removed from the multi handle; the caller cleans it up). */
typedef struct CubCurl CubCurl;
typedef void (*CubCurlDoneFn)(CURL *easy, CURLcode code, void *userdata);
int cub_curl_new(sd_event *e, const char *name, CubCurlDoneFn fn, void *userdata, CubCurl **ret, CubError *err);
/* -EIO when libcurl refuses the handle. */
int cub_curl_add(CubCurl *c, CURL *easy);
/* Drops a transfer in flight (fn is not called for it). */
void cub_curl_remove(CubCurl *c, CURL *easy);
CubCurl *cub_curl_free(CubCurl *c);
