/* remote.c: see remote.h. */
#define _GNU_SOURCE
#include "remote.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "clock.h"
#include "compat.h"
#include "elf.h"
#include "memread.h"
#include "remoteobj.h"
#include "seize.h"
#include "unaligned.h"

/* How long the threads get to stop before the ones that have not are read running. Each stops
 * as soon as the scheduler runs it (microseconds on an idle machine); on an overloaded one that
 * can take tens of milliseconds, so the deadline is far above what a thread needs to stop and
 * only a thread that cannot (uninterruptible sleep) reaches it. */
#define STOP_TIMEOUT_NS 1000000000u
#define RELEASE_TIMEOUT_NS 1000000000u /* how long a late stopper is waited for, to let it go */
#define MAX_INTERPRETERS 1024
#define MAX_THREADS 100000
#define TID_SCAN_BYTES 2048 /* where glibc's struct pthread keeps the kernel's thread id */

static int fail(hl_dump *d, int error, int os_error, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(d->message, sizeof(d->message), format, args);
    va_end(args);
    d->error = error;
    d->os_error = os_error;
    return -1;
}

/* A refused or failed read of the target, as the dump's error. */
static int fail_read(hl_dump *d, int pid, int error, const char *what) {
    if (error == -ESRCH) return fail(d, HL_DUMP_NO_PROCESS, ESRCH, "process %d exited", pid);
    if (error == -EPERM || error == -EACCES || error == -ENOSYS)
        return fail(d, HL_DUMP_REFUSED, -error, "%s of process %d: %s", what, pid,
                    strerror(-error));
    return fail(d, HL_DUMP_UNREADABLE, -error, "%s of process %d failed: %s", what, pid,
                strerror(-error));
}

/* ---- finding the interpreter ------------------------------------------------------------ */

enum {
    SYM_RUNTIME,
    SYM_VERSION,
    SYM_CODE_TYPE,
    SYM_STR_TYPE,
    SYM_BYTES_TYPE,
    SYM_NONE, /* _Py_NoneStruct: a 3.13 shim frame's code */
    SYM_TRUE,
    SYM_FALSE,
    SYM_INT_TYPE,
    SYM_BOOL_TYPE,
    SYM_FLOAT_TYPE,
    SYM_LIST_TYPE,
    SYM_TUPLE_TYPE,
    SYM_DICT_TYPE,
    SYM_SET_TYPE,
    SYM_FROZENSET_TYPE,
    SYM_CELL_TYPE,
    SYM_SINCE_310, /* exported from 3.10 on */
    SYM_SINCE_39,  /* exported from 3.9 on */
    SYM_DEBUG,     /* a --with-pydebug build's */
    NSYMBOLS
};

typedef struct interpreter {
    hl_elf_symbol symbols[NSYMBOLS];
    uintptr_t bias; /* added to a symbol's value: its address in the target */
} interpreter;

static void name_symbols(hl_elf_symbol *s) {
    s[SYM_RUNTIME].name = "_PyRuntime";
    s[SYM_VERSION].name = "Py_Version";
    s[SYM_CODE_TYPE].name = "PyCode_Type";
    s[SYM_STR_TYPE].name = "PyUnicode_Type";
    s[SYM_BYTES_TYPE].name = "PyBytes_Type";
    s[SYM_NONE].name = "_Py_NoneStruct";
    s[SYM_TRUE].name = "_Py_TrueStruct";
    s[SYM_FALSE].name = "_Py_FalseStruct";
    s[SYM_INT_TYPE].name = "PyLong_Type";
    s[SYM_BOOL_TYPE].name = "PyBool_Type";
    s[SYM_FLOAT_TYPE].name = "PyFloat_Type";
    s[SYM_LIST_TYPE].name = "PyList_Type";
    s[SYM_TUPLE_TYPE].name = "PyTuple_Type";
    s[SYM_DICT_TYPE].name = "PyDict_Type";
    s[SYM_SET_TYPE].name = "PySet_Type";
    s[SYM_FROZENSET_TYPE].name = "PyFrozenSet_Type";
    s[SYM_CELL_TYPE].name = "PyCell_Type";
    s[SYM_SINCE_310].name = "PyModule_AddObjectRef";
    s[SYM_SINCE_39].name = "PyType_GetModule";
    s[SYM_DEBUG].name = "_Py_NegativeRefcount";
}

static uintptr_t address_of(const interpreter *in, int symbol) {
    return in->symbols[symbol].found ? in->bias + (uintptr_t)in->symbols[symbol].value : 0;
}

/* Whether a mapped file may hold the interpreter: the executable, or a libpython. */
static int candidate(const char *path, const char *executable) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strcmp(path, executable) == 0 || strncmp(base, "libpython", 9) == 0;
}

/* Looks for _PyRuntime in the file mapped at [start, end) from path: through the target's root
 * first (a container's files are there under the names its maps give), then the path itself,
 * then the mapping itself (a file deleted since, e.g. by an upgrade). */
