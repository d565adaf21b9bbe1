/* labels.c: see labels.h (the two sides and who owns what). */
#define _GNU_SOURCE
#include "labels.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "array.h"
#include "stats.h"

/* The most threads that hold a stack at once; a thread past it records no labels. A thread's
 * slot is freed at its exit (the key's destructor) and reused by a later thread. */
#define MAX_SLOTS 4096

typedef struct entry {
    uint32_t node;
    int inherited; /* open in the parent at a fork: a path for what the child enters, no time */
    uint64_t token;
    uint64_t entered_ns;
} entry;

typedef struct slot {
    _Atomic long tid; /* 0: free */
    _Atomic uint32_t depth;
    entry entries[HL_LABELS_MAX_DEPTH];
} slot;

static slot *slots[MAX_SLOTS];
static _Atomic size_t nslots;
static __thread slot *mine;

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static int key_ok;

/* Under mutex. */
static hl_label_node *nodes;
static size_t nnodes, nodes_capacity;
static hl_map node_index;
static uint64_t serial;
static hl_label_slice *slices;
static size_t nslices, slices_capacity;
static uint64_t origin;
static uint64_t until; /* the session's end (hl_labels_end); 0 while it runs */

/* The sampler's tables, under the engine lock. */
static hl_label_charge *charges;
static size_t ncharges, charges_capacity;
static hl_label_line *lines;
static size_t nlines, lines_capacity;
static hl_map line_index;

/* Under mutex. */
static void add_slice(uint32_t node, long tid, uint64_t start_ns, uint64_t end_ns) {
    if (!(nodes[node].name & HL_LABEL_SLICED)) return;
    if (nslices >= HL_LABELS_MAX_SLICES ||
        HL_ARRAY_RESERVE(slices, slices_capacity, nslices + 1, 1024) != 0) {
        nodes[node].slices_dropped++;
        return;
    }
    slices[nslices++] = (hl_label_slice){node, tid, start_ns, end_ns};
}

static long own_tid(void) {
    return (long)syscall(SYS_gettid);
}

static void thread_ended(void *value) {
    slot *s = value;
    atomic_store_explicit(&s->depth, 0, memory_order_release);
    atomic_store_explicit(&s->tid, 0, memory_order_release);
}

/* In a fork child only the forking thread goes on: the other threads' stacks are nobody's, and
 * this thread has a new kernel id. */
static void after_fork_child(void) {
    pthread_mutex_init(&mutex, NULL);
    size_t n = atomic_load_explicit(&nslots, memory_order_acquire);
    for (size_t i = 0; i < n; i++) {
        if (slots[i] == mine) continue;
        atomic_store_explicit(&slots[i]->depth, 0, memory_order_release);
        atomic_store_explicit(&slots[i]->tid, 0, memory_order_release);
    }
    if (mine == NULL) return;
    atomic_store_explicit(&mine->tid, own_tid(), memory_order_release);
    /* The parent's entries: their time is the parent's (the child neither counts their wall
     * nor charges samples to them), their paths still name what the child enters under them. */
    uint32_t depth = atomic_load_explicit(&mine->depth, memory_order_relaxed);
    for (uint32_t i = 0; i < depth; i++) mine->entries[i].inherited = 1;
}

static void init_once(void) {
    key_ok = pthread_key_create(&key, thread_ended) == 0;
    pthread_atfork(NULL, NULL, after_fork_child);
}

/* The calling thread's slot, found or made on first use; NULL when none is left. */
static slot *my_slot(void) {
    if (mine != NULL) return mine;
    pthread_once(&once, init_once);
    long tid = own_tid();
    slot *found = NULL;
    pthread_mutex_lock(&mutex);
    size_t n = atomic_load_explicit(&nslots, memory_order_acquire);
    for (size_t i = 0; i < n && found == NULL; i++)
        if (atomic_load_explicit(&slots[i]->tid, memory_order_acquire) == 0) found = slots[i];
    if (found == NULL && n < MAX_SLOTS) {
        found = calloc(1, sizeof(*found));
        if (found != NULL) {
            slots[n] = found;
            atomic_store_explicit(&nslots, n + 1, memory_order_release);
        }
    }
    if (found != NULL) {
        atomic_store_explicit(&found->depth, 0, memory_order_release);
        atomic_store_explicit(&found->tid, tid, memory_order_release);
    }
    pthread_mutex_unlock(&mutex);
    if (found != NULL && key_ok) pthread_setspecific(key, found);
    mine = found;
    return found;
}

