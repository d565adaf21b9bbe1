/* memory.c: the memory part of the engine: what a sampled allocation, free or copy is charged
 * to, and the part's lifecycle (hl_memory_part). See memory.h; the hooks that see and sample
 * the events are memhooks.c's (with the sampling maths), the live table livetable.c's.
 *
 * Frees. Each recorded allocation is entered in the live table (address -> weight, line, kind).
 * Every free looks its address up there without taking a lock; only a hit (a recorded block)
 * takes the engine lock and subtracts the block's weight from its line's live bytes and from
 * the program's. The program's live estimate and its peak therefore change only at recorded
 * events, which is where the peak is taken (with the time and the line allocating at that
 * moment).
 */
#define _GNU_SOURCE
#include "memory.h"

#include <errno.h>
#include <string.h>

#include "clock.h"
#include "engine_part.h"
#include "got.h"
#include "labels.h"
#include "livetable.h"
#include "memhooks.h"

static struct {
    uint64_t start_ns;
    hl_memory_totals totals;
} mem;

/* ---- charging (engine lock held) ---------------------------------------------------------- */

static void program_changed_locked(uint64_t t, uint32_t line) {
    HL_ASSERT_ENGINE_LOCKED();
    hl_memory_totals *m = &mem.totals;
    if (m->live > m->peak) {
        m->peak = m->live;
        m->peak_t_ns = t;
        m->peak_line = line;
    }
    /* live is the sum of the weights in the live table: a free is subtracted only for a block
     * the table listed, so it cannot go below 0. */
    HL_ASSERT(m->live >= 0 && m->peak >= m->live);
    (void)hl_timeline_add(&m->timeline, HL_PROGRAM_TIMELINE_BUCKETS, t, m->live);
}

/* Subtracts a block that left the live table from its line and from the program. */
static void forget_block_locked(hl_live_record r, uint64_t now) {
    HL_ASSERT_ENGINE_LOCKED();
    hl_memory_totals *m = &mem.totals;
    m->freed += r.weight;
    m->live -= (int64_t)r.weight;
    if (r.line != HL_NO_LINE) {
        HL_ASSERT(r.line < hl_engine_stats_locked()->nlines); /* the table is reset with them */
        hl_line_memory *lm = hl_engine_stats_locked()->lines[r.line].memory;
        if (lm != NULL) {
            lm->freed += r.weight;
            lm->freed_samples++;
            lm->live -= (int64_t)r.weight;
            (void)hl_timeline_add(&lm->timeline, HL_LINE_TIMELINE_BUCKETS, now, lm->live);
        }
    }
    program_changed_locked(now, r.line);
}

static void record_allocation(uintptr_t address, uint64_t weight, int kind) {
    hl_engine_lock_from_hook();
    if (!hl_memhooks_sampling() || hl_engine_paused()) {
        hl_engine_unlock_from_hook();
        return;
    }
    uint64_t now = hl_now_ns() - mem.start_ns;
    uint32_t line = hl_engine_current_line_locked();
    hl_memory_totals *m = &mem.totals;
    m->samples++;
    m->alloc[kind] += weight;
    if (line == HL_NO_LINE) m->unattributed_alloc += weight;

    if (hl_live_reserve_locked() != 0) {
        m->untracked++;
        hl_engine_unlock_from_hook();
        return;
    }
    /* The address may still be listed if its earlier free was not seen (freed by an object
     * that is not redirected): that block is gone, so it is forgotten first. */
    hl_live_record stale;
    if (hl_live_take_locked(address, &stale)) forget_block_locked(stale, now);
    hl_live_add_locked(address, (hl_live_record){weight, line, (uint8_t)kind});

    m->live += (int64_t)weight;
    if (line != HL_NO_LINE) {
        hl_line_memory *lm = hl_stats_line_memory(hl_engine_stats_locked(), line);
        if (lm != NULL) {
            lm->alloc[kind] += weight;
            lm->alloc_samples++;
            lm->live += (int64_t)weight;
            if (lm->live > lm->peak) lm->peak = lm->live;
            (void)hl_timeline_add(&lm->timeline, HL_LINE_TIMELINE_BUCKETS, now, lm->live);
        }
    }
    program_changed_locked(now, line);
    hl_labels_charge_alloc(hl_labels_own_current(), weight, m->live);
    hl_engine_unlock_from_hook();
}

static void record_free(uintptr_t address) {
    hl_engine_lock_from_hook();
    hl_live_record r;
    if (hl_live_take_locked(address, &r)) forget_block_locked(r, hl_now_ns() - mem.start_ns);
    hl_engine_unlock_from_hook();
}

static void record_copy(uint64_t weight) {
    hl_engine_lock_from_hook();
    if (hl_memhooks_sampling() && !hl_engine_paused()) {
        uint32_t line = hl_engine_current_line_locked();
        mem.totals.copied += weight;
        if (line == HL_NO_LINE) {
            mem.totals.unattributed_copied += weight;
        } else {
            hl_line_memory *lm = hl_stats_line_memory(hl_engine_stats_locked(), line);
            if (lm != NULL) lm->copied += weight;
        }
    }
    hl_engine_unlock_from_hook();
}

/* ---- the part's lifecycle ---------------------------------------------------------------------- */

static void slots_patched(int written) {
    __atomic_add_fetch(&mem.totals.slots_patched, (uint64_t)written, __ATOMIC_RELAXED);
}

static const hl_memhooks_sink sink = {record_allocation, record_free, record_copy, slots_patched};

static int memory_start(const hl_config *config) {
    uint64_t sampling_window_bytes = config->memory_sampling_window_bytes;
    if (sampling_window_bytes == 0) return 0; /* memory profiling is off */
    if (hl_memhooks_resolve() != 0) return -ENOSYS;
    hl_engine_lock(); /* the tables were just reset by hl_engine_start (memory_reset) */
    mem.totals.enabled = 1;
    mem.totals.sampling_window_bytes = sampling_window_bytes;
    mem.start_ns = hl_now_ns();
    mem.totals.origin_ns = mem.start_ns;
    hl_engine_unlock();
    (void)hl_memhooks_install(sampling_window_bytes, &sink);
    /* In a fork child the parent's redirections are still in place: they count too. */
    mem.totals.slots_patched = (uint64_t)hl_got_redirected_slots();
    return 0;
}

static void memory_reset_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    hl_live_reset_locked();
    hl_timeline_free(&mem.totals.timeline);
    memset(&mem.totals, 0, sizeof(mem.totals));
    mem.totals.peak_line = HL_NO_LINE;
}

const hl_memory_totals *hl_memory_totals_get_locked(void) {
    HL_ASSERT_ENGINE_LOCKED();
    return &mem.totals;
}

const hl_engine_part hl_memory_part = {
    .start = memory_start,
    .stop = hl_memhooks_remove,
    .reset = memory_reset_locked,
    .after_fork_child = hl_memhooks_off,
    .release_after_fork = hl_memhooks_put_back,
    .enter = hl_memhooks_enter,
    .leave = hl_memhooks_leave,
};