static int try_file(int pid, const char *path, uintptr_t start, uintptr_t end, interpreter *in) {
    char where[PATH_MAX + 64];
    uint64_t first_vaddr = 0;
    const char *deleted = strstr(path, " (deleted)");
    size_t length = deleted ? (size_t)(deleted - path) : strlen(path);
    int found = -1;
    for (int attempt = 0; attempt < 3 && found != 0; attempt++) {
        if (attempt == 0)
            snprintf(where, sizeof(where), "/proc/%d/root%.*s", pid, (int)length, path);
        else if (attempt == 1) snprintf(where, sizeof(where), "%.*s", (int)length, path);
        else
            snprintf(where, sizeof(where), "/proc/%d/map_files/%lx-%lx", pid, (unsigned long)start,
                     (unsigned long)end);
        name_symbols(in->symbols);
        found = hl_elf_symbols(where, in->symbols, NSYMBOLS, &first_vaddr);
    }
    if (found != 0 || !in->symbols[SYM_RUNTIME].found) return 0;
    in->bias = start - (uintptr_t)first_vaddr;
    return 1;
}

#define PF_KTHREAD 0x00200000u /* a task's flags (/proc/PID/stat's 9th field): a kernel thread */

/* Whether process pid is a kernel thread (which has no memory map; nor has a process that is
 * exiting, or gone). */
static int kernel_thread(int pid) {
    char path[64], buffer[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buffer, sizeof(buffer) - 1);
    close(fd);
    if (n <= 0) return 0;
    buffer[n] = '\0';
    const char *after = strrchr(buffer, ')'); /* the name may hold ')' */
    unsigned long flags = 0;
    if (after == NULL || sscanf(after + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1) return 0;
    return (flags & PF_KTHREAD) != 0;
}

/* Whether process pid has gone, or is exiting: no memory map left, and not a kernel thread
 * (whose map is empty too). Its map read while it was unmapped named no interpreter. */
static int exiting(int pid) {
    char path[64], byte;
    snprintf(path, sizeof(path), "/proc/%d/maps", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT || errno == ESRCH;
    ssize_t n = read(fd, &byte, 1);
    close(fd);
    return n <= 0 && !kernel_thread(pid);
}

static int find_interpreter(int pid, hl_dump *d, interpreter *in) {
    char path[64], executable[PATH_MAX];
    snprintf(path, sizeof(path), "/proc/%d/exe", pid);
    ssize_t n = readlink(path, executable, sizeof(executable) - 1);
    executable[n > 0 ? n : 0] = '\0';
    /* Which file is the executable is needed to look in it, and it takes the permission the
     * reads will need (some kernels show the maps without it). A kernel thread has none. */
    if (n < 0 && (errno == EACCES || errno == EPERM))
        return fail(d, HL_DUMP_REFUSED, errno, "reading /proc/%d/exe: %s", pid, strerror(errno));
    snprintf(path, sizeof(path), "/proc/%d/maps", pid);
    FILE *maps = fopen(path, "re");
    if (maps == NULL) {
        if (errno == ENOENT) return fail(d, HL_DUMP_NO_PROCESS, ESRCH, "no process %d", pid);
        if (errno == EACCES || errno == EPERM)
            return fail(d, HL_DUMP_REFUSED, errno, "reading /proc/%d/maps: %s", pid,
                        strerror(errno));
        return fail(d, HL_DUMP_UNREADABLE, errno, "reading /proc/%d/maps: %s", pid,
                    strerror(errno));
    }
    char line[PATH_MAX + 256];
    char last[PATH_MAX] = "";
    int mappings = 0, found = 0;
    while (!found && fgets(line, sizeof(line), maps) != NULL) {
        unsigned long start, end, offset;
        int path_at = 0;
        mappings++;
        if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &start, &end, &offset, &path_at) < 3 ||
            path_at == 0 || line[path_at] != '/')
            continue;
        char *mapped = line + path_at;
        mapped[strcspn(mapped, "\n")] = '\0';
        /* A file's first mapping is at offset 0, where the bias is measured from; the next
         * mappings of the same file are skipped. */
        if (offset != 0 || strcmp(mapped, last) == 0) continue;
        snprintf(last, sizeof(last), "%s", mapped);
        if (!candidate(mapped, executable)) continue;
        found = try_file(pid, mapped, start, end, in);
        if (found) snprintf(d->binary, sizeof(d->binary), "%s", mapped);
    }
    int read_error = ferror(maps) ? errno : 0;
    fclose(maps);
    if (found) return 0;
    if (read_error == ESRCH || (mappings == 0 && read_error == 0 && access(path, F_OK) != 0))
        return fail(d, HL_DUMP_NO_PROCESS, ESRCH, "no process %d", pid);
    if (read_error == EACCES || read_error == EPERM)
        return fail(d, HL_DUMP_REFUSED, read_error, "reading /proc/%d/maps: %s", pid,
                    strerror(read_error));
    if (exiting(pid))
        return fail(d, HL_DUMP_NO_PROCESS, ESRCH, "process %d exited while it was read", pid);
    if (mappings == 0)
        return fail(d, HL_DUMP_NOT_PYTHON, 0, "process %d is a kernel thread, not a Python process",
                    pid);
    return fail(d, HL_DUMP_NOT_PYTHON, 0,
                "process %d is not a Python process: no CPython interpreter (the _PyRuntime "
                "symbol) in %s or in a libpython it maps",
                pid, executable[0] ? executable : "its executable");
}

