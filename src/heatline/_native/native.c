/* native.c: see native.h.
 *
 * The events. One software CPU-clock event per profiled thread (pid = its kernel id, any CPU,
 * user space only: exclude_kernel and exclude_hv are what kernel.perf_event_paranoid = 2, the
 * usual default, allows on one's own threads), sampling the instruction pointer every
 * `period` of the thread's CPU time into a small ring buffer the kernel writes and this file
 * reads at each tick. Nothing reaches the thread: the kernel takes the sample in its timer
 * interrupt, no signal is sent (no fasync, no poll), and the descriptor lives in the sampler
 * thread's own descriptor table (sampler.c, own_descriptor_table), where the program can
 * neither see nor close it. Without such a table no event is opened at all.
 *
 * The ring is mapped shared, which the kernel marks as not copied by fork(): a child has
 * neither the ring nor (not being the sampler thread) its descriptor, so a child forgets both
 * (hl_native_thread_forget) and opens its own.
 *
 * Addresses. A sample's address is kept as (mapping, offset into its file), placed in
 * /proc/self/maps when first seen: a library that is dlclose()d later keeps its file and so
 * its names. The mappings are read again when an address falls in none of them (a library
 * loaded since) and once a second anyway, so that a range reused by another library after a
 * dlclose() is not named after the first one for longer than that; an address seen before a
 * re-read that changed the mappings is placed again when next seen.
 *
 * Other threads. A thread with no Python thread state runs no line, so the sampler does not
 * see it; its native time would be missing from the profile. The sampler thread finds them in
 * /proc/self/task (listed in its own descriptor table, like everything it opens, and only when
 * the threads changed: hl_native_others_tick), reads at each tick each such thread's CPU clock
 * (derived from its kernel id, as the sampler does for Python threads: the kernel allows it for
 * any thread of the process) and charges the CPU time since the
 * previous tick to that thread, split among its event's samples as a Python thread's native
 * time is. Only CPU time counts: a pool waiting for work is blocked, not busy, and its wait is
 * no one's time. A thread's time before its first tick (it was created since) is not known:
 * its clock is first read then. Nothing reaches those threads either: the listing, the clock
 * and the event are all read from outside them.
 */
#define _GNU_SOURCE
#include "native.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "clock.h"
#include "elf.h"
#include "stats.h"

#define DATA_PAGES 2 /* a power of two: 512 samples of 16 bytes (1.3 s of CPU at 2.5 ms) */
#define SAMPLES_PER_INTERVAL 4 /* the event's period: the sampler's interval over this */
#define MIN_PERIOD_NS 100000u   /* 10 kHz at most */
#define MAX_SAMPLES_PER_TICK 1024
#define MAPS_REREAD_NS 1000000000u
#define MAPS_MISS_REREAD_NS 10000000u /* a miss reads the mappings again at most this often */
#define UNKNOWN "[unknown]"

typedef struct library {
    char *path;
    unsigned long inode;
    char build_id[2 * HL_ELF_BUILD_ID_MAX + 1]; /* in hex, once its file was read ("": none) */
} library;

typedef struct mapping {
    uint64_t start, end, offset;
    uint32_t library; /* UINT32_MAX: anonymous */
} mapping;

typedef struct address {
    uint64_t ip;      /* the instruction address sampled */
    uint32_t mapping; /* UINT32_MAX: in no mapping */
    uint64_t offset;  /* into the mapping's file (or the address itself) */
    char *symbol;     /* owned; NULL: no name known */
    int named;        /* a name was looked for */
} address;

/* A thread without a Python thread state: its event and clock (its results: hl_native_other). */
typedef struct other_thread {
    hl_native_thread event;
    uint64_t last_cpu_ns;
    uint64_t scan; /* the latest scan that listed it */
    int alive;
} other_thread;

/* Time by (line or stack id, address id). */
typedef struct charges {
    hl_native_charge *items;
    size_t count, capacity;
    hl_map index; /* (id, address) -> item */
} charges;

static struct {
    int enabled;
    uint64_t period_ns;
    int private_table;
    int error, reason;
    uint64_t threads_without, unsampled_ns;

