/* locks.h: the lock objects another process's threads hold in their frames, for heatline
 * dump's deadlock finding (engine/deadlock.py makes the wait-for graph from them).
 *
 * Read from outside, as remote.h reads stacks: nothing runs in the target. For each frame of a
 * thread the walker read (innermost first, the interpreter's own entry and shim frames stepped
 * over), the frame's slots are read: its locals, cells and free
 * variables, then its value stack (to the count the frame saved when it called a Python
 * function; the innermost frame, inside a C call, saves none, so its whole co_stacksize is
 * read, where slots above the live top may hold stale values: an object whose reference count
 * is 0 or a pointer, one freed since, is passed over). Each slot's object is kept when
 * its type is _thread.lock or _thread.RLock (told by the type's tp_name, read once per type),
 * or a builtin method bound to one: `with lock:` keeps the lock's bound __exit__ on the value
 * stack for the whole block, `lock.acquire()` has the lock itself there while it runs.
 *
 * What a lock records (compat.h's lock layout): the PyThread_type_lock a blocked acquire waits
 * on (its address is the futex word the waiting thread sleeps on, which /proc's syscall file
 * shows: the exact lock a thread waits for), whether a _thread.lock is locked (not by whom),
 * and an RLock's owner (a thread ident) and count.
 */
#ifndef HEATLINE_LOCKS_H
#define HEATLINE_LOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "compat.h"

enum hl_lock_kind { HL_LOCK_PLAIN = 1, HL_LOCK_RLOCK = 2 };

/* Where a frame holds the lock. */
enum hl_lock_place {
    HL_LOCK_LOCAL = 1,  /* a local variable (or cell, free variable) is the lock */
    HL_LOCK_STACK = 2,  /* the value stack holds the lock, or one of its bound methods */
    HL_LOCK_EXIT = 3,   /* the value stack holds its bound __exit__: a `with` block on it */
};

typedef struct hl_lock_ref {
    uintptr_t lock;  /* the lock object (id() in the target) */
    uintptr_t sem;   /* its PyThread_type_lock: the futex word a blocked acquire waits on */
    uint64_t owner;  /* RLock: its owner's thread ident (0: none) */
    uint64_t count;  /* RLock: how many times the owner holds it */
    int kind;        /* an hl_lock_kind */
    int locked;      /* 1: locked (an RLock: count > 0) */
    int frame;       /* the frame's index in the thread's stack, 0 the innermost */
    int place;       /* an hl_lock_place */
    int slot;        /* the slot's index in the frame's localsplus */
} hl_lock_ref;

#define HL_LOCK_TYPES 64

/* The types met so far (one dump's): address, and what it is. */
typedef struct hl_lock_types {
    uintptr_t address[HL_LOCK_TYPES];
    uint8_t what[HL_LOCK_TYPES];
    int count;
} hl_lock_types;

/* Appends to *refs (*count of them, *capacity allocated) the locks held in a thread's frames,
 * the depth of them at frames (their addresses in process pid, innermost first, as frames.h's
 * hl_walk_addresses gives them). Returns 0, or -1 out of memory; an unreadable frame shows no
 * locks. Does nothing when the layout has no lock layout (r->lock_layout 0). */
int hl_locks_read(int pid, const hl_remote_layout *r, hl_lock_types *types, const uintptr_t *frames,
                  int depth, hl_lock_ref **refs, size_t *count, size_t *capacity);

#endif
