/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <jansson.h>

#include "pod.h"

/* What cubelet takes from an API pod's status (api-status.c): a terminal
 * phase with its reason and message (pod->api_*), and the status of the
 * condition each readiness gate names (pod->gate_status, "" when the status
 * has none). 0, or -ENOMEM. */
int pod_take_api_status(Pod *pod, const json_t *status);
