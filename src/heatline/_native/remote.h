/* remote.h: another process's Python stacks, read from outside it: heatline dump.
 *
 * Nothing is loaded into the target and none of its code runs: its memory is read with
 * process_vm_readv (memread.h), which the kernel allows where it would allow ptrace attach
 * (same user and Yama's ptrace_scope permitting, or CAP_SYS_PTRACE). So it works on a process
 * that is deadlocked, a thread stuck in C with the GIL held included.
 *
 * Finding the interpreter: /proc/PID/maps names the executable and the libpython it maps; the
 * one whose ELF symbols (elf.h) define _PyRuntime holds the interpreter, loaded where its
 * offset-0 mapping starts. Its version comes from Py_Version (3.11+), else from which API
 * functions it exports (3.10: PyModule_AddObjectRef; 3.9: PyType_GetModule); the layout from
 * compat.h's table for that version, overridden on 3.13 by the _Py_DebugOffsets the target keeps
 * at the start of _PyRuntime. From _PyRuntime: the interpreters, each one's thread states, the
 * GIL's state; each thread's stack is walked by frames.c's walker pointed at the target.
 *
 * Consistency: with pause set the target's threads are stopped (seize.h) from before the first
 * read to after the last, so every stack is whole; without it, or where stopping is refused
 * (the process is traced already), a thread that returns while its stack is read yields a
 * stack marked incomplete (torn), never a crash: every read is fault-tolerant, and every value
 * read is checked before it is followed (a thread state's interpreter, a code object's type).
 */
#ifndef HEATLINE_REMOTE_H
#define HEATLINE_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "frames.h"
#include "locks.h"
#include "remoteobj.h"
#include "stats.h"

/* Why a dump failed (hl_dump.error); the message says more. */
enum hl_dump_error {
    HL_DUMP_OK = 0,
    HL_DUMP_NO_PROCESS,  /* no such process (or it exited while read) */
    HL_DUMP_REFUSED,     /* the kernel refused: os_error says how (EPERM, EACCES, ENOSYS) */
    HL_DUMP_NOT_PYTHON,  /* no CPython interpreter in it */
    HL_DUMP_UNSUPPORTED, /* a CPython heatline cannot read: version, build */
    HL_DUMP_UNREADABLE,  /* its interpreter state could not be read */
    HL_DUMP_NO_MEMORY,
};

#define HL_DUMP_MAX_DEPTH 1024 /* frames kept per thread; deeper stacks are marked truncated */

typedef struct hl_dump_thread {
    uintptr_t tstate;
    uint64_t thread_id;  /* its pthread_t: what threading.get_ident() returns in the target */
    long native_id;      /* the kernel's thread id; 0 when it could not be told (3.9, 3.10) */
    int64_t interpreter; /* its interpreter's id (0: the main interpreter) */
    int main;            /* the main thread */
    int holds_gil;       /* the GIL is taken, by this thread */
    int stopped;         /* it was stopped while its stack was read */
    int complete;        /* 0: the walk met a frame it could not read: a torn stack */
    int truncated;       /* deeper than HL_DUMP_MAX_DEPTH: the outermost frames are left out */
    int leaf_flags;      /* HL_OP_* flags of its innermost frame's instruction (a reader given
                          * the target's opcode table; else 0) */
    char kernel_state;   /* /proc's state letter read right after its stack (a reader's
                          * samples only; else 0) */
    int depth;
    hl_frame *frames;    /* innermost first; file and function ids resolve in hl_dump.stats */
    char python_name[HL_REMOTE_NAME_MAX]; /* the name threading gave it ("": none) */
    hl_remote_local *locals; /* with HL_DUMP_LOCALS: its frames' bound local variables, in
                              * frame order (each names its frame's index) */
    size_t nlocals;
    hl_lock_ref *locks;  /* the lock objects its frames hold (locks.h; a dump's only) */
    size_t nlocks, locks_capacity;
} hl_dump_thread;