/* The target's version and layout. */
static int read_layout(int pid, hl_dump *d, const interpreter *in, hl_remote_layout *r) {
    uintptr_t runtime = address_of(in, SYM_RUNTIME);
    uint8_t probe[8];
    int error = hl_memread_remote(pid, probe, runtime, sizeof(probe)); /* the first read */
    if (error != 0) return fail_read(d, pid, error, "reading the memory");

    unsigned long version = 0;
    if (in->symbols[SYM_VERSION].found) {
        error = hl_memread_remote(pid, &version, address_of(in, SYM_VERSION), sizeof(version));
        if (error != 0) return fail_read(d, pid, error, "reading Py_Version");
        d->version_exact = 1;
    } else if (in->symbols[SYM_SINCE_310].found) {
        version = 0x030A0000ul;
    } else if (in->symbols[SYM_SINCE_39].found) {
        version = 0x03090000ul;
    } else {
        return fail(d, HL_DUMP_UNSUPPORTED, 0,
                    "process %d runs a CPython older than 3.9 (%s); heatline dump reads 3.9 to "
                    "3.%d",
                    pid, d->binary, HL_REMOTE_MINOR_LAST);
    }
    d->version = version;
    int major = (int)(version >> 24), minor = (int)((version >> 16) & 0xFF);
    if (major != 3 || hl_compat_remote_layout(minor, r) != 0)
        return fail(d, HL_DUMP_UNSUPPORTED, 0,
                    "process %d runs CPython %d.%d (%s); heatline dump reads 3.%d to 3.%d", pid,
                    major, minor, d->binary, HL_REMOTE_MINOR_FIRST, HL_REMOTE_MINOR_LAST);
    if (minor >= 13) {
        uint8_t offsets[HL_DEBUG_OFFSETS_SIZE];
        const char *why = "";
        error = hl_memread_remote(pid, offsets, runtime, sizeof(offsets));
        if (error != 0) return fail_read(d, pid, error, "reading _Py_DebugOffsets");
        if (hl_compat_apply_debug_offsets(offsets, r, &why) != 0)
            return fail(d, HL_DUMP_UNSUPPORTED, 0,
                        "process %d runs CPython %d.%d as %s (%s), which heatline dump cannot "
                        "read",
                        pid, major, minor, why, d->binary);
        d->version = r->version;
    } else if (in->symbols[SYM_DEBUG].found) {
        return fail(d, HL_DUMP_UNSUPPORTED, 0,
                    "process %d runs a debug build of CPython %d.%d (%s), whose structures "
                    "heatline dump does not know",
                    pid, major, minor, d->binary);
    }
    r->walk.code_type = address_of(in, SYM_CODE_TYPE);
    r->walk.str_type = address_of(in, SYM_STR_TYPE);
    r->walk.bytes_type = address_of(in, SYM_BYTES_TYPE);
    r->walk.none_object = address_of(in, SYM_NONE);
    if (!r->walk.code_type || !r->walk.str_type || !r->walk.bytes_type)
        return fail(d, HL_DUMP_UNREADABLE, 0,
                    "%s does not export PyCode_Type, PyUnicode_Type and "
                    "PyBytes_Type",
                    d->binary);
    return 0;
}

/* ---- the threads ------------------------------------------------------------------------ */

/* What a reading reads beyond the stacks: the threads' names (remoteobj.h), and with locals
 * set each frame's local variables (addresses: scratch, HL_DUMP_MAX_DEPTH frames' addresses). */
#define ACTIVE_CACHED 8 /* interpreters whose threading._active a reader remembers */
#define ACTIVE_RETRY 64 /* readings between two lookups of a threading not found */
#define NAMES_REFRESH 16 /* a reader's readings between two readings of known threads' names */

typedef struct known_name {
    uint64_t ident;
    char name[HL_REMOTE_NAME_MAX];
} known_name;

typedef struct extras {
    hl_remote_objects objects;
    int locals;
    /* A dump's: the lock types met so far (locks.h); NULL for a reader's samples, which look
     * for no locks. */
    hl_lock_types *lock_types;
    uintptr_t *addresses; /* each frame's address (with locals or lock_types): scratch */
    /* A reader's: each interpreter's threading._active found so far (looking it up reads every
     * key of sys.modules; the dict lives as long as its interpreter), 0 where threading was not
     * imported at the reading looked_up. */
    uintptr_t active_interp[ACTIVE_CACHED], active[ACTIVE_CACHED];
    unsigned looked_up[ACTIVE_CACHED], readings;
    /* A reader's: the names of the threads seen so far (a reading reads them again only when
     * it meets a thread it has not named yet, or every NAMES_REFRESH readings). */
    int remember;
    known_name *known;
    size_t nknown, known_capacity;
} extras;

