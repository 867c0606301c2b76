/* SPDX-License-Identifier: Apache-2.0 */
#include "managers.h"

#include "../util/cleanup.h"

/* The shutdown manager first: while the node shuts down it rejects every
 * new pod before anything is reserved for it. Then admission: a pod is admitted (and its CPUs taken) before the
 * other managers see it; then its devices. The cgroups last: a pod gets
 * its pod cgroup only once every other manager admitted it. */
static const LcManagerVtable *const table[] = {
        &mgr_shutdown, &mgr_admission, &mgr_devices, &mgr_pressure, &mgr_volumes, &mgr_logs, &mgr_probes, &mgr_cgroups,
};

const LcManagerVtable *const *mgr_table(size_t *ret_n) {
        *ret_n = ELEMENTSOF(table);
        return table;
}
