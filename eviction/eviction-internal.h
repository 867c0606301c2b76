/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared between the files of eviction/ and its unit tests only. */

#include "eviction.h"

/* <0 when a ranks before b (a is evicted first) under policy for signal. */
int evict_pod_cmp(const EvictPod *a, const EvictPod *b, EvictSignal signal, EvictPolicy policy);

/* Parses a quantity or "N%" into v. `what` names the field in messages
 * ("evictionHard[memory.available]"). */
int evict_value_parse(const char *text, const char *what, EvictValue *ret, CubError *err);
