/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The own device choice (pure): what kubelet leaves to the topology manager
 * and the plugin, done in one deterministic pass for a plugin that offers
 * no GetPreferredAllocation (or answers one unusable).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../agent/util/cleanup.h"
#include "dp-internal.h"

typedef struct ChooseGroup {
        int numa;
        size_t count;
} ChooseGroup;

static int group_cmp(const void *a, const void *b) {
        const ChooseGroup *x = a, *y = b;

        if (x->count != y->count)
                return x->count > y->count ? -1 : 1;
        return x->numa < y->numa ? -1 : x->numa > y->numa;
}

static int idx_cmp(const void *a, const void *b, void *base) {
        const DpDevice *d = base;

        return strcmp(d[*(const size_t *) a].id, d[*(const size_t *) b].id);
}

static bool in_mask(const DpDevice *d, uint64_t mask) {
        return d->numa >= 0 && d->numa < 64 && (mask & (UINT64_C(1) << d->numa));
}

/* Picks need of the eligible, unpicked candidates, fewest NUMA nodes first. */
static void pick_fewest(const DpDevice *cands, const size_t *order, size_t n, const bool *eligible, bool *picked,
                        size_t need, size_t *ret_idx, size_t *k, ChooseGroup *groups) {
        size_t n_groups = 0;

        for (size_t i = 0; i < n; i++) {
                size_t g;

                if (!eligible[i] || picked[i])
                        continue;
                for (g = 0; g < n_groups; g++)
                        if (groups[g].numa == cands[i].numa)
                                break;
                if (g == n_groups)
                        groups[n_groups++] = (ChooseGroup){ .numa = cands[i].numa };
                groups[g].count++;
        }
        qsort(groups, n_groups, sizeof(ChooseGroup), group_cmp);
        for (size_t g = 0; g < n_groups && need > 0; g++)
                for (size_t j = 0; j < n && need > 0; j++) {
                        size_t i = order[j];

                        if (!eligible[i] || picked[i] || cands[i].numa != groups[g].numa)
                                continue;
                        picked[i] = true;
                        ret_idx[(*k)++] = i;
                        need--;
                }
}

int dp_choose_devices(const DpDevice *cands, size_t n, size_t want, uint64_t numa_mask, size_t *ret_idx) {
        _cleanup_free_ size_t *order = NULL;
        _cleanup_free_ bool *picked = NULL, *eligible = NULL;
        _cleanup_free_ ChooseGroup *groups = NULL;
        size_t k = 0, n_mask = 0;

        if (n < want)
                return -EINVAL;
        if (want == 0)
                return 0;
        order = calloc(n, sizeof(size_t));
        picked = calloc(n, sizeof(bool));
        eligible = calloc(n, sizeof(bool));
        groups = calloc(n, sizeof(ChooseGroup));
        if (!order || !picked || !eligible || !groups)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                order[i] = i;
        qsort_r(order, n, sizeof(size_t), idx_cmp, (void *) cands);

        /* the preferred NUMA nodes first */
        for (size_t i = 0; i < n; i++) {
                eligible[i] = in_mask(&cands[i], numa_mask);
                n_mask += eligible[i];
        }
        if (n_mask > 0)
                pick_fewest(cands, order, n, eligible, picked, want < n_mask ? want : n_mask, ret_idx, &k, groups);
        /* then the others */
        if (k < want) {
                for (size_t i = 0; i < n; i++)
                        eligible[i] = !picked[i];
                pick_fewest(cands, order, n, eligible, picked, want - k, ret_idx, &k, groups);
        }
        qsort_r(ret_idx, k, sizeof(size_t), idx_cmp, (void *) cands);
        return 0;
}

bool dp_preferred_valid(const char *const *ids, size_t n_ids, const char *const *avail, size_t n_avail,
                        const char *const *must, size_t n_must, size_t want) {
        if (n_ids != want)
                return false;
        for (size_t i = 0; i < n_ids; i++) {
                if (!dp_strv_contains(avail, n_avail, ids[i]))
                        return false;
                for (size_t j = 0; j < i; j++)
                        if (strcmp(ids[i], ids[j]) == 0)
                                return false;
        }
        for (size_t i = 0; i < n_must; i++)
                if (!dp_strv_contains(ids, n_ids, must[i]))
                        return false;
        return true;
}
