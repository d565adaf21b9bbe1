/* native.h: native frames: which C function (and library) a line's native time went to.
 *
 * The sampler (sampler.c) calls hl_native_thread_tick for each thread at each tick, on its own
 * thread: that thread's kernel CPU-clock sampling event (perf_event_open, user space only, one
 * per profiled thread, opened there on first use so that its descriptor lives in the sampler's
 * own descriptor table) has recorded the instruction addresses where the thread was running
 * since the previous tick; when the tick charges the thread's time to a line as native, that
 * time is split evenly among those samples, by address. Each new address is placed in the
 * process's mappings (/proc/self/maps, read again when an address is in none of the cached
 * ones) as (library, file offset) when first seen, so that a library unloaded later can still
 * be read from its file. Names are found at the end (hl_native_symbolise, from the files'
 * symbol tables, elf.c). See docs/design-engine.md, "Native frames".
 *
 * Threads without a Python thread state (a BLAS or OpenMP pool, a C library's own pthread) are
 * found at each tick in /proc/self/task (hl_native_others_tick): each one's CPU time since the
 * previous tick, read from its CPU clock, is split among its own event's samples in the same
 * way, and kept per thread, not per line: no Python line ran it.
 *
 * Everything here is called with the engine lock held.
 */
#ifndef HEATLINE_NATIVE_H
#define HEATLINE_NATIVE_H

#include <stddef.h>
#include <stdint.h>

/* A profiled thread's sampling event (in hl_thread). fd < 0: none (yet, or refused). */
typedef struct hl_native_thread {
    int fd;
    int opened; /* an open was tried for this thread */
    void *ring; /* the event's mapped ring buffer, or NULL */
    uint32_t last_address; /* the address id of its latest sample, when has_last */
    uint32_t last_line;    /* the line its previous tick charged (HL_NO_LINE: none) */
    int has_last;
} hl_native_thread;

/* At a session's start (lock held): whether native frames are wanted, and the mean sampling
 * interval (the events sample a few times per interval). */
void hl_native_configure(int enabled, uint64_t sampling_interval_ns);

/* The sampler thread, once started: whether it has a descriptor table of its own. Without one
 * no event is opened (its descriptor would live in the program's table between ticks). */
void hl_native_set_private_table(int own);

/* The kernel's name for thread tid (/proc/self/task/TID/comm, at most 15 bytes) into comm
 * ("" when it cannot be read: the thread is gone). Any thread. */
void hl_thread_comm(long tid, char *comm, size_t size);

/* A registry entry made (the sampler's thread registry): no event yet. */
void hl_native_thread_init(hl_native_thread *t);

/* The sampler thread, each tick, each thread (kernel id tid): reads the samples the event took
 * since the previous tick (opening the event on first use), and charges ns, split among them,
 * to the line line_id and to the stack stack_id (stats ids), each unless HL_NO_LINE /
 * HL_NO_STACK. */
void hl_native_thread_tick(hl_native_thread *t, long tid, uint32_t line_id, uint32_t stack_id,
                           uint64_t ns);

/* The sampler thread: closes the thread's event (the thread is gone, or the sampler ends). */
void hl_native_thread_close(hl_native_thread *t);

/* Forgets the event without closing it: in a fork() child, where neither the sampler's
 * descriptor table nor the ring (not copied by fork) exists. */
void hl_native_thread_forget(hl_native_thread *t);

/* The sampler thread (the caller, kernel id sampler), each tick, after the Python threads:
 * the process's other threads (those for which is_python(context, tid) is 0, less the caller
 * and heatline's own threads), their CPU time since the previous tick split among their
 * samples. Opens an event for each on first sight; closes those of threads gone. Does nothing
 * without native frames or without the sampler's own descriptor table. */
void hl_native_others_tick(long sampler, int (*is_python)(void *context, long tid), void *context);

/* The sampler thread, at a wake-up while profiling is paused: the other threads' clocks are
 * read and their samples dropped, so that the next tick charges only the time since. */
void hl_native_others_rebase(void);

/* The sampler thread, as it ends: closes the other threads' events (reopened by the next). */
void hl_native_others_close(void);

/* A thread of heatline's own (own = 1 when it starts, 0 as it ends), never taken for one of the
 * program's threads. Any thread, any lock; at most HL_NATIVE_OWN_THREADS at once. */
#define HL_NATIVE_OWN_THREADS 8
void hl_native_own_thread(long tid, int own);

/* Forgets the results (the tables are about to be cleared). */
void hl_native_reset(void);

/* The results, for the snapshot (convert.c). Addresses are named on the first call that sees
 * them (reading the libraries' symbol tables then). */
typedef struct hl_native_charge {
    uint32_t line;    /* stats line id (or stack id, in stack_charges) */
    uint32_t address; /* index for hl_native_address */
    uint64_t ns;
} hl_native_charge;

/* A thread without a Python thread state that used CPU while profiled. */
typedef struct hl_native_other {
    long tid;
    char comm[16];       /* its name (/proc/self/task/TID/comm) when first seen */
    uint64_t cpu_ns;     /* CPU time it used between its first tick and its last */
    uint64_t unnamed_ns; /* the part no sample named (less than a period since the previous) */
} hl_native_other;

typedef struct hl_native_results {
    int enabled;
    int error;  /* errno of the first refused event (0: none refused) */
    int reason; /* enum hl_native_reason: why no event could be opened */
    uint64_t threads_without; /* threads whose event could not be opened */
    uint64_t unsampled_ns;    /* native time charged while no sample had been taken yet */
    const hl_native_charge *charges;
    size_t ncharges;
    const hl_native_charge *stack_charges; /* .line is a stats stack id */
    size_t nstack_charges;
    const hl_native_other *others;
    size_t nothers;
    const hl_native_charge *other_charges; /* .line indexes others */
    size_t nother_charges;
    size_t naddresses;
} hl_native_results;

enum hl_native_reason { HL_NATIVE_OK = 0, HL_NATIVE_REFUSED = 1, HL_NATIVE_SHARED_TABLE = 2 };

void hl_native_results_get(hl_native_results *out);

/* The function and library of address index i: *symbol is "[unknown]" where no name is known
 * (code in no file: JIT; a stripped file), *library NULL where the address is in no file. */
void hl_native_address(size_t i, const char **symbol, const char **library);

/* Where address index i was sampled: its instruction address, and the index of the mapping it
 * was in (for hl_native_mapping; UINT32_MAX: in none, such as JIT code). */
void hl_native_address_place(size_t i, uint64_t *ip, uint32_t *mapping);

/* The mappings addresses were placed in (every executable mapping read from /proc/self/maps
 * during the session, the ones gone since included): how many, and mapping m. */
typedef struct hl_native_mapping_info {
    uint64_t start, end, offset; /* its address range and the file offset mapped at start */
    const char *library;         /* its file, or NULL (anonymous memory) */
    const char *build_id;        /* the file's GNU build id in hex, "" when unknown: read with
                                  * the file's symbols, so known once an address in it is named */
} hl_native_mapping_info;
size_t hl_native_nmappings(void);
void hl_native_mapping(size_t m, hl_native_mapping_info *out);

#endif