/* The remembered name of thread ident, or NULL. */
static known_name *known_of(extras *x, uint64_t ident) {
    for (size_t i = 0; i < x->nknown; i++)
        if (x->known[i].ident == ident) return &x->known[i];
    return NULL;
}

/* Names the threads from index first of d's from what was remembered; 0 when one is unknown. */
static int name_from_known(extras *x, hl_dump *d, size_t first) {
    for (size_t i = first; i < d->nthreads; i++)
        if (known_of(x, d->threads[i].thread_id) == NULL) return 0;
    for (size_t i = first; i < d->nthreads; i++)
        memcpy(d->threads[i].python_name, known_of(x, d->threads[i].thread_id)->name,
               HL_REMOTE_NAME_MAX);
    return 1;
}

#define MAX_KNOWN 4096 /* names remembered; past it (threads come and go) they start afresh */

static void remember_names(extras *x, const hl_dump *d, size_t first) {
    if (x->nknown >= MAX_KNOWN) x->nknown = 0;
    for (size_t i = first; i < d->nthreads; i++) {
        known_name *k = known_of(x, d->threads[i].thread_id);
        if (k == NULL) {
            if (HL_ARRAY_RESERVE(x->known, x->known_capacity, x->nknown + 1, 16) != 0) return;
            k = &x->known[x->nknown++];
            k->ident = d->threads[i].thread_id;
        }
        memcpy(k->name, d->threads[i].python_name, HL_REMOTE_NAME_MAX);
    }
}

/* The threads of one interpreter (from index first of d's) that threading named. */
typedef struct naming {
    hl_dump *d;
    size_t first;
} naming;

static void name_thread(uint64_t ident, const char *name, void *context) {
    naming *n = context;
    for (size_t i = n->first; i < n->d->nthreads; i++)
        if (n->d->threads[i].thread_id == ident)
            snprintf(n->d->threads[i].python_name, sizeof(n->d->threads[i].python_name), "%s",
                     name);
}

/* Names the threads of the interpreter at interp, through its threading._active: the one
 * remembered (a reader's) while it reads as a dict, else looked up afresh. */
static void lookup_names(extras *x, uintptr_t interp, naming *n) {
    int slot = 0;
    while (slot < ACTIVE_CACHED && x->active_interp[slot] != 0 && x->active_interp[slot] != interp)
        slot++;
    int known = slot < ACTIVE_CACHED && x->active_interp[slot] == interp;
    if (known && x->active[slot] != 0 &&
        hl_remote_thread_names(&x->objects, x->active[slot], name_thread, n) >= 0)
        return;
    if (known && x->active[slot] == 0 && x->readings - x->looked_up[slot] < ACTIVE_RETRY) return;
    uintptr_t active = hl_remote_threading_active(&x->objects, interp);
    if (slot < ACTIVE_CACHED) {
        x->active_interp[slot] = interp;
        x->active[slot] = active;
        x->looked_up[slot] = x->readings;
    }
    hl_remote_thread_names(&x->objects, active, name_thread, n);
}

/* Names the threads of one interpreter (from index n->first of its dump's): a reader from what
 * it remembers when it can, else through threading._active (lookup_names). */
static void name_threads(extras *x, uintptr_t interp, naming *n) {
    if (x->remember && x->readings % NAMES_REFRESH != 0 && name_from_known(x, n->d, n->first))
        return;
    lookup_names(x, interp, n);
    if (x->remember) remember_names(x, n->d, n->first);
}

static void set_objects(int pid, const interpreter *in, const hl_remote_layout *r,
                        hl_remote_objects *o) {
    hl_remote_types *t = &o->types;
    o->pid = pid;
    o->layout = r;
    t->none = address_of(in, SYM_NONE);
    t->true_object = address_of(in, SYM_TRUE);
    t->false_object = address_of(in, SYM_FALSE);
    t->int_type = address_of(in, SYM_INT_TYPE);
    t->bool_type = address_of(in, SYM_BOOL_TYPE);
    t->float_type = address_of(in, SYM_FLOAT_TYPE);
    t->str_type = address_of(in, SYM_STR_TYPE);
    t->bytes_type = address_of(in, SYM_BYTES_TYPE);
    t->list_type = address_of(in, SYM_LIST_TYPE);
    t->tuple_type = address_of(in, SYM_TUPLE_TYPE);
    t->dict_type = address_of(in, SYM_DICT_TYPE);
    t->set_type = address_of(in, SYM_SET_TYPE);
    t->frozenset_type = address_of(in, SYM_FROZENSET_TYPE);
    t->cell_type = address_of(in, SYM_CELL_TYPE);
}

/* Each frame's local variables of thread t, whose frames were read from x->addresses (an
 * unreadable frame shows none). */