    library *libraries;
    size_t nlibraries, libraries_capacity;
    mapping *mappings;
    size_t nmappings, mappings_capacity;
    uint32_t *active; /* ids of the mappings now present, sorted by start */
    size_t nactive, active_capacity;
    uint64_t maps_read_ns;

    address *addresses;
    size_t naddresses, addresses_capacity;
    size_t unplaced; /* addresses in no mapping when seen: placed again at each read */
    hl_map address_index; /* instruction address -> address id */

    charges lines;  /* (line, address) */
    charges stacks; /* (stack, address) */

    hl_native_other *others; /* threads without a thread state, in the order first seen */
    other_thread *other_state; /* the same, the sampler's side */
    size_t nothers, others_capacity, other_state_capacity;
    hl_map other_index; /* tid -> index in others (the latest thread of that id) */
    uint64_t scans;
    /* /proc/self/task's link count at the last listing (2 + the process's threads), and the
     * ticks since: hl_native_others_tick lists the threads again only when they changed. */
    uint64_t listed_links;
    unsigned ticks_since_listing;
    int other_gone; /* a known thread's clock could not be read: it ended */
    /* /proc/self/task, open in the sampler thread's own table for the link count (an fstat
     * where a stat of the path walks it: a tenth of the tick), and the sampler thread that
     * opened it (0: none): a number in another thread's table is not this one's to use. */
    int task_fd;
    long task_fd_tid;
    charges other_charges; /* (index in others, address) */
} N;

/* heatline's own threads (any thread writes, the sampler reads): atomics, no lock. */
static long own_threads[HL_NATIVE_OWN_THREADS];

void hl_native_configure(int enabled, uint64_t sampling_interval_ns) {
    N.enabled = enabled;
    uint64_t period = sampling_interval_ns / SAMPLES_PER_INTERVAL;
    N.period_ns = period < MIN_PERIOD_NS ? MIN_PERIOD_NS : period;
}

void hl_native_set_private_table(int own) {
    N.private_table = own;
}

void hl_native_thread_init(hl_native_thread *t) {
    memset(t, 0, sizeof(*t));
    t->fd = -1;
    t->last_line = HL_NO_LINE;
}

/* ---- the events ------------------------------------------------------------------------------ */

static size_t page_size(void) {
    static size_t size;
    if (size == 0) size = (size_t)sysconf(_SC_PAGESIZE);
    return size;
}

static size_t ring_bytes(void) {
    return (1 + DATA_PAGES) * page_size();
}

static void refuse(int error, int reason) {
    if (N.error == 0) N.error = error;
    if (N.reason == HL_NATIVE_OK) N.reason = reason;
    N.threads_without++;
}

static void open_event(hl_native_thread *t, long tid) {
    t->opened = 1;
    if (!N.private_table) {
        refuse(0, HL_NATIVE_SHARED_TABLE);
        return;
    }
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_CPU_CLOCK;
    attr.sample_period = N.period_ns;
    attr.sample_type = PERF_SAMPLE_IP;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &attr, (pid_t)tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        refuse(errno, HL_NATIVE_REFUSED);
        return;
    }
    void *ring = mmap(NULL, ring_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ring == MAP_FAILED) {
        refuse(errno, HL_NATIVE_REFUSED);
        close(fd);
        return;
    }
    t->fd = fd;
    t->ring = ring;
}

void hl_native_thread_close(hl_native_thread *t) {
    if (t->ring != NULL) munmap(t->ring, ring_bytes());
    if (t->fd >= 0) close(t->fd);
    hl_native_thread_init(t);
}

void hl_native_thread_forget(hl_native_thread *t) {
    hl_native_thread_init(t);
}

/* ---- the mappings ---------------------------------------------------------------------------- */

static int64_t library_id(const char *path, unsigned long inode) {
    for (size_t i = 0; i < N.nlibraries; i++)
        if (N.libraries[i].inode == inode && strcmp(N.libraries[i].path, path) == 0)
            return (int64_t)i;
    if (HL_ARRAY_RESERVE(N.libraries, N.libraries_capacity, N.nlibraries + 1, 16) != 0) return -1;
    char *copy = strdup(path);
    if (copy == NULL) return -1;
    library *l = &N.libraries[N.nlibraries];
    memset(l, 0, sizeof(*l));
    l->path = copy;
    l->inode = inode;
    return (int64_t)N.nlibraries++;
}