typedef struct hl_dump {
    int error;             /* an hl_dump_error */
    int os_error;          /* the errno behind it, or 0 */
    char message[512];     /* what went wrong */
    char binary[4096];     /* the file the interpreter was found in */
    unsigned long version; /* the target's PY_VERSION_HEX */
    int version_exact;     /* 0: only major.minor are known (3.9, 3.10) */
    int paused;            /* its threads were stopped while read */
    char pause_note[256];  /* when pausing was asked for and not done (fully): why */
    uint64_t pause_ns;     /* how long the first thread stayed stopped */
    uint64_t read_ns;      /* how long reading the interpreter's state took */
    int threads_complete;  /* 0: a thread list ended in something unreadable (torn) */
    hl_dump_thread *threads;
    size_t nthreads, threads_capacity;
    hl_stats stats; /* the files and functions the frames name (a dump's own) */
    const hl_stats *names; /* where the frames' ids resolve: &stats, or a reader's table */
} hl_dump;

/* hl_remote_dump's flags. */
#define HL_DUMP_PAUSE 1  /* stop the target's threads while they are read */
#define HL_DUMP_LOCALS 2 /* read each frame's local variables (remoteobj.h) */

/* Reads every thread's stack of process pid into *out (zeroed first), and the names threading
 * gave the threads; flags: HL_DUMP_*. Returns 0, or -1 with out->error set. Free *out with
 * hl_remote_dump_free in every case. Does not need the GIL (nor Python at all). */
int hl_remote_dump(int pid, int flags, hl_dump *out);
void hl_remote_dump_free(hl_dump *dump);

/* The switch interval of process pid's main GIL (what sys.setswitchinterval sets, in
 * microseconds): *previous gets its value, then set_us (when > 0) replaces it, unless it
 * differs from expect_us (when > 0: a value the program set meanwhile is left alone). heatline
 * attach shortens it while its thread starts or stops the profile: a thread waiting for the GIL
 * asks for it only after an interval in which the holder never let go, so a program thread
 * that lets go often (short system calls) and takes it straight back keeps a thread that needs
 * it many times (imports: a system call each) waiting for seconds. One word, written with the
 * program running: the GIL's code reads it afresh at each wait. Returns 0 or -1 (not a Python
 * heatline can read, gone, or refused). Does not need the GIL. */
int hl_remote_switch_interval(int pid, unsigned long set_us, unsigned long expect_us,
                              unsigned long *previous);

/* A reader: heatline top's repeated readings of one process, without stopping it. The
 * interpreter, its layout and the walker's code cache are found once (hl_remote_open), so a
 * reading costs the reads of the thread states and stacks and one /proc stat read per thread,
 * not the maps and ELF symbols a dump looks up. A reading never stops the target: a thread
 * that moves while its stack is read yields a stack marked incomplete, never a crash.
 *
 * hl_remote_open: opcode_flags is 256 bytes of HL_OP_* flags for the target's opcode numbers
 * (its version's, not necessarily heatline's), or NULL (leaf_flags then stay 0). Returns the
 * reader, or NULL with status->error set; status (zeroed first) also gets the binary and the
 * version. Free status with hl_remote_dump_free in every case.
 * hl_remote_sample: one reading into *out (zeroed first), like hl_remote_dump(pid, 0, out)
 * plus each thread's leaf_flags and kernel_state; out->names is the reader's table, which
 * grows across readings (ids stay valid until hl_remote_close). Returns 0 or -1 with
 * out->error set. A reader is used by one thread at a time. */
typedef struct hl_remote hl_remote;
hl_remote *hl_remote_open(int pid, const uint8_t *opcode_flags, hl_dump *status);
int hl_remote_sample(hl_remote *reader, hl_dump *out);
const hl_stats *hl_remote_names(const hl_remote *reader);
void hl_remote_close(hl_remote *reader);

#endif
