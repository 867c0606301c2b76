/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/pod: the v1 Pod model and its parts, one header for the rest of
 * the tree. The model (types, quantities, decoding, defaulting, validation,
 * static-pod naming) is pod-model.h, the bottom of pod/'s headers; the
 * parts below include it, never this umbrella.
 */

#include "pod-model.h"

/* The parts with a header of their own: the node and its
 * KubeletConfiguration (node.c), env sources (env.c), the security context
 * (security.c), the pod network (network.c), the pod's resources: QoS,
 * effective requests and limits, pod-level resources (resources.c,
 * pod-resources.c). */
#include "env.h"
#include "field-table.h"
#include "network.h"
#include "node.h"
#include "resources.h"
#include "security.h"