/* The id of the mapping (start, end, offset, library): the active one that matches (the active
 * list is sorted by start), else a new one. *reused is set when an active one matched. */
static int64_t mapping_id(uint64_t start, uint64_t end, uint64_t offset, uint32_t lib,
                          int *reused) {
    size_t low = 0, high = N.nactive;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (N.mappings[N.active[middle]].start < start) low = middle + 1;
        else high = middle;
    }
    *reused = 0;
    if (low < N.nactive) {
        const mapping *m = &N.mappings[N.active[low]];
        if (m->start == start && m->end == end && m->offset == offset && m->library == lib) {
            *reused = 1;
            return N.active[low];
        }
    }
    if (HL_ARRAY_RESERVE(N.mappings, N.mappings_capacity, N.nmappings + 1, 64) != 0) return -1;
    N.mappings[N.nmappings] = (mapping){start, end, offset, lib};
    return (int64_t)N.nmappings++;
}

static char *read_whole(const char *path, size_t *length) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    size_t capacity = 1 << 16, used = 0;
    char *buffer = malloc(capacity);
    while (buffer != NULL) {
        if (used + 1 >= capacity) {
            char *grown = realloc(buffer, capacity * 2);
            if (grown == NULL) {
                free(buffer);
                buffer = NULL;
                break;
            }
            buffer = grown;
            capacity *= 2;
        }
        ssize_t got = read(fd, buffer + used, capacity - used - 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        used += (size_t)got;
    }
    close(fd);
    if (buffer != NULL) buffer[used] = '\0';
    *length = used;
    return buffer;
}

static void place_unplaced(void);

/* Reads /proc/self/maps: its executable mappings become the active ones. */
/* One line of /proc/self/maps, "START-END PERMS OFFSET DEV INODE   PATH", when its mapping is
 * executable: 1 with the fields set (*path: "" when it has none), else 0. Parsed by hand:
 * sscanf takes 4,000 instructions a line, a third of a tick's cost on the ticks that read the
 * mappings again. */
static int executable_mapping(char *line, unsigned long long *start, unsigned long long *end,
                              unsigned long long *offset, unsigned long *inode, const char **path) {
    char *at;
    *start = strtoull(line, &at, 16);
    if (at == line || *at != '-') return 0;
    line = at + 1;
    *end = strtoull(line, &at, 16);
    if (at == line || *at != ' ') return 0;
    const char *perms = at + 1; /* "r-xp" */
    if (strlen(perms) < 5 || perms[4] != ' ' || memchr(perms, 'x', 4) == NULL) return 0;
    line = (char *)perms + 5;
    *offset = strtoull(line, &at, 16);
    if (at == line || *at != ' ') return 0;
    char *device_end = strchr(at + 1, ' '); /* "fd:01" */
    if (device_end == NULL) return 0;
    line = device_end + 1;
    *inode = strtoul(line, &at, 10);
    if (at == line) return 0;
    while (*at == ' ') at++;
    *path = at;
    return 1;
}

static void read_maps(void) {
    N.maps_read_ns = hl_now_ns();
    size_t length;
    char *text = read_whole("/proc/self/maps", &length);
    if (text == NULL) return;
    uint32_t *active = NULL;
    size_t nactive = 0, capacity = 0, reused_count = 0;
    int failed = 0;
    for (char *line = text, *next; line != NULL && *line != '\0' && !failed; line = next) {
        next = strchr(line, '\n');
        if (next != NULL) *next++ = '\0';
        unsigned long long start, end, offset;
        unsigned long inode;
        const char *path;
        int reused = 0;
        if (!executable_mapping(line, &start, &end, &offset, &inode, &path)) continue;
        int64_t lib = *path != '\0' ? library_id(path, inode) : (int64_t)UINT32_MAX;
        int64_t id = lib < 0 ? -1 : mapping_id(start, end, offset, (uint32_t)lib, &reused);
        failed = id < 0 || HL_ARRAY_RESERVE(active, capacity, nactive + 1, 64) != 0;
        if (!failed) active[nactive++] = (uint32_t)id;
        reused_count += (size_t)reused;
    }
    free(text);
    if (failed) {
        free(active);
        return;
    }
    /* /proc lists the mappings by address, so the list is sorted. A mapping that is gone may
     * have left its range to another library: the addresses are placed again when seen. */
    if (reused_count < N.nactive) hl_map_free(&N.address_index);
    free(N.active);
    N.active = active;
    N.nactive = nactive;
    N.active_capacity = capacity;
    if (N.unplaced > 0) place_unplaced();
}

