/* stats.c: see stats.h. */
#include "stats.h"

#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "debug.h"

uint64_t hl_hash(const void *data, size_t len, uint64_t seed) {
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ULL;
    /* The seed is hashed as data, not mixed into the basis: XOR-ing it in would let a seed
     * difference cancel a one-byte data difference. */
    for (int i = 0; i < 8; i++) {
        h ^= (seed >> (8 * i)) & 0xFF;
        h *= 0x100000001b3ULL;
    }
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h ? h : 1;
}

/* Keys are spread with a multiplicative mix so that sequential ids do not cluster. */
static size_t slot_of(uint64_t key, size_t capacity) {
    uint64_t x = key * 0x9E3779B97F4A7C15ULL;
    return (size_t)(x ^ (x >> 29)) & (capacity - 1);
}

int hl_map_get(const hl_map *map, uint64_t key, uint32_t *value) {
    if (map->capacity == 0 || key == 0) return 0;
    for (size_t i = slot_of(key, map->capacity);; i = (i + 1) & (map->capacity - 1)) {
        if (map->keys[i] == 0) return 0;
        if (map->keys[i] == key) {
            *value = map->values[i];
            return 1;
        }
    }
}

static int map_grow(hl_map *map) {
    size_t capacity = map->capacity ? map->capacity * 2 : 64;
    uint64_t *keys = calloc(capacity, sizeof(*keys));
    uint32_t *values = calloc(capacity, sizeof(*values));
    if (keys == NULL || values == NULL) goto fail_alloc;
    for (size_t i = 0; i < map->capacity; i++) {
        if (map->keys[i] == 0) continue;
        size_t j = slot_of(map->keys[i], capacity);
        while (keys[j] != 0) j = (j + 1) & (capacity - 1);
        keys[j] = map->keys[i];
        values[j] = map->values[i];
    }
    free(map->keys);
    free(map->values);
    map->keys = keys;
    map->values = values;
    map->capacity = capacity;
    return 0;
fail_alloc:
    free(keys);
    free(values);
    return -1;
}

int hl_map_put(hl_map *map, uint64_t key, uint32_t value) {
    if (key == 0) return -1;
    if ((map->count + 1) * 4 > map->capacity * 3 && map_grow(map) != 0) return -1;
    size_t i = slot_of(key, map->capacity);
    while (map->keys[i] != 0 && map->keys[i] != key) i = (i + 1) & (map->capacity - 1);
    if (map->keys[i] == 0) map->count++;
    map->keys[i] = key;
    map->values[i] = value;
    return 0;
}

void hl_map_free(hl_map *map) {
    free(map->keys);
    free(map->values);
    memset(map, 0, sizeof(*map));
}

static char *copy_string(const char *s, size_t len) {
    char *copy = malloc(len + 1);
    if (copy == NULL) return NULL;
    memcpy(copy, s, len);
    copy[len] = '\0';
    return copy;
}

/* Ids are found by hash; on the (unlikely) event that two different names share a hash, the
 * next key is tried, so equal names always get one id and different names never share it. */
int64_t hl_stats_file(hl_stats *s, const char *path, size_t len, int user) {
    uint64_t key = hl_hash(path, len, 0);
    uint32_t id;
    for (; hl_map_get(&s->file_index, key, &id); key = key + 1 ? key + 1 : 1)
        if (strlen(s->files[id].path) == len && memcmp(s->files[id].path, path, len) == 0)
            return id;
    if (HL_ARRAY_RESERVE(s->files, s->files_capacity, s->nfiles + 1, 64) != 0) return -1;
    char *copy = copy_string(path, len);
    if (copy == NULL) return -1;
    if (hl_map_put(&s->file_index, key, (uint32_t)s->nfiles) != 0) {
        free(copy);
        return -1;
    }
    s->files[s->nfiles] = (hl_file){copy, user};
    return (int64_t)s->nfiles++;
}

