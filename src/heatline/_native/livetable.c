/* livetable.c: the live table and its filter. See livetable.h. */
#include "livetable.h"

#include <stdlib.h>
#include <string.h>

#include "engine_part.h" /* the engine lock, which writers hold */

#define EMPTY 0u
#define REMOVED 1u
#define MIN_TABLE 4096u

#define FILTER_BITS HL_LIVE_FILTER_BITS

uint64_t hl_live_filter[FILTER_BITS / 64];
static uint16_t filter_counts[FILTER_BITS]; /* writers only: listed keys per bit (saturating) */
/* Whether a key was ever added since the last clear: a process whose first session starts
 * finds the counts and the filter zero already (static storage) and leaves their pages
 * untouched, which a clear would fault in (the counts are 256 KiB: a child's start). */
static int filter_used;

typedef struct live_table {
    size_t mask;
    size_t used; /* live + removed slots */
    size_t live;
    uintptr_t *keys;
    hl_live_record *records;
    struct live_table *retired; /* older tables, kept until reset */
} live_table;

static size_t slot_of(uintptr_t key) {
    uint64_t x = (uint64_t)key * 0x9E3779B97F4A7C15ULL;
    return (size_t)(x >> 20);
}

static size_t filter_index(uintptr_t key) {
    return hl_live_filter_index(key);
}

/* Under the lock, before the key is published. */
static void filter_add(uintptr_t key) {
    size_t bit = filter_index(key);
    filter_used = 1;
    if (filter_counts[bit] == UINT16_MAX) return; /* saturated: the bit stays set */
    if (filter_counts[bit]++ == 0)
        __atomic_or_fetch(&hl_live_filter[bit / 64], (uint64_t)1 << (bit % 64), __ATOMIC_RELEASE);
}

/* Under the lock, once the key is no longer listed. No reader can be looking for this key:
 * the block is being freed by the one thread that owns it, so clearing the bit is safe. */
static void filter_remove(uintptr_t key) {
    size_t bit = filter_index(key);
    if (filter_counts[bit] == UINT16_MAX) return;
    if (--filter_counts[bit] == 0)
        __atomic_and_fetch(&hl_live_filter[bit / 64], ~((uint64_t)1 << (bit % 64)),
                           __ATOMIC_RELEASE);
}

/* Only while no key is listed and no table is published. */
static void filter_clear(void) {
    if (!filter_used) return;
    filter_used = 0;
    memset(filter_counts, 0, sizeof(filter_counts));
    for (size_t i = 0; i < FILTER_BITS / 64; i++)
        __atomic_store_n(&hl_live_filter[i], 0, __ATOMIC_RELEASE);
}

static live_table *table_new(size_t capacity) {
    live_table *t = calloc(1, sizeof(*t));
    if (t == NULL) return NULL;
    t->keys = calloc(capacity, sizeof(*t->keys));
    t->records = calloc(capacity, sizeof(*t->records));
    if (t->keys == NULL || t->records == NULL) {
        free(t->keys);
        free(t->records);
        free(t);
        return NULL;
    }
    t->mask = capacity - 1;
    return t;
}

static void table_free_all(live_table *t) {
    while (t != NULL) {
        live_table *older = t->retired;
        free(t->keys);
        free(t->records);
        free(t);
        t = older;
    }
}

/* Lock-free: whether key is in t. */
static int table_contains(const live_table *t, uintptr_t key) {
    size_t i = slot_of(key) & t->mask;
    for (size_t n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
        uintptr_t k = __atomic_load_n(&t->keys[i], __ATOMIC_ACQUIRE);
        if (k == key) return 1;
        if (k == EMPTY) return 0;
    }
    return 0;
}

/* Under the lock: the slot holding key, or -1. */
static long table_find(const live_table *t, uintptr_t key) {
    size_t i = slot_of(key) & t->mask;
    for (size_t n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
        if (t->keys[i] == key) return (long)i;
        if (t->keys[i] == EMPTY) return -1;
    }
    return -1;
}

static live_table *table; /* published with release, read with acquire */

/* Makes room for one more key, copying into a fresh table (removed slots dropped) once a
 * quarter of the slots are used. */
static live_table *table_for_insert(void) {
    live_table *t = table;
    if (t != NULL && (t->used + 1) * 4 <= t->mask + 1) return t;
    size_t capacity = MIN_TABLE;
    while (t != NULL && capacity < 8 * (t->live + 1)) capacity *= 2;
    live_table *grown = table_new(capacity);
    if (grown == NULL) return NULL;
    if (t != NULL) {
        for (size_t i = 0; i <= t->mask; i++) {
            uintptr_t key = t->keys[i];
            if (key == EMPTY || key == REMOVED) continue;
            size_t j = slot_of(key) & grown->mask;
            while (grown->keys[j] != EMPTY) j = (j + 1) & grown->mask;
            grown->keys[j] = key;
            grown->records[j] = t->records[i];
            grown->used++;
            grown->live++;
        }
        grown->retired = t;
    }
    __atomic_store_n(&table, grown, __ATOMIC_RELEASE);
    return grown;
}

int hl_live_contains(uintptr_t key) {
    const live_table *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
    return t != NULL && table_contains(t, key);
}

int hl_live_reserve_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    return table_for_insert() == NULL ? -1 : 0;
}

void hl_live_add_locked(uintptr_t key, hl_live_record record) {
    HL_ASSERT_ENGINE_LOCKED();
    live_table *t = table;
    HL_ASSERT(t != NULL && key > REMOVED); /* reserved first; 0 and 1 mark free slots */
    size_t i = slot_of(key) & t->mask;
    while (t->keys[i] != EMPTY && t->keys[i] != REMOVED) i = (i + 1) & t->mask;
    if (t->keys[i] == EMPTY) t->used++;
    t->records[i] = record;
    filter_add(key);
    __atomic_store_n(&t->keys[i], key, __ATOMIC_RELEASE);
    t->live++;
    HL_ASSERT(t->live <= t->used && t->used * 4 <= t->mask + 1); /* probes stay short */
}

int hl_live_take_locked(uintptr_t key, hl_live_record *record) {
    HL_ASSERT_ENGINE_LOCKED();
    live_table *t = table;
    long slot = t ? table_find(t, key) : -1;
    if (slot < 0) return 0;
    HL_ASSERT(t->live > 0);
    *record = t->records[slot];
    __atomic_store_n(&t->keys[slot], (uintptr_t)REMOVED, __ATOMIC_RELEASE);
    filter_remove(key);
    t->live--;
    return 1;
}

void hl_live_reset_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    live_table *t = table;
    __atomic_store_n(&table, NULL, __ATOMIC_RELEASE);
    table_free_all(t);
    filter_clear();
}