/* Under mutex: the node (parent, name), made on first use; HL_NO_LABEL when out of memory. */
static uint32_t intern(uint32_t parent, uint32_t name) {
    uint64_t k = (((uint64_t)parent << 32) | name) + 1;
    uint32_t id;
    if (hl_map_get(&node_index, k, &id)) return id;
    if (nnodes >= UINT32_MAX - 1 || HL_ARRAY_RESERVE(nodes, nodes_capacity, nnodes + 1, 64) != 0)
        return HL_NO_LABEL;
    id = (uint32_t)nnodes;
    if (hl_map_put(&node_index, k, id) != 0) return HL_NO_LABEL;
    nodes[nnodes++] = (hl_label_node){parent, name, 0, 0, 0};
    return id;
}

uint64_t hl_labels_push(uint32_t name, uint64_t now_ns) {
    slot *s = my_slot();
    if (s == NULL) return 0;
    uint32_t depth = atomic_load_explicit(&s->depth, memory_order_relaxed);
    if (depth >= HL_LABELS_MAX_DEPTH) return 0;
    uint32_t parent = depth ? s->entries[depth - 1].node : HL_NO_LABEL;
    pthread_mutex_lock(&mutex);
    uint32_t node = intern(parent, name);
    uint64_t token = ++serial;
    pthread_mutex_unlock(&mutex);
    if (node == HL_NO_LABEL) return 0;
    s->entries[depth] = (entry){node, 0, token, now_ns};
    atomic_store_explicit(&s->depth, depth + 1, memory_order_release);
    return token;
}

int hl_labels_pop(uint64_t token, uint64_t now_ns) {
    slot *s = mine;
    if (s == NULL || token == 0) return 0;
    uint32_t depth = atomic_load_explicit(&s->depth, memory_order_relaxed);
    uint32_t i = depth;
    while (i > 0 && s->entries[i - 1].token != token) i--;
    if (i == 0) return 0;
    entry closed = s->entries[i - 1];
    pthread_mutex_lock(&mutex);
    /* after the session's end: its time up to the end, and not counted as closed in it */
    int ended = until != 0 && now_ns > until;
    uint64_t now = ended ? until : now_ns;
    long tid = atomic_load_explicit(&s->tid, memory_order_relaxed);
    if (closed.node < nnodes && !closed.inherited && now > closed.entered_ns) {
        if (!ended) nodes[closed.node].count++;
        nodes[closed.node].wall_ns += now - closed.entered_ns;
        add_slice(closed.node, tid, closed.entered_ns, now);
    }
    /* Not the innermost: the entries above it move down one, still open, and from now on are
     * under the closed entry's parent: each one's time so far stays with the path it had, and
     * its time from now goes to its new path (labels.h). */
    for (uint32_t j = i; j < depth; j++) {
        entry moved = s->entries[j];
        uint32_t parent = j >= 2 ? s->entries[j - 2].node : HL_NO_LABEL;
        uint32_t node = moved.node < nnodes ? intern(parent, nodes[moved.node].name) : HL_NO_LABEL;
        if (node != HL_NO_LABEL) {
            if (!moved.inherited && now > moved.entered_ns) {
                nodes[moved.node].wall_ns += now - moved.entered_ns;
                add_slice(moved.node, tid, moved.entered_ns, now);
            }
            moved.node = node;
            moved.entered_ns = now;
        }
        s->entries[j - 1] = moved;
    }
    pthread_mutex_unlock(&mutex);
    atomic_store_explicit(&s->depth, depth - 1, memory_order_release);
    return 1;
}

uint32_t hl_labels_current(void) {
    slot *s = mine;
    if (s == NULL) return HL_NO_LABEL;
    uint32_t depth = atomic_load_explicit(&s->depth, memory_order_relaxed);
    return depth ? s->entries[depth - 1].node : HL_NO_LABEL;
}

void hl_labels_reset_counts(uint64_t now_ns) {
    pthread_mutex_lock(&mutex);
    for (size_t i = 0; i < nnodes; i++)
        nodes[i].count = nodes[i].wall_ns = nodes[i].slices_dropped = 0;
    nslices = 0;
    origin = now_ns;
    until = 0;
    size_t n = atomic_load_explicit(&nslots, memory_order_acquire);
    for (size_t i = 0; i < n; i++) {
        uint32_t depth = atomic_load_explicit(&slots[i]->depth, memory_order_acquire);
        for (uint32_t j = 0; j < depth; j++) slots[i]->entries[j].entered_ns = now_ns;
    }
    pthread_mutex_unlock(&mutex);
}

void hl_labels_end(uint64_t now_ns) {
    pthread_mutex_lock(&mutex);
    until = now_ns > 0 ? now_ns : 1;
    pthread_mutex_unlock(&mutex);
}