static void read_locals(const extras *x, hl_dump_thread *t) {
    size_t capacity = 0;
    for (int i = 0; i < t->depth; i++) {
        size_t before = t->nlocals;
        hl_remote_frame_locals(&x->objects, x->addresses[i], &t->locals, &t->nlocals, &capacity);
        for (size_t k = before; k < t->nlocals; k++) t->locals[k].frame = i;
    }
}

static int read_word(int pid, uintptr_t address, uintptr_t *value) {
    return hl_memread_remote(pid, value, address, sizeof(*value));
}

typedef struct gil {
    int locked;
    uintptr_t holder;
} gil;

static gil read_gil(int pid, const hl_remote_layout *r, uintptr_t runtime, uintptr_t interp) {
    gil g = {0, 0};
    uintptr_t state = runtime + r->gil_state;
    if (r->gil_per_interpreter && read_word(pid, interp + r->gil_state, &state) != 0) return g;
    if (state == 0 || hl_memread_remote(pid, &g.locked, state + r->gil_locked, sizeof(int)) != 0 ||
        read_word(pid, state + r->gil_holder, &g.holder) != 0)
        g.locked = 0;
    return g;
}

static int add_thread(hl_dump *d, const hl_dump_thread *t) {
    if (HL_ARRAY_RESERVE(d->threads, d->threads_capacity, d->nthreads + 1, 16) != 0) return -1;
    d->threads[d->nthreads++] = *t;
    return 0;
}

/* Walks the thread states of one interpreter. Returns 0, or -1 when out of memory. */
static int read_threads(int pid, hl_dump *d, hl_walker *w, const hl_remote_layout *r,
                        uintptr_t interp, int64_t interp_id, gil g, uintptr_t main_thread,
                        hl_frame *frames, const extras *x) {
    const hl_layout *l = &w->layout;
    uintptr_t tstate = 0;
    if (read_word(pid, interp + l->interp_threads_head, &tstate) != 0) {
        d->threads_complete = 0;
        return 0;
    }
    size_t fields[] = {l->tstate_next, r->tstate_interp, l->tstate_thread_id,
                       l->has_native_thread_id ? l->tstate_native_thread_id : 0};
    size_t size = 0;
    for (size_t i = 0; i < sizeof(fields) / sizeof(*fields); i++)
        if (fields[i] + 8 > size) size = fields[i] + 8;
    for (int count = 0; tstate != 0; count++) {
        uint8_t header[512];
        if (count >= MAX_THREADS || size > sizeof(header) ||
            hl_memread_remote(pid, header, tstate, size) != 0 ||
            hl_load_word(header, r->tstate_interp) != interp) {
            d->threads_complete = 0; /* a thread state freed while read: the list is torn */
            return 0;
        }
        hl_dump_thread t;
        memset(&t, 0, sizeof(t));
        t.tstate = tstate;
        t.thread_id = hl_load_word(header, l->tstate_thread_id);
        if (l->has_native_thread_id)
            t.native_id = (long)hl_load_word(header, l->tstate_native_thread_id);
        t.interpreter = interp_id;
        t.main = interp_id == 0 && t.thread_id == main_thread;
        t.holds_gil = g.locked && g.holder == tstate;
        int flags, complete = 0;
        int depth = hl_walk_addresses(w, tstate, frames,
                                      x->locals || x->lock_types != NULL ? x->addresses : NULL,
                                      HL_DUMP_MAX_DEPTH, &flags, &complete);
        t.complete = depth >= 0 && complete;
        t.leaf_flags = depth > 0 ? flags : 0;
        t.depth = depth > 0 ? depth : 0;
        t.truncated = depth == HL_DUMP_MAX_DEPTH;
        if (t.depth > 0) {
            t.frames = malloc((size_t)t.depth * sizeof(*t.frames));
            if (t.frames == NULL) return -1;
            memcpy(t.frames, frames, (size_t)t.depth * sizeof(*t.frames));
        }
        if (x->locals) read_locals(x, &t);
        if ((x->lock_types != NULL && t.depth > 0 &&
             hl_locks_read(pid, r, x->lock_types, x->addresses, t.depth, &t.locks, &t.nlocks,
                           &t.locks_capacity) != 0) ||
            add_thread(d, &t) != 0) {
            free(t.frames);
            free(t.locals);
            free(t.locks);
            return -1;
        }
        tstate = hl_load_word(header, l->tstate_next);
    }
    return 0;
}

/* The kernel's thread ids of the target (/proc/PID/task). Returns how many, or -1. */
static int list_tids(int pid, int **tids) {
    char path[64];
    size_t count = 0, capacity = 0;
    *tids = NULL;
    snprintf(path, sizeof(path), "/proc/%d/task", pid);
    DIR *dir = opendir(path);
    if (dir == NULL) return -1;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        char *end;
        long tid = strtol(entry->d_name, &end, 10);
        if (*end != '\0' || tid <= 0) continue;
        if (HL_ARRAY_RESERVE(*tids, capacity, count + 1, 16) != 0) break;
        (*tids)[count++] = (int)tid;
    }
    closedir(dir);
    return (int)count;
}

