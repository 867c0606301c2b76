/* SPDX-License-Identifier: Apache-2.0 */
#include "managers.h"

#include "../util/cleanup.h"

/* Admission first: a pod is admitted (and its CPUs taken) before the
 * other managers see it; then its devices. The cgroups last: a pod gets
 * its pod cgroup only once every other manager admitted it. The shutdown
 * manager just before them: while the node shuts down it rejects a new
 * pod, and the managers before it let go of what they reserved. */
static const LcManagerVtable *const table[] = {
        &mgr_admission, &mgr_devices, &mgr_pressure, &mgr_volumes, &mgr_logs, &mgr_probes, &mgr_shutdown, &mgr_cgroups,
};

const LcManagerVtable *const *mgr_table(size_t *ret_n) {
        *ret_n = ELEMENTSOF(table);
        return table;
}
