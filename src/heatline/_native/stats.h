/* stats.h: the aggregation tables the sampler charges time to.
 *
 * Everything is keyed by small integer ids handed out here: files, functions (a file, a
 * qualified name and a first line), lines (a file and a line) and stacks (a thread and a list
 * of (function, line) frames). Tables grow with malloc; the stack table is bounded, and time
 * that does not fit is counted in stacks_dropped_ns instead of being lost silently.
 *
 * Concurrency: the sampler thread is the only writer. Readers (snapshot) and the writer
 * serialise on the engine lock (engine_part.h); nothing here locks.
 */
#ifndef HEATLINE_STATS_H
#define HEATLINE_STATS_H

#include <stddef.h>
#include <stdint.h>

/* HL_CPU_WAIT: runnable, waiting on a run queue for a CPU (sampler.c); not running. */
enum hl_category {
    HL_PYTHON = 0,
    HL_NATIVE = 1,
    HL_SYSTEM = 2,
    HL_CPU_WAIT = 3,
    HL_NCATEGORIES = 4
};

/* No line: a line id for an event made while no user frame was on the stack. */
#define HL_NO_LINE UINT32_MAX
/* No stack: the time went to no stack (stacks_dropped_ns). */
#define HL_NO_STACK UINT32_MAX

/* Largest number of distinct stacks kept, and the most frames a stack keeps. A deeper stack
 * keeps both ends (frames.h, hl_walk_sample): its outermost HL_OUTER_DEPTH frames, a marker
 * for the frames elided, and its innermost HL_MAX_DEPTH - 1 - HL_OUTER_DEPTH frames. */
#define HL_MAX_STACKS 20000
#define HL_MAX_DEPTH 128
#define HL_OUTER_DEPTH 63

/* The marker frame of a stack's elided middle: HL_FRAME_KEY(marker, frames elided). Function
 * ids count up from 0 and never reach these. HL_ELIDED_KEPT: every function of the elided
 * frames is also in the stack's kept frames (a deep recursion), so no function's inclusive
 * time misses this stack; HL_ELIDED_LOST: some may not be. HL_ELIDED_OPEN: the chain went on
 * past what the walker follows, so the stack has no outer part: the marker is its outermost
 * frame and counts the frames followed past the inner part (the stack is deeper). */
#define HL_ELIDED_KEPT UINT32_MAX
#define HL_ELIDED_LOST (UINT32_MAX - 1)
#define HL_ELIDED_OPEN (UINT32_MAX - 2)

/* Open-addressing map from a 64-bit key to a 32-bit value. Key 0 is reserved (empty). */
typedef struct hl_map {
    uint64_t *keys;
    uint32_t *values;
    size_t capacity; /* a power of two, or 0 */
    size_t count;
} hl_map;

/* Returns 1 and sets *value if key is present, else 0. */
int hl_map_get(const hl_map *map, uint64_t key, uint32_t *value);
/* Inserts or replaces. Returns 0, or -1 when out of memory (the map is unchanged). */
int hl_map_put(hl_map *map, uint64_t key, uint32_t value);
void hl_map_free(hl_map *map);

/* xorshift64*: a cheap generator, good enough to decorrelate the sampler's ticks and the
 * memory sampling points from the program. *state must not be 0. */
static inline uint64_t hl_next_random(uint64_t *state) {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 0x2545F4914F6CDD1DULL;
}

/* A 64-bit FNV-1a hash, never 0, chained through seed. */
uint64_t hl_hash(const void *data, size_t len, uint64_t seed);

typedef struct hl_file {
    char *path; /* owned, NUL-terminated UTF-8 */
    int user;   /* 1 if the file is the user's code (the scope rule: scope.h) */
} hl_file;

typedef struct hl_function {
    uint32_t file;
    char *name;     /* owned */
    char *qualname; /* owned */
    int first_line;
} hl_function;

/* A bounded record of a quantity over time (live bytes). Time is cut into `capacity` buckets
 * of equal width starting at the first event (so a line that starts allocating late in the run
 * still gets all its buckets over its own span: the leak rule's times are then exact to a
 * sixteenth of that span or better); when an event falls beyond the last bucket, neighbouring
 * buckets are merged pairwise and the width doubles, so the memory used (and the profile's
 * size) does not grow with the length of the run. Each bucket keeps its largest value (so
 * peaks survive merging) and its last value (what the quantity was when the bucket ended). */
typedef struct hl_timeline_bucket {
    uint64_t max_t_ns, last_t_ns;
    int64_t max, last;
    int used;
} hl_timeline_bucket;

typedef struct hl_timeline {
    hl_timeline_bucket *buckets; /* NULL until the first event */
    uint32_t capacity;
    uint64_t width_ns;
    uint64_t origin_ns; /* time of the first event: the start of bucket 0 */
} hl_timeline;

