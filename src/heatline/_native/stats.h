/* stats.h: the aggregation tables the sampler charges time to.
 *
 * Everything is keyed by small integer ids handed out here: files, functions (a file, a
 * qualified name and a first line), lines (a file and a line) and stacks (a thread and a list
 * of (function, line) frames). Tables grow with malloc; the stack table is bounded, and time
 * that does not fit is counted in stacks_dropped_ns instead of being lost silently.
 *
 * Concurrency: the sampler thread is the only writer. Readers (snapshot) and the writer
 * serialise on the engine lock in sampler.c; nothing here locks.
 */
#ifndef HEATLINE_STATS_H
#define HEATLINE_STATS_H

#include <stddef.h>
#include <stdint.h>

enum hl_category { HL_PYTHON = 0, HL_NATIVE = 1, HL_SYSTEM = 2, HL_NCATEGORIES = 3 };

/* Largest number of distinct stacks kept, and deepest stack kept (innermost frames win). */
#define HL_MAX_STACKS 20000
#define HL_MAX_DEPTH 128

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

/* A 64-bit FNV-1a hash, never 0, chained through seed. */
uint64_t hl_hash(const void *data, size_t len, uint64_t seed);

typedef struct hl_file {
    char *path; /* owned, NUL-terminated UTF-8 */
    int user;   /* 1 if the file is the user's code (see the scope rules in sampler.h) */
} hl_file;

typedef struct hl_function {
    uint32_t file;
    char *name;     /* owned */
    char *qualname; /* owned */
    int first_line;
} hl_function;

typedef struct hl_line_stat {
    uint32_t file;
    int line;
    uint32_t function;
    uint64_t ns[HL_NCATEGORIES];
} hl_line_stat;

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

    hl_stack_stat *stacks;
    size_t nstacks, stacks_capacity;
    hl_map stack_index;
    uint64_t *frame_pool;
    size_t pool_length, pool_capacity;
    uint64_t stacks_dropped_ns;
} hl_stats;

/* Interning: each returns the id (>= 0) or -1 when out of memory. */
int64_t hl_stats_file(hl_stats *s, const char *path, size_t len, int user);
int64_t hl_stats_function(hl_stats *s, uint32_t file, const char *name, const char *qualname,
                          int first_line);

/* Charging: each returns 0, or -1 when out of memory (the time is then not recorded). */
int hl_stats_charge_line(hl_stats *s, uint32_t file, int line, uint32_t function, int category,
                         uint64_t ns);
/* frames: outermost first, depth <= HL_MAX_DEPTH. When the stack table is full, the time is
 * added to stacks_dropped_ns and 0 is returned. */
int hl_stats_charge_stack(hl_stats *s, uint32_t thread, const uint64_t *frames, uint32_t depth,
                          int category, uint64_t ns);

/* Frees everything and leaves s empty and reusable. */
void hl_stats_clear(hl_stats *s);

#endif
