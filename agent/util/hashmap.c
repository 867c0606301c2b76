/* SPDX-License-Identifier: Apache-2.0 */
#include "hashmap.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fnv.h"

typedef struct Slot {
        const char *key; /* NULL: empty */
        void *value;
        uint32_t hash;
} Slot;

struct CubHashmap {
        Slot *slots;
        size_t cap; /* a power of two */
        size_t n;
};

int cub_hashmap_new(CubHashmap **ret) {
        CubHashmap *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        m->cap = 16;
        m->slots = calloc(m->cap, sizeof(Slot));
        if (!m->slots) {
                free(m);
                return -ENOMEM;
        }
        *ret = m;
        return 0;
}

CubHashmap *cub_hashmap_free(CubHashmap *m) {
        if (!m)
                return NULL;
        free(m->slots);
        free(m);
        return NULL;
}

static Slot *find(const CubHashmap *m, const char *key, uint32_t h) {
        for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
                Slot *s = &m->slots[i];

                if (!s->key || (s->hash == h && strcmp(s->key, key) == 0))
                        return s;
        }
}

static int grow(CubHashmap *m) {
        Slot *old = m->slots;
        size_t old_cap = m->cap;

        m->slots = calloc(old_cap * 2, sizeof(Slot));
        if (!m->slots) {
                m->slots = old;
                return -ENOMEM;
        }
        m->cap = old_cap * 2;
        for (size_t i = 0; i < old_cap; i++)
                if (old[i].key)
                        *find(m, old[i].key, old[i].hash) = old[i];
        free(old);
        return 0;
}

int cub_hashmap_put(CubHashmap *m, const char *key, void *value) {
        uint32_t h = cub_fnv32a_str(CUB_FNV32_OFFSET, key);
        Slot *s;

        /* at most 3/4 full, so that a probe always ends on an empty slot */
        if ((m->n + 1) * 4 > m->cap * 3 && grow(m) < 0)
                return -ENOMEM;
        s = find(m, key, h);
        if (!s->key)
                m->n++;
        *s = (Slot){ .key = key, .value = value, .hash = h };
        return 0;
}

void *cub_hashmap_get(const CubHashmap *m, const char *key) {
        const Slot *s = find(m, key, cub_fnv32a_str(CUB_FNV32_OFFSET, key));

        return s->key ? s->value : NULL;
}

void *cub_hashmap_remove(CubHashmap *m, const char *key, const void *value) {
        Slot *s = find(m, key, cub_fnv32a_str(CUB_FNV32_OFFSET, key));
        void *v;
        size_t i, j;

        if (!s->key || (value && s->value != value))
                return NULL;
        v = s->value;
        /* backward-shift deletion: no tombstones */
        i = (size_t) (s - m->slots);
        for (j = (i + 1) & (m->cap - 1); m->slots[j].key; j = (j + 1) & (m->cap - 1)) {
                size_t home = m->slots[j].hash & (m->cap - 1);

                /* the entry at j may move to i if its home is not in (i, j] */
                if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
                        m->slots[i] = m->slots[j];
                        i = j;
                }
        }
        m->slots[i] = (Slot){};
        m->n--;
        return v;
}

size_t cub_hashmap_size(const CubHashmap *m) {
        return m->n;
}
