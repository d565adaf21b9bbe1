/* frames.h: reading a thread's Python stack without its cooperation and without the GIL.
 *
 * The walker follows the frame chain of a PyThreadState with hl_memread (never a plain load),
 * so a frame popped or freed under it yields a failed walk, not a crash. Each code object met
 * is described once in a cache keyed by its address: file, function, whether it is user code
 * (asked of scope.h once per file), and a private copy of its line table. Because a freed
 * code object's address can be reused, each walk re-reads the header of every code object it
 * meets (once per walk) and compares it with the cached one before trusting the entry. The
 * sampler reads frames a page-aligned window at a time (HL_WALK_WINDOW): a caller's frame
 * usually lies in the same window, so a deep stack costs a read per window of frames, not per
 * frame.
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

#define HL_CODE_LINES_CACHED 8
#define HL_SHIM_CODES 4

typedef struct hl_code {
    /* identity, re-checked on every lookup */
    uintptr_t address, filename, name, qualname, linetable, bytecode;
    int first_line;
    intptr_t size;
    /* what it resolved to */
    uint32_t file, function;
    int user;
    int shim; /* one of CPython's own code objects that run no Python source (file and function
               * unset): a frame running it is stepped over */
    uint8_t *table; /* owned copy of the line table */
    size_t table_length;
    uintptr_t code_start; /* address of the first bytecode byte */
    size_t code_bytes;
    /* Offsets decoded to lines lately, and their lines (slot: the offset's instruction
     * number modulo HL_CODE_LINES_CACHED): a caller's frame stays at its call from sample to
     * sample, a loop allocates at a few places, and decoding walks the table from its start
     * (3,600 instructions a lookup in bench/'s fannkuch, where a single entry missed on most
     * allocation samples). */
    int cached_offset[HL_CODE_LINES_CACHED], cached_line[HL_CODE_LINES_CACHED];
} hl_code;

typedef struct hl_frame {
    uint32_t file, function;
    int line;
    int user;
} hl_frame;

/* The sampler's walks read frames through a window of this many bytes, aligned to its size: a
 * frame's whole page is readable when the frame is, and callers' frames sit beside it (3.11+
 * push frames one after the other in the thread's data stack; 3.9/3.10 frame objects share
 * allocator pools). */
#define HL_WALK_WINDOW 4096
/* Code objects a walk remembers having checked (a recursion runs one or a few). */
#define HL_WALK_CHECKED 8
/* The sampler's walks read ahead (frames.c, read_ahead): the first HL_WALK_AHEAD frames of the
 * chain, then, in one system call, the headers of their code objects and the innermost frame's
 * next code units, which the walk would otherwise read one at a time. */
#define HL_WALK_AHEAD 32
#define HL_FRAME_BYTES 128       /* >= every layout's frame_read_size */
#define HL_CODE_HEADER_BYTES 512 /* >= every layout's code_read_size */
#define HL_LEAF_BYTES 8          /* an instruction and the three after it: its prefixes' end */

typedef struct hl_walker {
    int pid; /* whose memory: 0 for this process's (hl_memread), else another's */
    hl_layout layout;
    hl_scope scope;
    uint8_t opcode_flags[256]; /* HL_OP_* flags of each opcode number */
    hl_stats *stats;           /* where files and functions are interned */
    hl_code *codes;
    size_t ncodes, codes_capacity;
    /* Addresses of the shim code objects described so far (a process has one or two, which
     * live as long as its interpreter): past the stack's kept inner part a frame's code is not
     * looked up, only compared with these. */
    uintptr_t shim_codes[HL_SHIM_CODES];
    int nshim_codes;
    hl_map code_index;
    /* One walk's reads (reset as each walk starts, so nothing is stale across walks): the
     * window last read, and the code objects whose headers were checked during the walk. */
    int window_on;       /* this walk reads frames through the window (hl_walk_sample's) */
    uintptr_t window_at; /* 0: none */
    uint8_t window[HL_WALK_WINDOW];
    uintptr_t checked[HL_WALK_CHECKED];
    uint32_t checked_index[HL_WALK_CHECKED];
    int nchecked;
    /* What read_ahead read for this walk, used while ahead_on: frames (in chain order; the
     * walk looks them up from ahead_next on), code object headers (ok: read whole), and the
     * bytes at the innermost frame's instruction pointer. */
    int ahead_on;
    int nahead_frames, ahead_next;
    uintptr_t ahead_frame[HL_WALK_AHEAD];
    uint8_t ahead_frame_bytes[HL_WALK_AHEAD][HL_FRAME_BYTES];
    int nahead_codes;
    uintptr_t ahead_code[HL_WALK_AHEAD];
    uint8_t ahead_code_ok[HL_WALK_AHEAD];
    uint8_t ahead_code_bytes[HL_WALK_AHEAD][HL_CODE_HEADER_BYTES];
    uintptr_t ahead_leaf; /* 0: none */
    uint8_t ahead_leaf_ok;
    uint8_t ahead_leaf_bytes[HL_LEAF_BYTES];
} hl_walker;