/* Where this process's glibc keeps a thread's kernel id in its struct pthread, or -1: a likely
 * answer for the target, whose C library is usually the same. */
static long own_tid_offset(void) {
    int row[TID_SCAN_BYTES / sizeof(int)];
    if (hl_memread_remote((int)getpid(), row, (uintptr_t)pthread_self(), sizeof(row)) != 0)
        return -1;
    int id = (int)gettid();
    for (size_t s = 0; s < sizeof(row) / sizeof(*row); s++)
        if (row[s] == id) return (long)s;
    return -1;
}

/* 3.9 and 3.10 keep a thread's pthread_t but not its kernel id, which the target's glibc keeps
 * inside the struct pthread that pthread_t points to, at an offset private to glibc. The offset
 * is found as the one where every thread's struct holds one of the process's thread ids, a
 * different one for each (this process's own offset first: the same glibc is the usual case).
 * Where none fits, only the main thread's id is known: the process's. */
static void find_native_ids(int pid, hl_dump *d) {
    int *tids;
    int ntids = list_tids(pid, &tids);
    size_t slots = TID_SCAN_BYTES / sizeof(int);
    unsigned char *possible = malloc(slots);
    int *values = calloc(d->nthreads * slots, sizeof(int));
    unsigned char *read = calloc(d->nthreads, 1);
    if (ntids <= 0 || possible == NULL || values == NULL || read == NULL) goto done;
    memset(possible, 1, slots);
    int rows = 0;
    for (size_t t = 0; t < d->nthreads; t++) {
        int *row = values + t * slots;
        if (d->threads[t].thread_id == 0 ||
            hl_memread_remote(pid, row, (uintptr_t)d->threads[t].thread_id, TID_SCAN_BYTES) != 0)
            continue; /* not started yet, or gone */
        read[t] = 1;
        rows++;
        for (size_t s = 0; s < slots; s++) {
            int listed = 0;
            for (int k = 0; k < ntids && !listed; k++) listed = row[s] == tids[k];
            for (size_t u = 0; u < t && listed; u++)
                listed = !read[u] || values[u * slots + s] != row[s];
            if (!listed) possible[s] = 0;
        }
    }
    long own = own_tid_offset();
    long chosen = rows > 0 && own >= 0 && possible[own] ? own : -1;
    for (size_t s = 0; rows > 0 && s < slots && chosen < 0; s++)
        if (possible[s]) chosen = (long)s;
    for (size_t t = 0; t < d->nthreads; t++) {
        if (chosen >= 0 && read[t]) d->threads[t].native_id = values[t * slots + (size_t)chosen];
    }
done:
    for (size_t t = 0; t < d->nthreads; t++)
        if (d->threads[t].native_id == 0 && d->threads[t].main) d->threads[t].native_id = pid;
    free(tids);
    free(possible);
    free(values);
    free(read);
}

/* Reads every interpreter's threads with walker (whose code cache may outlive the reading)
 * into frames (HL_DUMP_MAX_DEPTH of them, scratch), with x's extras (names, locals, and a
 * dump's locks their frames hold). */
static int read_interpreters(int pid, hl_dump *d, const hl_remote_layout *r, uintptr_t runtime,
                             hl_walker *walker, hl_frame *frames, extras *x) {
    int result = 0;
    uintptr_t interp = 0, main_thread = 0;
    if (frames == NULL) {
        result = fail(d, HL_DUMP_NO_MEMORY, ENOMEM, "out of memory");
        goto done;
    }
    int error = read_word(pid, runtime + r->runtime_interpreters_head, &interp);
    if (error == 0) error = read_word(pid, runtime + r->runtime_main_thread, &main_thread);
    if (error != 0) {
        result = fail_read(d, pid, error, "reading _PyRuntime");
        goto done;
    }
    d->threads_complete = 1;
    x->readings++;
    for (int count = 0; interp != 0; count++) {
        int64_t id = -1;
        if (count >= MAX_INTERPRETERS ||
            hl_memread_remote(pid, &id, interp + r->interp_id, sizeof(id)) != 0) {
            d->threads_complete = 0;
            break;
        }
        gil g = read_gil(pid, r, runtime, interp);
        naming n = {d, d->nthreads};
        if (read_threads(pid, d, walker, r, interp, id, g, main_thread, frames, x) != 0) {
            result = fail(d, HL_DUMP_NO_MEMORY, ENOMEM, "out of memory");
            goto done;
        }
        name_threads(x, interp, &n);
        if (read_word(pid, interp + r->interp_next, &interp) != 0) {
            d->threads_complete = 0;
            break;
        }
    }
    if (!r->walk.has_native_thread_id) find_native_ids(pid, d);
    /* A process that exited meanwhile leaves what was read before it did: not its state. */
    if (read_word(pid, runtime + r->runtime_interpreters_head, &interp) == -ESRCH)
        result = fail(d, HL_DUMP_NO_PROCESS, ESRCH, "process %d exited while it was read", pid);
done:
    return result;
}