static const mapping *mapping_of(uint64_t ip, uint32_t *id);

/* An address seen before the mappings were read again (a library loaded since the last read,
 * when the miss came too soon after it for another read) is placed now. */
static void place_unplaced(void) {
    for (size_t i = 0; i < N.naddresses && N.unplaced > 0; i++) {
        address *a = &N.addresses[i];
        uint32_t id;
        const mapping *m;
        if (a->mapping != UINT32_MAX || (m = mapping_of(a->offset, &id)) == NULL) continue;
        a->offset = a->offset - m->start + m->offset;
        a->mapping = id;
        N.unplaced--;
    }
}

static const mapping *mapping_of(uint64_t ip, uint32_t *id) {
    size_t low = 0, high = N.nactive;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (N.mappings[N.active[middle]].start <= ip) low = middle + 1;
        else high = middle;
    }
    if (low == 0) return NULL;
    const mapping *m = &N.mappings[N.active[low - 1]];
    if (ip >= m->end) return NULL;
    *id = N.active[low - 1];
    return m;
}

/* The address id of instruction address ip, placed on first sight. Returns 0 or -1. */
static int address_of(uint64_t ip, uint32_t *id) {
    if (hl_map_get(&N.address_index, ip, id)) return 0;
    uint32_t mapping_index = UINT32_MAX;
    const mapping *m = mapping_of(ip, &mapping_index);
    if (m == NULL && hl_now_ns() - N.maps_read_ns > MAPS_MISS_REREAD_NS) {
        read_maps();
        m = mapping_of(ip, &mapping_index);
    }
    if (HL_ARRAY_RESERVE(N.addresses, N.addresses_capacity, N.naddresses + 1, 256) != 0) return -1;
    address *a = &N.addresses[N.naddresses];
    a->ip = ip;
    a->mapping = m != NULL ? mapping_index : UINT32_MAX;
    a->offset = m != NULL ? ip - m->start + m->offset : ip;
    a->symbol = NULL;
    a->named = 0;
    if (m == NULL) N.unplaced++;
    if (hl_map_put(&N.address_index, ip, (uint32_t)N.naddresses) != 0) return -1;
    *id = (uint32_t)N.naddresses++;
    return 0;
}

/* ---- reading the samples --------------------------------------------------------------------- */

static uint64_t ring_u64(const uint8_t *data, uint64_t mask, uint64_t at) {
    uint64_t value;
    memcpy(&value, data + (at & mask), sizeof(value)); /* records are 8-byte aligned */
    return value;
}

/* Reads the samples since the previous call into ids (address ids). Returns how many. */
static size_t drain(hl_native_thread *t, uint32_t *ids, size_t capacity) {
    struct perf_event_mmap_page *page = t->ring;
    const uint8_t *data = (const uint8_t *)t->ring + page_size();
    uint64_t mask = DATA_PAGES * page_size() - 1;
    uint64_t head = __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = page->data_tail;
    size_t n = 0;
    while (tail < head) {
        uint64_t word = ring_u64(data, mask, tail);
        struct perf_event_header header;
        memcpy(&header, &word, sizeof(header));
        if (header.size < sizeof(header) || header.size % 8 != 0 || header.size > head - tail)
            break; /* not a record: skip what is there */
        if (header.type == PERF_RECORD_SAMPLE && header.size >= 16 && n < capacity) {
            uint64_t ip = ring_u64(data, mask, tail + 8);
            if (ip != 0 && address_of(ip, &ids[n]) == 0) n++;
        }
        tail += header.size;
    }
    __atomic_store_n(&page->data_tail, head, __ATOMIC_RELEASE);
    return n;
}