int64_t hl_stats_function(hl_stats *s, uint32_t file, const char *name, const char *qualname,
                          int first_line) {
    uint64_t key =
        hl_hash(qualname, strlen(qualname), ((uint64_t)file << 32) ^ (uint32_t)first_line);
    uint32_t id;
    for (; hl_map_get(&s->function_index, key, &id); key = key + 1 ? key + 1 : 1) {
        const hl_function *f = &s->functions[id];
        if (f->file == file && f->first_line == first_line && strcmp(f->qualname, qualname) == 0)
            return id;
    }
    if (HL_ARRAY_RESERVE(s->functions, s->functions_capacity, s->nfunctions + 1, 64) != 0)
        return -1;
    char *name_copy = copy_string(name, strlen(name));
    char *qualname_copy = copy_string(qualname, strlen(qualname));
    if (name_copy == NULL || qualname_copy == NULL) goto fail_copy;
    if (hl_map_put(&s->function_index, key, (uint32_t)s->nfunctions) != 0) goto fail_copy;
    s->functions[s->nfunctions] = (hl_function){file, name_copy, qualname_copy, first_line};
    return (int64_t)s->nfunctions++;
fail_copy:
    free(name_copy);
    free(qualname_copy);
    return -1;
}

int64_t hl_stats_line(hl_stats *s, uint32_t file, int line, uint32_t function) {
    /* +1 keeps the key non-zero for file 0, line 0. */
    uint64_t key = (((uint64_t)file << 32) | (uint32_t)line) + 1;
    uint32_t id;
    if (hl_map_get(&s->line_index, key, &id)) return id;
    if (HL_ARRAY_RESERVE(s->lines, s->lines_capacity, s->nlines + 1, 64) != 0) return -1;
    if (hl_map_put(&s->line_index, key, (uint32_t)s->nlines) != 0) return -1;
    id = (uint32_t)s->nlines++;
    s->lines[id] = (hl_line_stat){file, line, function, NULL};
    return id;
}

hl_line_memory *hl_stats_line_memory(hl_stats *s, uint32_t line_id) {
    HL_ASSERT(line_id < s->nlines);
    hl_line_stat *l = &s->lines[line_id];
    if (l->memory == NULL) l->memory = calloc(1, sizeof(*l->memory));
    return l->memory;
}

int hl_stats_charge_line(hl_stats *s, uint32_t file, int line, uint32_t function, int category,
                         uint64_t ns) {
    HL_ASSERT(category >= 0 && category < HL_NCATEGORIES);
    int64_t line_id = hl_stats_line(s, file, line, function);
    if (line_id < 0) return -1;
    /* Both ids are below 2^32 - 1, so the key is exact and never 0. */
    uint64_t key = (((uint64_t)line_id << 32) | function) + 1;
    uint32_t id;
    if (!hl_map_get(&s->cell_index, key, &id)) {
        if (HL_ARRAY_RESERVE(s->cells, s->cells_capacity, s->ncells + 1, 64) != 0) return -1;
        if (hl_map_put(&s->cell_index, key, (uint32_t)s->ncells) != 0) return -1;
        id = (uint32_t)s->ncells++;
        s->cells[id] = (hl_line_cell){(uint32_t)line_id, function, {0, 0, 0}};
    }
    s->cells[id].ns[category] += ns;
    return 0;
}

int64_t hl_stats_cell(const hl_stats *s, uint32_t file, int line, uint32_t function) {
    uint32_t line_id, id;
    if (!hl_map_get(&s->line_index, (((uint64_t)file << 32) | (uint32_t)line) + 1, &line_id))
        return -1;
    if (!hl_map_get(&s->cell_index, (((uint64_t)line_id << 32) | function) + 1, &id)) return -1;
    return id;
}

static uint64_t move_ns(uint64_t *ns, int from, int to, uint64_t wanted) {
    HL_ASSERT(from >= 0 && from < HL_NCATEGORIES && to >= 0 && to < HL_NCATEGORIES);
    uint64_t moved = ns[from] < wanted ? ns[from] : wanted;
    ns[from] -= moved;
    ns[to] += moved;
    return moved;
}

uint64_t hl_stats_move_cell(hl_stats *s, uint32_t cell, int from, int to, uint64_t ns) {
    return cell < s->ncells ? move_ns(s->cells[cell].ns, from, to, ns) : 0;
}

uint64_t hl_stats_move_stack(hl_stats *s, uint32_t stack, int from, int to, uint64_t ns) {
    return stack < s->nstacks ? move_ns(s->stacks[stack].ns, from, to, ns) : 0;
}