/* ---- the dump --------------------------------------------------------------------------- */

/* TracerPid from /proc/PID/status: who traces the process already (0: nobody). */
static long tracer_of(int pid) {
    char path[64], line[256];
    long tracer = 0;
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    FILE *status = fopen(path, "re");
    if (status == NULL) return 0;
    while (fgets(line, sizeof(line), status) != NULL)
        if (sscanf(line, "TracerPid: %ld", &tracer) == 1) break;
    fclose(status);
    return tracer;
}

int hl_remote_dump(int pid, int flags, hl_dump *d) {
    int pause = flags & HL_DUMP_PAUSE;
    memset(d, 0, sizeof(*d));
    d->names = &d->stats;
    if (pid <= 0) return fail(d, HL_DUMP_NO_PROCESS, ESRCH, "no process %d", pid);
    interpreter in;
    hl_remote_layout r;
    memset(&in, 0, sizeof(in));
    if (find_interpreter(pid, d, &in) != 0 || read_layout(pid, d, &in, &r) != 0) return -1;

    hl_seized seized;
    memset(&seized, 0, sizeof(seized));
    if (pause && pid == (int)getpid()) {
        snprintf(d->pause_note, sizeof(d->pause_note), "a process cannot stop itself");
    } else if (pause) {
        int error = hl_seize(pid, &seized, STOP_TIMEOUT_NS);
        long tracer = error == -EPERM ? tracer_of(pid) : 0;
        if (error == -ESRCH) return fail(d, HL_DUMP_NO_PROCESS, ESRCH, "process %d exited", pid);
        if (tracer > 0)
            snprintf(d->pause_note, sizeof(d->pause_note),
                     "process %ld traces it already (a debugger?), so it could not be stopped",
                     tracer);
        else if (error != 0)
            snprintf(d->pause_note, sizeof(d->pause_note), "stopping its threads failed: %s",
                     strerror(-error));
        else if (hl_seize_stopped(&seized) < seized.count)
            snprintf(d->pause_note, sizeof(d->pause_note),
                     "%zu of its %zu threads did not stop within %u s (uninterruptible sleep?)",
                     seized.count - hl_seize_stopped(&seized), seized.count,
                     STOP_TIMEOUT_NS / 1000000000u);
        d->paused = error == 0 && hl_seize_stopped(&seized) > 0;
    }

    hl_walker walker;
    memset(&walker, 0, sizeof(walker));
    walker.pid = pid;
    walker.layout = r.walk;
    walker.stats = &d->stats;
    hl_frame *frames = malloc(HL_DUMP_MAX_DEPTH * sizeof(*frames));
    hl_lock_types lock_types;
    lock_types.count = 0;
    extras x = {.locals = (flags & HL_DUMP_LOCALS) != 0, .lock_types = &lock_types};
    set_objects(pid, &in, &r, &x.objects);
    x.addresses = malloc(HL_DUMP_MAX_DEPTH * sizeof(*x.addresses));
    uint64_t start = hl_now_ns();
    int result =
        frames == NULL || x.addresses == NULL
            ? fail(d, HL_DUMP_NO_MEMORY, ENOMEM, "out of memory")
            : read_interpreters(pid, d, &r, address_of(&in, SYM_RUNTIME), &walker, frames, &x);
    d->read_ns = hl_now_ns() - start;
    free(frames);
    free(x.addresses);
    hl_walker_clear(&walker);
    for (size_t i = 0; i < d->nthreads; i++)
        d->threads[i].stopped = d->threads[i].native_id > 0 &&
                                hl_seize_is_stopped(&seized, (pid_t)d->threads[i].native_id);
    if (seized.count > 0) {
        hl_seize_release(&seized, RELEASE_TIMEOUT_NS);
        d->pause_ns = seized.released_ns - seized.first_stop_ns;
    }
    return result;
}

/* ---- the switch interval ------------------------------------------------------------- */

int hl_remote_switch_interval(int pid, unsigned long set_us, unsigned long expect_us,
                              unsigned long *previous) {
    hl_dump d;
    memset(&d, 0, sizeof(d));
    d.names = &d.stats;
    interpreter in;
    hl_remote_layout r;
    memset(&in, 0, sizeof(in));
    int found =
        pid > 0 && find_interpreter(pid, &d, &in) == 0 && read_layout(pid, &d, &in, &r) == 0;
    hl_remote_dump_free(&d);
    if (!found) return -1;
    uintptr_t runtime = address_of(&in, SYM_RUNTIME), state = runtime + r.gil_state;
    if (r.gil_per_interpreter) {
        /* The main interpreter's (id 0): the one a new thread's PyGILState_Ensure takes. */
        uintptr_t interp = 0;
        int64_t id = -1;
        if (read_word(pid, runtime + r.runtime_interpreters_head, &interp) != 0) return -1;
        for (int count = 0; interp != 0 && count < MAX_INTERPRETERS; count++) {
            if (hl_memread_remote(pid, &id, interp + r.interp_id, sizeof(id)) != 0) return -1;
            if (id == 0) break;
            if (read_word(pid, interp + r.interp_next, &interp) != 0) return -1;
        }
        if (id != 0 || read_word(pid, interp + r.gil_state, &state) != 0 || state == 0) return -1;
    }
    uintptr_t at = state + r.gil_interval;
    if (hl_memread_remote(pid, previous, at, sizeof(*previous)) != 0) return -1;
    if (set_us == 0 || (expect_us != 0 && *previous != expect_us)) return 0;
    return hl_memwrite_remote(pid, at, &set_us, sizeof(set_us)) == 0 ? 0 : -1;
}