static void charge(charges *table, uint32_t owner, uint32_t address_id, uint64_t ns) {
    uint64_t key = (((uint64_t)owner << 32) | address_id) + 1;
    uint32_t id;
    if (hl_map_get(&table->index, key, &id)) {
        table->items[id].ns += ns;
        return;
    }
    if (HL_ARRAY_RESERVE(table->items, table->capacity, table->count + 1, 256) != 0) return;
    if (hl_map_put(&table->index, key, (uint32_t)table->count) != 0) return;
    table->items[table->count++] = (hl_native_charge){owner, address_id, ns};
}

static void charges_free(charges *table) {
    free(table->items);
    hl_map_free(&table->index);
    memset(table, 0, sizeof(*table));
}

/* The samples the thread's event took since the previous call, as address ids into ids (at
 * least MAX_SAMPLES_PER_TICK), the event opened on first use. Returns how many (0 without an
 * event). */
static size_t take_samples(hl_native_thread *t, long tid, uint32_t *ids) {
    if (!t->opened) open_event(t, tid);
    if (t->ring == NULL) return 0;
    /* Read the mappings again once a second (every 10 ms while none could be read). */
    if (hl_now_ns() - N.maps_read_ns > (N.nactive ? MAPS_REREAD_NS : MAPS_MISS_REREAD_NS))
        read_maps();
    return drain(t, ids, MAX_SAMPLES_PER_TICK);
}

void hl_native_thread_tick(hl_native_thread *t, long tid, uint32_t line_id, uint32_t stack_id,
                           uint64_t ns) {
    if (!N.enabled) return;
    uint32_t ids[MAX_SAMPLES_PER_TICK];
    size_t n = take_samples(t, tid, ids);
    if (t->ring == NULL) return;
    int had_last = t->has_last && t->last_line == line_id;
    t->last_line = line_id;
    if (n > 0) {
        t->last_address = ids[n - 1];
        t->has_last = 1;
    } else {
        t->has_last = 0;
    }
    if ((line_id == HL_NO_LINE && stack_id == HL_NO_STACK) || ns == 0) return;
    if (n == 0) {
        /* Less than a period of CPU time since the previous tick: the thread is where its
         * previous tick's last sample saw it, if that tick had one and charged this line. */
        if (!had_last) {
            N.unsampled_ns += ns;
            return;
        }
        ids[0] = t->last_address;
        n = 1;
    }
    uint64_t share = ns / n, extra = ns % n;
    for (size_t i = 0; i < n; i++) {
        uint64_t part = share + (i < extra ? 1 : 0);
        if (line_id != HL_NO_LINE) charge(&N.lines, line_id, ids[i], part);
        if (stack_id != HL_NO_STACK) charge(&N.stacks, stack_id, ids[i], part);
    }
}

/* ---- threads without a Python thread state --------------------------------------------------- */

