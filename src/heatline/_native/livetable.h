/* livetable.h: the live table of the memory part: every recorded allocation still alive,
 * address -> (weight, line, kind), so that a free can find what to subtract.
 *
 * Open addressing with linear probing. Keys are block addresses; 0 marks an empty slot and 1 a
 * removed one. Writers hold the engine lock; readers (every free) only load keys atomically.
 * A quarter of the slots at most are used (live or removed), so probes stay short; past that
 * the table is copied into a fresh one (dropping removed slots), published with a release
 * store; the old one is kept (a reader may still be probing it) until the next session starts.
 *
 * Nearly every free is of a block that was never sampled, so the table is fronted by a filter
 * of HL_LIVE_FILTER_BITS bits, one fixed array for all tables: a bit is set while at least one listed
 * key hashes to it (writers keep a count per bit, under the lock, and clear the bit when its
 * count drops to 0). A clear bit proves the block is not listed with one load from a 16 KB
 * array at a fixed address; a set bit (for an absent block: listed keys / FILTER_BITS, under
 * 1% for the few hundred samples a program usually holds) sends the free on to the probe.
 * - Fixed, not sized with the table: the common free then depends on one load instead of
 *   three chained ones (table, its filter pointer, the word), which measured 2.2 points of
 *   run time on an int-heavy loop (bench/hooks.py pure_python: +7.1% -> +4.9%). Its cost: a program holding many thousands of samples
 *   (gigabytes of sampled memory) probes more often.
 * - Clearing matters: allocators reuse a freed block's address first (pymalloc's free lists are
 *   LIFO), so with bits left set, the addresses of sampled-then-freed blocks became the most
 *   often freed addresses of all, each free of them probing the table.
 * - Indexing the filter by page instead, for cache locality across runs of frees, was measured
 *   and lost: small objects share pages with sampled ones, so many more frees were probed.
 */
#ifndef HEATLINE_LIVETABLE_H
#define HEATLINE_LIVETABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct hl_live_record {
    uint64_t weight;
    uint32_t line;
    uint8_t kind;
} hl_live_record;

#define HL_LIVE_FILTER_BITS (1u << 17)

/* The filter's bits (livetable.c). Hidden, so the load in hl_live_may_contain is one load from
 * a fixed address, as with a static array. */
extern uint64_t hl_live_filter[HL_LIVE_FILTER_BITS / 64] __attribute__((visibility("hidden")));

static inline size_t hl_live_filter_index(uintptr_t key) {
    uint64_t x = ((uint64_t)key ^ ((uint64_t)key >> 29)) * 0xBF58476D1CE4E5B9ULL;
    return (size_t)(x >> 24) & (HL_LIVE_FILTER_BITS - 1);
}

/* Lock-free, on every free: 0 proves key is not listed. */
static inline int hl_live_may_contain(uintptr_t key) {
    size_t bit = hl_live_filter_index(key);
    return (__atomic_load_n(&hl_live_filter[bit / 64], __ATOMIC_ACQUIRE) >> (bit % 64)) & 1;
}

/* Lock-free: whether key is listed (a probe of the published table). */
int hl_live_contains(uintptr_t key);

/* The rest with the engine lock held. */

/* Makes room for one more key. Returns 0, or -1 when out of memory. */
int hl_live_reserve_locked(void);

/* Lists key (not listed: hl_live_take_locked it first), after hl_live_reserve_locked returned 0. */
void hl_live_add_locked(uintptr_t key, hl_live_record record);

/* Unlists key: 1 with its record in *record, or 0 if it was not listed. */
int hl_live_take_locked(uintptr_t key, hl_live_record *record);

/* Forgets every key and frees every table (no free may be probing: the hooks are off or the
 * session is starting). */
void hl_live_reset_locked(void);

#endif