/* Opcode flags (the table comes from heatline/engine/opcodes.py). */
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
/* hl_walk, also giving the address of each frame read: addresses[i] is frames[i]'s (the
 * PyFrameObject or _PyInterpreterFrame its model has), for a reader of its contents. */
int hl_walk_addresses(hl_walker *w, uintptr_t tstate, hl_frame *frames, uintptr_t *addresses,
                      int max_depth, int *leaf_flags, int *complete);

/* A thread's stack as the sampler records it (hl_walk_sample). A stack of up to HL_MAX_DEPTH
 * frames is kept whole. A deeper one keeps both ends: its innermost HL_MAX_DEPTH - 1 -
 * HL_OUTER_DEPTH frames and its outermost HL_OUTER_DEPTH (the program's entry, the callers of
 * a deep recursion), and counts the frames between them, so that every function at either end
 * keeps its inclusive time (stats.h: the marker the stack table records in their place). */
typedef struct hl_sampled_stack {
    int depth;       /* frames kept in frames[] */
    int inner;       /* frames[0..inner-1]: the innermost frames, innermost first; then, when
                      * frames were elided, the outermost ones, innermost first */
    uint32_t elided; /* frames of the chain between the two parts (0: none, inner == depth) */
    int elided_kept; /* 1: every function of the elided frames is also in a kept frame */
    int bottomless;  /* the chain went on past what the walker follows (MAX_FRAMES_VISITED):
                      * no outer part, elided counts the frames followed past the inner part */
    hl_frame user;   /* the innermost user frame, wherever it is (also among elided frames) */
    int has_user;
    int leaf_flags;  /* HL_OP_* flags of the innermost frame's instruction (0 if unknown) */
    int complete;    /* 0: an unreadable frame (a torn walk): only the innermost frames read
                      * (depth == inner) and the user frame, if met, are valid */
    hl_frame frames[HL_MAX_DEPTH]; /* last: the fields above are cleared apart from it */
} hl_sampled_stack;

/* Reads the stack of the thread at tstate into *s as described above. Returns s->depth, or -1
 * if not even the thread's innermost frame could be read. */
int hl_walk_sample(hl_walker *w, uintptr_t tstate, hl_sampled_stack *s);

/* The innermost user frame of the thread at tstate, its line decoded (the other frames' lines
 * are not): 1 with *frame set, 0 if it has none, -1 if the stack could not be read. */
int hl_walk_user(hl_walker *w, uintptr_t tstate, hl_frame *frame);

/* One frame read at an address (no chain followed): a suspended generator's or coroutine's
 * frame (compat.h: hl_compat_suspended_frame), its line decoded. Returns 0 with *frame set, or
 * -1 if it cannot be read as a frame running code. */
int hl_walk_frame_at(hl_walker *w, uintptr_t address, hl_frame *frame);

/* The line of a byte offset in a code object, read through the same cache (a test hook).
 * Returns the line, or -1 with *ok = 0 if the object cannot be read as code. */
int hl_walker_line_of(hl_walker *w, uintptr_t code, int offset_bytes, int *ok);

void hl_walker_clear(hl_walker *w);

#endif