void hl_native_own_thread(long tid, int own) {
    for (size_t i = 0; i < HL_NATIVE_OWN_THREADS; i++) {
        long expected = own ? 0 : tid;
        if (__atomic_compare_exchange_n(&own_threads[i], &expected, own ? tid : 0, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return;
    }
}

static int is_own(long tid, long sampler) {
    if (tid == sampler) return 1;
    for (size_t i = 0; i < HL_NATIVE_OWN_THREADS; i++)
        if (__atomic_load_n(&own_threads[i], __ATOMIC_ACQUIRE) == tid) return 1;
    return 0;
}

static int cpu_clock_ns(long tid, uint64_t *ns) {
    /* Linux's per-thread CPU clock id, from the kernel id (as sampler.c and glibc derive it) */
    clockid_t clock = (clockid_t)((~(unsigned)tid << 3) | 6u);
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0) return -1;
    *ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return 0;
}

void hl_thread_comm(long tid, char *comm, size_t size) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%ld/comm", tid);
    comm[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t got = read(fd, comm, size - 1);
    close(fd);
    if (got <= 0) got = 0;
    comm[got] = '\0';
    char *newline = strchr(comm, '\n');
    if (newline != NULL) *newline = '\0';
}

/* The index of thread tid's entry, made on first sight (its clock read as the start).
 * SIZE_MAX: no memory, or the thread is gone already. */
static size_t other_of(long tid) {
    uint32_t index;
    if (hl_map_get(&N.other_index, (uint64_t)tid, &index) && N.other_state[index].alive)
        return index;
    uint64_t cpu;
    if (cpu_clock_ns(tid, &cpu) != 0) return SIZE_MAX;
    if (HL_ARRAY_RESERVE(N.others, N.others_capacity, N.nothers + 1, 16) != 0 ||
        HL_ARRAY_RESERVE(N.other_state, N.other_state_capacity, N.nothers + 1, 16) != 0 ||
        hl_map_put(&N.other_index, (uint64_t)tid, (uint32_t)N.nothers) != 0)
        return SIZE_MAX;
    hl_native_other *o = &N.others[N.nothers];
    memset(o, 0, sizeof(*o));
    o->tid = tid;
    hl_thread_comm(tid, o->comm, sizeof(o->comm));
    other_thread *state = &N.other_state[N.nothers];
    hl_native_thread_init(&state->event);
    state->last_cpu_ns = cpu;
    state->alive = 1;
    return N.nothers++;
}

static void other_tick(size_t index) {
    hl_native_other *o = &N.others[index];
    other_thread *state = &N.other_state[index];
    state->scan = N.scans;
    uint64_t cpu;
    if (cpu_clock_ns(o->tid, &cpu) != 0) { /* gone: closed after the scan */
        N.other_gone = 1;
        return;
    }
    uint64_t ns = cpu > state->last_cpu_ns ? cpu - state->last_cpu_ns : 0;
    state->last_cpu_ns = cpu;
    hl_native_thread *t = &state->event;
    uint32_t ids[MAX_SAMPLES_PER_TICK];
    size_t n = take_samples(t, o->tid, ids);
    int had_last = t->has_last;
    if (n > 0) {
        t->last_address = ids[n - 1];
        t->has_last = 1;
    } else if (ns > 0) {
        t->has_last = 0;
    }
    if (ns == 0) return;
    o->cpu_ns += ns;
    if (n == 0) { /* under a period of CPU since the previous tick: see hl_native_thread_tick */
        if (!had_last) {
            o->unnamed_ns += ns;
            return;
        }
        ids[0] = t->last_address;
        n = 1;
    }
    uint64_t share = ns / n, extra = ns % n;
    for (size_t i = 0; i < n; i++)
        charge(&N.other_charges, (uint32_t)index, ids[i], share + (i < extra ? 1 : 0));
}

/* The threads are listed again (an open, a stat, two getdents and a close: five system calls of
 * the tick's twenty-odd) only when /proc/self/task's link count, 2 + the process's threads, is
 * not the one of the last listing (one fstat of the directory, kept open), when a known thread
 * ended (another may have started in the same tick, leaving the count as it was), and every
 * RELIST_TICKS ticks anyway (a C thread that took a thread state is the sampler's from then on;
 * two threads ended and two started). Between listings the known threads are ticked as a
 * listing would tick them. */
#define RELIST_TICKS 10

/* /proc/self/task's link count now (0: unknown), read by the sampler thread. */
static uint64_t task_links(long sampler) {
    if (N.task_fd_tid != sampler) {
        N.task_fd_tid = 0;
        int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) return 0;
        N.task_fd = fd;
        N.task_fd_tid = sampler;
    }
    struct stat task;
    return fstat(N.task_fd, &task) == 0 ? (uint64_t)task.st_nlink : 0;
}

