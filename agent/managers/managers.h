/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * agent/managers: the entries of the manager table (agent/lifecycle's
 * LcManagerVtable), each an adapter between the loop's hooks and a pure
 * module: admission.c (agent/admit + agent/cpumanager: the admission ledger
 * and the static CPU manager), pressure.c (eviction/: signals, node
 * conditions, evictions), devices.c (deviceplugin/: plugins, device
 * allocations), volumes.c (agent/volumes/: pod volumes, emptyDir
 * sizeLimit evictions), cgroups.c (agent/cgroup: the pod cgroups and the
 * QoS-level groups), shutdown.c (agent/shutdown: graceful node shutdown
 * through logind). A new manager is one file here, its logic in its
 * own folder, and one line in mgr_table (managers.c); the loop does not
 * change.
 */

#include "../../eviction/eviction.h"
#include "../lifecycle/lifecycle.h"

extern const LcManagerVtable mgr_admission;
extern const LcManagerVtable mgr_pressure;
extern const LcManagerVtable mgr_devices;
extern const LcManagerVtable mgr_volumes;
extern const LcManagerVtable mgr_logs;
extern const LcManagerVtable mgr_probes;
extern const LcManagerVtable mgr_cgroups;
extern const LcManagerVtable mgr_shutdown;

/* The table, in the order the loop calls the hooks. */
const LcManagerVtable *const *mgr_table(size_t *ret_n);