/* Records that the quantity became `value` at t_ns. Returns 0 or -1 (out of memory). */
int hl_timeline_add(hl_timeline *tl, uint32_t capacity, uint64_t t_ns, int64_t value);
void hl_timeline_free(hl_timeline *tl);

enum hl_alloc_kind { HL_ALLOC_PYTHON = 0, HL_ALLOC_NATIVE = 1, HL_NALLOC_KINDS = 2 };

/* Memory charged to a line: estimates in bytes (see memory.c for the sampling maths). */
typedef struct hl_line_memory {
    uint64_t alloc[HL_NALLOC_KINDS]; /* allocated on this line */
    uint64_t freed;                  /* allocated on this line and freed since (anywhere) */
    int64_t live, peak;              /* allocated here and not freed yet; its maximum */
    uint64_t copied;                 /* memcpy/memmove volume while on this line */
    uint64_t alloc_samples, freed_samples;
    hl_timeline timeline;            /* of `live` */
} hl_line_memory;

/* A line: (file, line). Its function is the one it was first charged to (memory and GPU
 * records name it); time is kept per (line, function) in cells, because two functions can
 * share a line (`return sum(i * i for i in x)`: the caller's and the generator's frames), and
 * each function's own time must be what ran in its own frames. */
typedef struct hl_line_stat {
    uint32_t file;
    int line;
    uint32_t function;
    hl_line_memory *memory; /* NULL until memory is charged to the line */
} hl_line_stat;

/* Time charged to a line while the innermost user frame ran `function`. */
typedef struct hl_line_cell {
    uint32_t line; /* id in hl_stats.lines */
    uint32_t function;
    uint64_t ns[HL_NCATEGORIES];
} hl_line_cell;

typedef struct hl_stack_stat {
    uint32_t thread;
    uint32_t depth;
    size_t frames_at; /* index of the outermost frame in hl_stats.frame_pool */
    uint64_t ns[HL_NCATEGORIES];
} hl_stack_stat;

/* A stack frame as stored in the pool: (function id << 32) | line. */
#define HL_FRAME_KEY(function, line) (((uint64_t)(function) << 32) | (uint32_t)(line))

typedef struct hl_stats {
    hl_file *files;
    size_t nfiles, files_capacity;
    hl_map file_index;

    hl_function *functions;
    size_t nfunctions, functions_capacity;
    hl_map function_index;

    hl_line_stat *lines;
    size_t nlines, lines_capacity;
    hl_map line_index;

    hl_line_cell *cells;
    size_t ncells, cells_capacity;
    hl_map cell_index;

    hl_stack_stat *stacks;
    size_t nstacks, stacks_capacity;
    hl_map stack_index;
    uint64_t *frame_pool;
    size_t pool_length, pool_capacity;
    uint64_t stacks_dropped_ns;
    uint64_t stacks_frameless_ns; /* of which: no frame to record (not a full table) */
} hl_stats;

/* Interning: each returns the id (>= 0) or -1 when out of memory. */
int64_t hl_stats_file(hl_stats *s, const char *path, size_t len, int user);
int64_t hl_stats_function(hl_stats *s, uint32_t file, const char *name, const char *qualname,
                          int first_line);

/* The id of the line (file, line), created on first use with `function`. Returns the id or
 * -1 when out of memory. */
int64_t hl_stats_line(hl_stats *s, uint32_t file, int line, uint32_t function);
/* The line's memory record, allocated on first use. NULL when out of memory. */
hl_line_memory *hl_stats_line_memory(hl_stats *s, uint32_t line_id);

/* Charging: each returns 0, or -1 when out of memory (the time is then not recorded).
 * hl_stats_charge_line charges the cell (line, function), creating both on first use. */
int hl_stats_charge_line(hl_stats *s, uint32_t file, int line, uint32_t function, int category,
                         uint64_t ns);
/* The id of the cell (line, function), or -1 when it was never charged. */
int64_t hl_stats_cell(const hl_stats *s, uint32_t file, int line, uint32_t function);
/* Move up to ns of a cell's (a stack's) time from category `from` to category `to`, no more
 * than it has; each returns the ns moved. */
uint64_t hl_stats_move_cell(hl_stats *s, uint32_t cell, int from, int to, uint64_t ns);
uint64_t hl_stats_move_stack(hl_stats *s, uint32_t stack, int from, int to, uint64_t ns);
/* frames: outermost first, depth <= HL_MAX_DEPTH, with a marker frame where frames were
 * elided. When the stack table is full, the time is added to stacks_dropped_ns and 0 is
 * returned. *stack_id gets the stack's id (HL_NO_STACK when the time went to none). */
int hl_stats_charge_stack(hl_stats *s, uint32_t thread, const uint64_t *frames, uint32_t depth,
                          int category, uint64_t ns, uint32_t *stack_id);

/* Frees everything and leaves s empty and reusable. */
void hl_stats_clear(hl_stats *s);

#endif