void hl_native_others_tick(long sampler, int (*is_python)(void *context, long tid), void *context) {
    /* without a table of its own, the listing would be a descriptor in the program's */
    if (!N.enabled || !N.private_table) return;
    uint64_t links = task_links(sampler);
    if (links != 0 && links == N.listed_links && !N.other_gone &&
        ++N.ticks_since_listing < RELIST_TICKS) {
        N.scans++;
        for (size_t i = 0; i < N.nothers; i++) {
            long tid = N.others[i].tid;
            if (N.other_state[i].alive && !is_python(context, tid) && !is_own(tid, sampler))
                other_tick(i);
        }
    } else {
        DIR *dir = opendir("/proc/self/task");
        if (dir == NULL) return;
        N.scans++;
        N.listed_links = links;
        N.ticks_since_listing = 0;
        N.other_gone = 0;
        for (struct dirent *entry; (entry = readdir(dir)) != NULL;) {
            char *end;
            long tid = strtol(entry->d_name, &end, 10);
            if (end == entry->d_name || *end != '\0' || tid <= 0) continue;
            if (is_python(context, tid) || is_own(tid, sampler)) continue;
            size_t index = other_of(tid);
            if (index != SIZE_MAX) other_tick(index); /* a new one: its event opened */
        }
        closedir(dir);
    }
    /* Threads no longer listed (ended, or now running Python: a C thread that took a thread
     * state is the sampler's from then on) */
    for (size_t i = 0; i < N.nothers; i++) {
        other_thread *state = &N.other_state[i];
        if (state->alive && state->scan != N.scans) {
            hl_native_thread_close(&state->event);
            state->alive = 0;
        }
    }
}

void hl_native_others_rebase(void) {
    uint32_t ids[MAX_SAMPLES_PER_TICK];
    for (size_t i = 0; i < N.nothers; i++) {
        other_thread *state = &N.other_state[i];
        if (!state->alive || cpu_clock_ns(N.others[i].tid, &state->last_cpu_ns) != 0) continue;
        if (state->event.ring != NULL) (void)drain(&state->event, ids, MAX_SAMPLES_PER_TICK);
        state->event.has_last = 0;
    }
}

void hl_native_others_close(void) {
    for (size_t i = 0; i < N.nothers; i++) hl_native_thread_close(&N.other_state[i].event);
    if (N.task_fd_tid != 0 && N.task_fd_tid == (long)gettid()) close(N.task_fd);
    N.task_fd_tid = 0;
}

/* ---- results --------------------------------------------------------------------------------- */

void hl_native_reset(void) {
    for (size_t i = 0; i < N.naddresses; i++) free(N.addresses[i].symbol);
    for (size_t i = 0; i < N.nlibraries; i++) free(N.libraries[i].path);
    free(N.libraries);
    free(N.mappings);
    free(N.active);
    free(N.addresses);
    charges_free(&N.lines);
    charges_free(&N.stacks);
    charges_free(&N.other_charges);
    hl_map_free(&N.address_index);
    /* The events were closed as the sampler ended (or, in a fork child, are not ours). */
    free(N.others);
    free(N.other_state);
    hl_map_free(&N.other_index);
    int enabled = N.enabled, private_table = N.private_table;
    uint64_t period = N.period_ns;
    memset(&N, 0, sizeof(N));
    N.enabled = enabled;
    N.private_table = private_table;
    N.period_ns = period;
}

void hl_native_results_get(hl_native_results *out) {
    out->enabled = N.enabled;
    out->error = N.error;
    out->reason = N.reason;
    out->threads_without = N.threads_without;
    out->unsampled_ns = N.unsampled_ns;
    out->charges = N.lines.items;
    out->ncharges = N.lines.count;
    out->stack_charges = N.stacks.items;
    out->nstack_charges = N.stacks.count;
    out->others = N.others;
    out->nothers = N.nothers;
    out->other_charges = N.other_charges.items;
    out->nother_charges = N.other_charges.count;
    out->naddresses = N.naddresses;
}

typedef char *(*demangler)(const char *, char *, size_t *, int *);

/* The C++ ABI's demangler, from libstdc++ when the process has it loaded: in the global scope
 * (a C++ main program), or loaded privately (RTLD_LOCAL) as a dependency of an extension
 * module, as numpy's is, which RTLD_DEFAULT does not search. Nothing is loaded for it: a
 * process without libstdc++ keeps the mangled names. The NOLOAD reference is kept, so the
 * function stays mapped while it is held. Looked up again only once the mappings changed. */
