/* labels.h: regions and modules: each program thread's stack of open labels, the tree of label
 * paths, and the time the sampler charges to the innermost open label of each thread.
 *
 * A label is a named phase the program is in: a region (heatline.region, record_function,
 * an NVTX range) or a torch module's forward. The shell names each (kind, name) by a small id
 * of its own (heatline/engine/labels.py); here a label entered under another is a node of a
 * tree, interned by (parent node, name id), so that a node is a path ("step/forward") and the
 * same path entered on two threads is one node.
 *
 * Two sides, two owners:
 *  - The program's threads push and pop (hl_labels_push, hl_labels_pop), through the binding,
 *    with the GIL held. Each thread's stack is its own (a slot found once per thread and kept
 *    in a thread-local); the node table and the nodes' counts and wall times are guarded by a
 *    mutex of this room (uncontended under the GIL; it keeps free-threaded builds right).
 *  - The sampler thread reads each thread's innermost node without any lock of the program's
 *    (hl_labels_innermost: the stack's depth is published with release/acquire; a sample that
 *    races a push or pop is charged to the label just before or just after it) and charges
 *    the sample's time to it (hl_labels_charge*), under the engine lock, into tables only it
 *    writes, which the snapshot reads under that lock.
 *
 * Unbalanced use: a pop names the entry it closes (the token its push returned), so a pop of
 * an entry that is not the innermost closes that entry alone, where its exit ran, and the
 * entries above it stay open, under the closed entry's parent from then on: each one's wall
 * time so far stays with the path it had (as do the samples taken meanwhile), its count and
 * its time from then on go to its new path. A pop of an entry already closed, or of another
 * thread's, does nothing. Entries past HL_LABELS_MAX_DEPTH deep are not recorded (their push
 * returns 0, and popping 0 does nothing).
 *
 * A fork child keeps the forking thread's open entries as the paths of what it enters under
 * them, but not as its own: it counts no wall time or span for them, and a sample taken while
 * one of them is the innermost is charged to no label (the parent has that time).
 */
#ifndef HEATLINE_LABELS_H
#define HEATLINE_LABELS_H

#include <stddef.h>
#include <stdint.h>

#define HL_NO_LABEL UINT32_MAX
#define HL_LABELS_MAX_DEPTH 256

/* A node: a path of labels. Counts and wall times are of entries closed since the last
 * hl_labels_reset_counts. */
typedef struct hl_label_node {
    uint32_t parent; /* HL_NO_LABEL: entered with no label open */
    uint32_t name;   /* the shell's id of (kind, name), HL_LABEL_SLICED set if pushed so */
    uint64_t count;
    uint64_t wall_ns;
    uint64_t slices_dropped; /* its spans not kept (HL_LABELS_MAX_SLICES) */
} hl_label_node;

/* Set in a pushed name: this label's spans are kept (slices, below): regions' are, modules'
 * (many more, and short) are not. */
#define HL_LABEL_SLICED 0x80000000u

/* What the sampler charged to a node (innermost open), per category (stats.h), and the memory
 * sampled while it was the innermost: the allocations' weight, and the program's highest live
 * weight reached by one of them. */
typedef struct hl_label_charge {
    uint64_t ns[4];
    uint64_t alloc_bytes;
    int64_t peak_bytes;
} hl_label_charge;

/* Time charged to a node while its thread ran a line (the line's id in hl_stats.lines). */
typedef struct hl_label_line {
    uint32_t node;
    uint32_t line;
    uint64_t ns;
} hl_label_line;

/* A closed span of one path on one thread (a Chrome trace's slice): CLOCK_MONOTONIC ns. The
 * first HL_LABELS_MAX_SLICES of a session are kept, the rest counted. */
#define HL_LABELS_MAX_SLICES 100000
typedef struct hl_label_slice {
    uint32_t node;
    long tid;
    uint64_t start_ns, end_ns;
} hl_label_slice;

/* ---- the program's side (GIL held) ---- */

/* Enters label `name` (below HL_LABEL_SLICED, or'ed with it to keep its spans) on the calling
 * thread at now_ns: returns a token (> 0) for
 * hl_labels_pop, or 0 when nothing could be recorded (out of memory). */
uint64_t hl_labels_push(uint32_t name, uint64_t now_ns);
/* Closes the calling thread's entry `token` at now_ns, wherever it is on the stack. Returns 1
 * when it was open, 0 when it was not (already closed, another thread's, or token 0). */
int hl_labels_pop(uint64_t token, uint64_t now_ns);
/* The node of the calling thread's innermost open entry, or HL_NO_LABEL. */
uint32_t hl_labels_current(void);
/* Zeroes every node's count and wall (a session's start); open entries count from now_ns. */
void hl_labels_reset_counts(uint64_t now_ns);
/* The session ended at now_ns: entries closed later count no entry and their time only up to
 * then (as do the open entries' in hl_labels_nodes), until the next hl_labels_reset_counts. */
void hl_labels_end(uint64_t now_ns);

/* The node table, read with the GIL held (the snapshot): a copy, malloc'ed (free it), of
 * *n nodes, with each open entry's time so far (until now_ns) added to its node's wall, and
 * *open_count entries open. NULL when there are none or memory ran out. */
hl_label_node *hl_labels_nodes(uint64_t now_ns, size_t *n, size_t *open_count);

/* The session's slices: a malloc'ed copy (free it) of *n, *origin_ns the session's start
 * (hl_labels_reset_counts). NULL when there are none (or memory ran out). */
hl_label_slice *hl_labels_slices(size_t *n, uint64_t *origin_ns);

/* ---- the sampler's side (engine lock held) ---- */

/* The innermost node open on thread native_id, or HL_NO_LABEL. Lock-free. *slot_hint: where
 * the thread's stack was found last time (a per-thread cache of the caller's; start it at 0),
 * checked first and updated. */
uint32_t hl_labels_innermost(long native_id, uint32_t *slot_hint);
/* The calling thread's innermost node for an allocation it makes (an entry inherited at a
 * fork: none), or HL_NO_LABEL. Lock-free, any thread. */
uint32_t hl_labels_own_current(void);
/* Charges a sampled allocation of bytes, after which the program held live bytes, to node. */
void hl_labels_charge_alloc(uint32_t node, uint64_t bytes, int64_t live);
/* Charges ns of category to node (and to (node, line) when line is not UINT32_MAX). */
void hl_labels_charge(uint32_t node, int category, uint64_t ns, uint32_t line);
/* Moves up to ns of node's time from one category to another (a wait for a CPU found later:
 * sampler.c, settle_wait). */
void hl_labels_move(uint32_t node, int from, int to, uint64_t ns);
/* What was charged: charges indexed by node (*n of them), and the (node, line) table. */
const hl_label_charge *hl_labels_charges(size_t *n);
const hl_label_line *hl_labels_lines(size_t *n);
/* Forgets what was charged (a session's start, a reset). */
void hl_labels_clear_charges(void);

#endif