int hl_timeline_add(hl_timeline *tl, uint32_t capacity, uint64_t t_ns, int64_t value) {
    if (tl->buckets == NULL) {
        tl->buckets = calloc(capacity, sizeof(*tl->buckets));
        if (tl->buckets == NULL) return -1;
        tl->capacity = capacity;
        tl->width_ns = 1000000u; /* 1 ms to start with */
        tl->origin_ns = t_ns;
    }
    /* Times come from several threads: one a little before the first event counts in bucket 0. */
    uint64_t since = t_ns > tl->origin_ns ? t_ns - tl->origin_ns : 0;
    while (since / tl->width_ns >= tl->capacity) {
        /* Merge pairs: bucket i takes 2i and 2i+1 (the later one's last value wins). */
        for (uint32_t i = 0; i < tl->capacity / 2; i++) {
            hl_timeline_bucket a = tl->buckets[2 * i], b = tl->buckets[2 * i + 1], m = a;
            if (b.used) {
                if (!a.used || b.max > a.max) {
                    m.max = b.max;
                    m.max_t_ns = b.max_t_ns;
                }
                m.last = b.last;
                m.last_t_ns = b.last_t_ns;
                m.used = 1;
            }
            tl->buckets[i] = m;
        }
        memset(tl->buckets + tl->capacity / 2, 0,
               (tl->capacity - tl->capacity / 2) * sizeof(*tl->buckets));
        tl->width_ns *= 2;
    }
    hl_timeline_bucket *b = &tl->buckets[since / tl->width_ns];
    if (!b->used || value > b->max) {
        b->max = value;
        b->max_t_ns = t_ns;
    }
    b->last = value;
    b->last_t_ns = t_ns;
    b->used = 1;
    return 0;
}

void hl_timeline_free(hl_timeline *tl) {
    free(tl->buckets);
    memset(tl, 0, sizeof(*tl));
}

int hl_stats_charge_stack(hl_stats *s, uint32_t thread, const uint64_t *frames, uint32_t depth,
                          int category, uint64_t ns, uint32_t *stack_id) {
    HL_ASSERT(category >= 0 && category < HL_NCATEGORIES && depth <= HL_MAX_DEPTH);
    *stack_id = HL_NO_STACK;
    uint64_t key = hl_hash(frames, depth * sizeof(*frames), thread);
    uint32_t id;
    int found;
    while ((found = hl_map_get(&s->stack_index, key, &id))) {
        const hl_stack_stat *st = &s->stacks[id];
        if (st->thread == thread && st->depth == depth &&
            memcmp(s->frame_pool + st->frames_at, frames, depth * sizeof(*frames)) == 0)
            break;
        key = key + 1 ? key + 1 : 1; /* a hash collision: try the next key */
    }
    if (!found) {
        if (s->nstacks >= HL_MAX_STACKS) {
            s->stacks_dropped_ns += ns;
            return 0;
        }
        if (HL_ARRAY_RESERVE(s->frame_pool, s->pool_capacity, s->pool_length + depth, 4096) != 0 ||
            HL_ARRAY_RESERVE(s->stacks, s->stacks_capacity, s->nstacks + 1, 64) != 0)
            return -1;
        if (hl_map_put(&s->stack_index, key, (uint32_t)s->nstacks) != 0) return -1;
        if (depth) memcpy(s->frame_pool + s->pool_length, frames, depth * sizeof(*frames));
        id = (uint32_t)s->nstacks++;
        s->stacks[id] = (hl_stack_stat){thread, depth, s->pool_length, {0, 0, 0}};
        s->pool_length += depth;
    }
    s->stacks[id].ns[category] += ns;
    *stack_id = id;
    return 0;
}

void hl_stats_clear(hl_stats *s) {
    for (size_t i = 0; i < s->nfiles; i++) free(s->files[i].path);
    for (size_t i = 0; i < s->nfunctions; i++) {
        free(s->functions[i].name);
        free(s->functions[i].qualname);
    }
    for (size_t i = 0; i < s->nlines; i++) {
        if (s->lines[i].memory != NULL) hl_timeline_free(&s->lines[i].memory->timeline);
        free(s->lines[i].memory);
    }
    free(s->files);
    free(s->functions);
    free(s->lines);
    free(s->cells);
    free(s->stacks);
    free(s->frame_pool);
    hl_map_free(&s->file_index);
    hl_map_free(&s->function_index);
    hl_map_free(&s->line_index);
    hl_map_free(&s->cell_index);
    hl_map_free(&s->stack_index);
    memset(s, 0, sizeof(*s));
}