static demangler find_demangler(void) {
    static demangler found;
    static size_t looked_at = SIZE_MAX; /* N.nmappings at the last look */
    if (found != NULL || looked_at == N.nmappings) return found;
    looked_at = N.nmappings;
    void *f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (f == NULL) {
        void *lib = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);
        if (lib != NULL) f = dlsym(lib, "__cxa_demangle");
        if (lib != NULL && f == NULL) dlclose(lib);
    }
    *(void **)&found = f;
    return found;
}

/* A name as people read it: C++ names demangled where the process has a demangler, else as
 * they are. Takes name (a new string) and gives a new string. Called once per address when it
 * is named for the snapshot, never per sample. */
static char *readable(char *name) {
    if (strncmp(name, "_Z", 2) == 0) {
        demangler demangle = find_demangler();
        int status = -1;
        char *plain = demangle != NULL ? demangle(name, NULL, NULL, &status) : NULL;
        if (plain != NULL && status == 0) {
            free(name);
            return plain;
        }
        free(plain);
    }
    return name;
}

static library *library_of(const address *a) {
    if (a->mapping == UINT32_MAX || N.mappings[a->mapping].library == UINT32_MAX) return NULL;
    return &N.libraries[N.mappings[a->mapping].library];
}

/* Names every address of l not named yet, in one reading of its file (hl_elf_name_offsets):
 * a library's addresses are asked for one by one, and reading its tables once per address
 * would read libtorch's tens of MB hundreds of times. */
static void name_addresses_of(library *l) {
    size_t count = 0;
    for (size_t i = 0; i < N.naddresses; i++)
        count += !N.addresses[i].named && library_of(&N.addresses[i]) == l;
    uint64_t *offsets = calloc(count ? count : 1, sizeof(*offsets));
    size_t *which = malloc((count ? count : 1) * sizeof(*which));
    char **names = calloc(count ? count : 1, sizeof(*names));
    if (offsets != NULL && which != NULL && names != NULL) {
        size_t k = 0;
        for (size_t i = 0; i < N.naddresses; i++)
            if (!N.addresses[i].named && library_of(&N.addresses[i]) == l) {
                offsets[k] = N.addresses[i].offset;
                which[k++] = i;
            }
        uint8_t build_id[HL_ELF_BUILD_ID_MAX];
        size_t build_id_size = 0;
        if (l->path[0] == '/' &&
            hl_elf_name_offsets(l->path, offsets, count, names, build_id, &build_id_size) == 0) {
            for (size_t b = 0; b < build_id_size; b++)
                snprintf(l->build_id + 2 * b, 3, "%02x", build_id[b]);
        }
        for (k = 0; k < count; k++) {
            address *a = &N.addresses[which[k]];
            a->named = 1;
            if (names[k] != NULL) a->symbol = readable(names[k]);
        }
    }
    free(offsets);
    free(which);
    free(names);
}

void hl_native_address(size_t i, const char **symbol, const char **library_path) {
    address *a = &N.addresses[i];
    library *l = library_of(a);
    *library_path = l != NULL ? l->path : NULL;
    if (!a->named && l != NULL) name_addresses_of(l);
    a->named = 1;
    *symbol = a->symbol != NULL ? a->symbol : UNKNOWN;
}

void hl_native_address_place(size_t i, uint64_t *ip, uint32_t *mapping) {
    *ip = N.addresses[i].ip;
    *mapping = N.addresses[i].mapping;
}

size_t hl_native_nmappings(void) {
    return N.nmappings;
}

void hl_native_mapping(size_t m, hl_native_mapping_info *out) {
    const mapping *map = &N.mappings[m];
    const library *l = map->library != UINT32_MAX ? &N.libraries[map->library] : NULL;
    out->start = map->start;
    out->end = map->end;
    out->offset = map->offset;
    out->library = l != NULL ? l->path : NULL;
    out->build_id = l != NULL ? l->build_id : "";
}
