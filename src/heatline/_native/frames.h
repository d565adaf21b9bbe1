/* frames.h: reading a thread's Python stack without its cooperation and without the GIL.
 *
 * The walker follows the frame chain of a PyThreadState with hl_memread (never a plain load),
 * so a frame popped or freed under it yields a failed walk, not a crash. Each code object met
 * is described once in a cache keyed by its address: file, function, whether it is user code
 * (asked of scope.h once per file), and a private copy of its line table, so a frame costs two
 * small reads once warm. Because a freed code object's address can be reused, every lookup
 * re-reads the code object's header and compares it with the cached one before trusting the
 * entry.
 *
 * The walker is the engine's (engine.c): the sampler thread walks with it at each tick, the
 * memory and GPU parts (hl_engine_current_line_locked) and the test hooks under the engine lock;
 * hl_walker_clear runs after the sampler has stopped. heatline dump (remote.c) has one of its
 * own that reads another process (pid set, the layout that process's version has); it knows
 * nothing of CPython's headers, only the layout's offsets and type addresses.
 */
#ifndef HEATLINE_FRAMES_H
#define HEATLINE_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "compat.h"
#include "scope.h" /* which files are user code: the walker's scope */
#include "stats.h"

typedef struct hl_code {
    /* identity, re-checked on every lookup */
    uintptr_t address, filename, name, qualname, linetable, bytecode;
    int first_line;
    intptr_t size;
    /* what it resolved to */
    uint32_t file, function;
    int user;
    uint8_t *table; /* owned copy of the line table */
    size_t table_length;
    uintptr_t code_start; /* address of the first bytecode byte */
    size_t code_bytes;
} hl_code;

typedef struct hl_frame {
    uint32_t file, function;
    int line;
    int user;
} hl_frame;

typedef struct hl_walker {
    int pid; /* whose memory: 0 for this process's (hl_memread), else another's */
    hl_layout layout;
    hl_scope scope;
    uint8_t opcode_flags[256]; /* HL_OP_* flags of each opcode number */
    hl_stats *stats;           /* where files and functions are interned */
    hl_code *codes;
    size_t ncodes, codes_capacity;
    hl_map code_index;
} hl_walker;

/* Opcode flags (the table comes from heatline/_opcodes.py). */
#define HL_OP_CALL 1   /* calls into other code: the thread is inside what the frame called */
#define HL_OP_SWITCH 2 /* checks for a GIL drop request: where threads hand the GIL over */
/* < 3.10: checks after it, but may also run C code that released the GIL (an operator) */
#define HL_OP_SWITCH_CONTENDED 4
/* EXTENDED_ARG: a prefix; 3.9/3.10 leave f_lasti on it while the next instruction runs */
#define HL_OP_PREFIX 8

/* Reads the stack of the thread whose PyThreadState is at tstate into frames (innermost
 * first), and the HL_OP_* flags of the instruction its innermost frame is executing into
 * *leaf_flags (0 if unknown). Returns the depth (0: no Python frame), or -1 if not even the
 * thread's innermost frame could be read. With complete non-NULL, a walk that met an
 * unreadable frame returns the frames read before it (innermost first) with *complete = 0
 * (1 when the chain was read to its end or to max_depth); with complete NULL it returns -1. */
int hl_walk(hl_walker *w, uintptr_t tstate, hl_frame *frames, int max_depth, int *leaf_flags,
            int *complete);

/* The innermost user frame of the thread at tstate, its line decoded (the other frames' lines
 * are not): 1 with *frame set, 0 if it has none, -1 if the stack could not be read. */
int hl_walk_user(hl_walker *w, uintptr_t tstate, hl_frame *frame);

/* The line of a byte offset in a code object, read through the same cache (a test hook).
 * Returns the line, or -1 with *ok = 0 if the object cannot be read as code. */
int hl_walker_line_of(hl_walker *w, uintptr_t code, int offset_bytes, int *ok);

void hl_walker_clear(hl_walker *w);

#endif