hl_label_node *hl_labels_nodes(uint64_t now_ns, size_t *n, size_t *open_count) {
    *n = 0;
    *open_count = 0;
    pthread_mutex_lock(&mutex);
    if (until != 0 && now_ns > until) now_ns = until;
    hl_label_node *copy = nnodes ? malloc(nnodes * sizeof(*copy)) : NULL;
    if (copy != NULL) {
        memcpy(copy, nodes, nnodes * sizeof(*copy));
        *n = nnodes;
        size_t count = atomic_load_explicit(&nslots, memory_order_acquire);
        for (size_t i = 0; i < count; i++) {
            uint32_t depth = atomic_load_explicit(&slots[i]->depth, memory_order_acquire);
            for (uint32_t j = 0; j < depth; j++) {
                const entry *e = &slots[i]->entries[j];
                if (e->node >= nnodes || e->inherited) continue;
                copy[e->node].wall_ns += now_ns > e->entered_ns ? now_ns - e->entered_ns : 0;
                (*open_count)++;
            }
        }
    }
    pthread_mutex_unlock(&mutex);
    return copy;
}

hl_label_slice *hl_labels_slices(size_t *n, uint64_t *origin_ns) {
    pthread_mutex_lock(&mutex);
    hl_label_slice *copy = nslices ? malloc(nslices * sizeof(*copy)) : NULL;
    *n = copy != NULL ? nslices : 0;
    if (copy != NULL) memcpy(copy, slices, nslices * sizeof(*copy));
    *origin_ns = origin;
    pthread_mutex_unlock(&mutex);
    return copy;
}

/* ---- the sampler's side ---------------------------------------------------------------- */

static uint32_t innermost_of(slot *s) {
    uint32_t depth = atomic_load_explicit(&s->depth, memory_order_acquire);
    if (depth == 0 || depth > HL_LABELS_MAX_DEPTH) return HL_NO_LABEL;
    const entry *e = &s->entries[depth - 1];
    return e->inherited ? HL_NO_LABEL : e->node;
}

uint32_t hl_labels_own_current(void) {
    return mine == NULL ? HL_NO_LABEL : innermost_of(mine);
}

uint32_t hl_labels_innermost(long native_id, uint32_t *slot_hint) {
    size_t n = atomic_load_explicit(&nslots, memory_order_acquire);
    if (*slot_hint < n &&
        atomic_load_explicit(&slots[*slot_hint]->tid, memory_order_acquire) == native_id)
        return innermost_of(slots[*slot_hint]);
    for (size_t i = 0; i < n; i++) {
        if (atomic_load_explicit(&slots[i]->tid, memory_order_acquire) != native_id) continue;
        *slot_hint = (uint32_t)i;
        return innermost_of(slots[i]);
    }
    return HL_NO_LABEL;
}

static hl_label_charge *charge_of(uint32_t node) {
    if (node == HL_NO_LABEL) return NULL;
    if (node >= ncharges) {
        if (HL_ARRAY_RESERVE(charges, charges_capacity, (size_t)node + 1, 64) != 0) return NULL;
        memset(charges + ncharges, 0, ((size_t)node + 1 - ncharges) * sizeof(*charges));
        ncharges = (size_t)node + 1;
    }
    return &charges[node];
}

void hl_labels_charge(uint32_t node, int category, uint64_t ns, uint32_t line) {
    hl_label_charge *c = charge_of(node);
    if (c == NULL || category < 0 || category >= 4) return;
    c->ns[category] += ns;
    if (line == UINT32_MAX) return;
    uint64_t k = (((uint64_t)node << 32) | line) + 1;
    uint32_t index;
    if (!hl_map_get(&line_index, k, &index)) {
        if (HL_ARRAY_RESERVE(lines, lines_capacity, nlines + 1, 64) != 0) return;
        index = (uint32_t)nlines;
        if (hl_map_put(&line_index, k, index) != 0) return;
        lines[nlines++] = (hl_label_line){node, line, 0};
    }
    lines[index].ns += ns;
}

void hl_labels_charge_alloc(uint32_t node, uint64_t bytes, int64_t live) {
    hl_label_charge *c = charge_of(node);
    if (c == NULL) return;
    c->alloc_bytes += bytes;
    if (live > c->peak_bytes) c->peak_bytes = live;
}

void hl_labels_move(uint32_t node, int from, int to, uint64_t ns) {
    if (node == HL_NO_LABEL || node >= ncharges) return;
    hl_label_charge *c = &charges[node];
    uint64_t moved = c->ns[from] < ns ? c->ns[from] : ns;
    c->ns[from] -= moved;
    c->ns[to] += moved;
}

const hl_label_charge *hl_labels_charges(size_t *n) {
    *n = ncharges;
    return charges;
}

const hl_label_line *hl_labels_lines(size_t *n) {
    *n = nlines;
    return lines;
}

void hl_labels_clear_charges(void) {
    free(charges);
    charges = NULL;
    ncharges = charges_capacity = 0;
    free(lines);
    lines = NULL;
    nlines = lines_capacity = 0;
    hl_map_free(&line_index);
}
