/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * A string-keyed hash map (open addressing, linear probing, FNV-1a): the
 * loop's O(1) indexes (pods by UID). Keys are borrowed: each must stay
 * valid and unchanged while its entry is in the map (typically a string
 * owned by the value).
 */

#include <stddef.h>

typedef struct CubHashmap CubHashmap;

int cub_hashmap_new(CubHashmap **ret);
CubHashmap *cub_hashmap_free(CubHashmap *m);
/* Adds or replaces; 0 or -ENOMEM. */
int cub_hashmap_put(CubHashmap *m, const char *key, void *value);
void *cub_hashmap_get(const CubHashmap *m, const char *key);
/* Removes key; with value non-NULL only if key maps to that value.
 * Returns the value removed, or NULL. */
void *cub_hashmap_remove(CubHashmap *m, const char *key, const void *value);
size_t cub_hashmap_size(const CubHashmap *m);