/* ---- a reader ------------------------------------------------------------------------- */

struct hl_remote {
    int pid;
    interpreter in;
    hl_remote_layout layout;
    extras extras;    /* objects: the threads' names */
    hl_walker walker; /* its code cache lives as long as the reader */
    hl_stats names;   /* the files and functions of every reading */
    hl_frame *frames; /* scratch: HL_DUMP_MAX_DEPTH */
    char binary[sizeof(((hl_dump *)0)->binary)];
    unsigned long version;
    int version_exact;
};

/* The state letter of /proc/PID/task/TID/stat, or 0 when it cannot be read (gone). */
static char kernel_state(int pid, long tid) {
    char path[80], buffer[512];
    snprintf(path, sizeof(path), "/proc/%d/task/%ld/stat", pid, tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buffer, sizeof(buffer) - 1);
    close(fd);
    if (n <= 0) return 0;
    buffer[n] = '\0';
    const char *end_of_name = strrchr(buffer, ')'); /* the name itself may hold ')' */
    return end_of_name != NULL && end_of_name[1] == ' ' ? end_of_name[2] : 0;
}

hl_remote *hl_remote_open(int pid, const uint8_t *opcode_flags, hl_dump *status) {
    memset(status, 0, sizeof(*status));
    status->names = &status->stats;
    if (pid <= 0) {
        fail(status, HL_DUMP_NO_PROCESS, ESRCH, "no process %d", pid);
        return NULL;
    }
    hl_remote *reader = calloc(1, sizeof(*reader));
    if (reader != NULL) reader->frames = malloc(HL_DUMP_MAX_DEPTH * sizeof(*reader->frames));
    if (reader == NULL || reader->frames == NULL) {
        if (reader != NULL) free(reader);
        fail(status, HL_DUMP_NO_MEMORY, ENOMEM, "out of memory");
        return NULL;
    }
    if (find_interpreter(pid, status, &reader->in) != 0 ||
        read_layout(pid, status, &reader->in, &reader->layout) != 0) {
        free(reader->frames);
        free(reader);
        return NULL;
    }
    reader->pid = pid;
    reader->walker.pid = pid;
    reader->walker.layout = reader->layout.walk;
    reader->walker.stats = &reader->names;
    set_objects(pid, &reader->in, &reader->layout, &reader->extras.objects);
    reader->extras.remember = 1;
    if (opcode_flags != NULL) memcpy(reader->walker.opcode_flags, opcode_flags, 256);
    snprintf(reader->binary, sizeof(reader->binary), "%s", status->binary);
    reader->version = status->version;
    reader->version_exact = status->version_exact;
    return reader;
}

int hl_remote_sample(hl_remote *reader, hl_dump *d) {
    memset(d, 0, sizeof(*d));
    d->names = &reader->names;
    snprintf(d->binary, sizeof(d->binary), "%s", reader->binary);
    d->version = reader->version;
    d->version_exact = reader->version_exact;
    uint64_t start = hl_now_ns();
    int result =
        read_interpreters(reader->pid, d, &reader->layout, address_of(&reader->in, SYM_RUNTIME),
                          &reader->walker, reader->frames, &reader->extras);
    d->read_ns = hl_now_ns() - start;
    for (size_t i = 0; result == 0 && i < d->nthreads; i++)
        if (d->threads[i].native_id > 0)
            d->threads[i].kernel_state = kernel_state(reader->pid, d->threads[i].native_id);
    return result;
}

const hl_stats *hl_remote_names(const hl_remote *reader) {
    return &reader->names;
}

void hl_remote_close(hl_remote *reader) {
    if (reader == NULL) return;
    hl_walker_clear(&reader->walker);
    hl_stats_clear(&reader->names);
    free(reader->extras.known);
    free(reader->frames);
    free(reader);
}

void hl_remote_dump_free(hl_dump *d) {
    for (size_t i = 0; i < d->nthreads; i++) {
        free(d->threads[i].frames);
        free(d->threads[i].locals);
        free(d->threads[i].locks);
    }
    free(d->threads);
    d->threads = NULL;
    d->nthreads = d->threads_capacity = 0;
    hl_stats_clear(&d->stats);
}
