/* frames.c: see frames.h. */
#include "frames.h"

#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "linetable.h"
#include "memread.h"
#include "unaligned.h"

#define MAX_STRING (1u << 24)    /* longest file or function name copied, in code points */
#define MAX_TABLE (1u << 20)     /* largest line table copied */
#define MAX_FRAMES_VISITED 4096  /* guards against a cycle in a torn chain */

/* ---- reading objects ----------------------------------------------------------------- */

/* Appends code point cp as UTF-8 to out (capacity checked by the caller: 4 bytes free). */
static size_t put_utf8(char *out, uint32_t cp) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Reads through the walker's target: this process, or another one (remote.c). */
static int read_memory(const hl_walker *w, void *dst, uintptr_t src, size_t n) {
    return w->pid == 0 ? hl_memread(dst, src, n)
                       : (hl_memread_remote(w->pid, dst, src, n) ? -1 : 0);
}

/* Copies the str object at address into a new NUL-terminated buffer (*out, freed by the
 * caller) as UTF-8, whole: names are never cut, so two paths that differ only late stay two
 * files. Lone surrogates (a path's undecodable bytes under surrogateescape) are encoded like
 * any other code point, so the bytes round-trip with the "surrogatepass" error handler.
 * Only compact strings are read; every name CPython stores in a code object is compact.
 * The str header is read by the layout's offsets, which are another version's for another
 * process. Returns the length, or -1 if the object is not a readable str (or is absurdly
 * long). */
static int read_str(const hl_walker *w, uintptr_t address, char **out) {
    const hl_layout *l = &w->layout;
    uint8_t header[HL_CODE_HEADER_BYTES];
    *out = NULL;
    size_t need = l->str_state + sizeof(uint32_t);
    if (need > sizeof(header) || read_memory(w, header, address, need) != 0) return -1;
    if (hl_load_word(header, l->object_type) != l->str_type) return -1;
    uint32_t state = hl_load_u32(header, l->str_state);
    if (!HL_STR_COMPACT(state)) return -1;
    intptr_t length = (intptr_t)hl_load_word(header, l->str_length);
    if (length < 0 || (size_t)length > MAX_STRING) return -1;
    unsigned kind = HL_STR_KIND(state);
    uintptr_t data = address + (HL_STR_ASCII(state) ? l->str_ascii_size : l->str_compact_size);
    if (kind != 1 && kind != 2 && kind != 4) return -1;
    size_t count = (size_t)length;
    uint8_t *raw = malloc(count * kind + 1);
    char *text = malloc(count * 4 + 1);
    if (raw == NULL || text == NULL || (count && read_memory(w, raw, data, count * kind) != 0)) {
        free(raw);
        free(text);
        return -1;
    }
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
        uint32_t cp;
        if (kind == 1) cp = raw[i];
        else if (kind == 2) cp = ((uint16_t *)(void *)raw)[i];
        else cp = ((uint32_t *)(void *)raw)[i];
        if (cp > 0x10FFFF) { /* not a code point: a torn read */
            free(raw);
            free(text);
            return -1;
        }
        used += put_utf8(text + used, cp);
    }
    free(raw);
    text[used] = '\0';
    *out = text;
    return (int)used;
}

/* Reads a bytes object: its length and data address. Returns 0 or -1. */
static int read_bytes_header(const hl_walker *w, uintptr_t address, size_t *length,
                             uintptr_t *data) {
    const hl_layout *l = &w->layout;
    uint8_t header[64];
    size_t need = l->bytes_data;
    if (need > sizeof(header) || read_memory(w, header, address, need) != 0) return -1;
    if (hl_load_word(header, l->object_type) != l->bytes_type) return -1;
    intptr_t size = (intptr_t)hl_load_word(header, l->bytes_size);
    if (size < 0) return -1;
    *length = (size_t)size;
    *data = address + l->bytes_data;
    return 0;
}

/* ---- the code cache ------------------------------------------------------------------ */

static int is_shim_code(const hl_walker *w, uintptr_t address) {
    for (int i = 0; i < w->nshim_codes; i++)
        if (w->shim_codes[i] == address) return 1;
    return 0;
}

static void forget_shim_code(hl_walker *w, uintptr_t address) {
    for (int i = 0; i < w->nshim_codes; i++)
        if (w->shim_codes[i] == address) {
            w->shim_codes[i] = w->shim_codes[--w->nshim_codes];
            return;
        }
}

/* Fills *c from the code object at address whose header was just read into header.
 * Returns 0 or -1 (unreadable, or out of memory). */
static int describe_code(hl_walker *w, uintptr_t address, const uint8_t *header, hl_code *c) {
    const hl_layout *l = &w->layout;
    char *path = NULL, *name = NULL, *qualname = NULL;
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < HL_CODE_LINES_CACHED; i++) c->cached_offset[i] = -1;
    c->address = address;
    c->filename = hl_load_word(header, l->code_filename);
    c->name = hl_load_word(header, l->code_name);
    c->qualname = hl_load_word(header, l->code_qualname);
    c->linetable = hl_load_word(header, l->code_linetable);
    c->first_line = hl_load_int(header, l->code_firstlineno);
    if (l->frame_model == HL_FRAMES_OBJECTS) {
        c->bytecode = hl_load_word(header, l->code_code);
        if (read_bytes_header(w, c->bytecode, &c->code_bytes, &c->code_start) != 0) return -1;
    } else {
        c->size = (intptr_t)hl_load_word(header, l->code_size);
        if (c->size < 0) return -1;
        c->code_start = address + l->code_adaptive;
        c->code_bytes = (size_t)c->size * 2;
    }

    int path_length = read_str(w, c->filename, &path);
    if (path_length < 0 || read_str(w, c->name, &name) < 0 ||
        read_str(w, c->qualname, &qualname) < 0)
        goto fail_names;

    uintptr_t table_data;
    if (read_bytes_header(w, c->linetable, &c->table_length, &table_data) != 0) goto fail_names;
    if (c->table_length > MAX_TABLE) goto fail_names;
    c->table = malloc(c->table_length ? c->table_length : 1);
    if (c->table == NULL) goto fail_names;
    if (c->table_length && read_memory(w, c->table, table_data, c->table_length) != 0)
        goto fail_table;

    /* CPython's shim code objects: 3.12's interpreter trampoline (file "<shim>"), the code of
     * the entry frame that marks where C called into the interpreter, seen when a frame is
     * read before its owner byte says so; and 3.13's _Py_InitCleanup (file and name
     * "__init__", first line 0 where compiled source starts at 1), the frame under a class's
     * Python __init__ that checks it returned None. Neither is a line of anyone's program. */
    if (l->frame_model != HL_FRAMES_OBJECTS &&
        ((strcmp(path, "<shim>") == 0 && strcmp(name, "<interpreter trampoline>") == 0) ||
         (c->first_line == 0 && strcmp(path, "__init__") == 0 && strcmp(name, "__init__") == 0))) {
        c->shim = 1;
        c->file = c->function = 0;
        c->user = 0;
        if (w->nshim_codes < HL_SHIM_CODES && !is_shim_code(w, address))
            w->shim_codes[w->nshim_codes++] = address;
        goto done;
    }

    /* The scope is decided when a file is first interned; later calls return the same id. */
    int64_t file =
        hl_stats_file(w->stats, path, (size_t)path_length, hl_scope_is_user(&w->scope, path));
    if (file < 0) goto fail_table;
    int64_t function = hl_stats_function(w->stats, (uint32_t)file, name, qualname, c->first_line);
    if (function < 0) goto fail_table;
    c->file = (uint32_t)file;
    c->function = (uint32_t)function;
    c->user = w->stats->files[file].user;
done:
    free(path);
    free(name);
    free(qualname);
    return 0;
fail_table:
    free(c->table);
    c->table = NULL;
fail_names:
    free(path);
    free(name);
    free(qualname);
    return -1;
}

static int same_identity(const hl_walker *w, const hl_code *c, const uint8_t *header) {
    const hl_layout *l = &w->layout;
    if (c->filename != hl_load_word(header, l->code_filename)) return 0;
    if (c->name != hl_load_word(header, l->code_name)) return 0;
    if (c->qualname != hl_load_word(header, l->code_qualname)) return 0;
    if (c->linetable != hl_load_word(header, l->code_linetable)) return 0;
    if (c->first_line != hl_load_int(header, l->code_firstlineno)) return 0;
    if (l->frame_model == HL_FRAMES_OBJECTS)
        return c->bytecode == hl_load_word(header, l->code_code);
    return c->size == (intptr_t)hl_load_word(header, l->code_size);
}

/* Notes that the code object at address (cache entry index) was checked during this walk. */
static hl_code *checked(hl_walker *w, uintptr_t address, uint32_t index) {
    int slot =
        w->nchecked < HL_WALK_CHECKED ? w->nchecked++ : (int)((address >> 4) % HL_WALK_CHECKED);
    w->checked[slot] = address;
    w->checked_index[slot] = index;
    return &w->codes[index];
}

/* Forgets what the previous walk read: every walk reads the thread's memory afresh. With
 * window set, frames are read a window at a time: only the sampler's walks, which read
 * through the kernel. A thread reading its own stack (hl_memread_direct: plain loads) reads
 * each frame alone, so that it never loads the memory around a frame, which the allocator
 * may have given nobody (ASan and valgrind would rightly call that an invalid read). */
static void walk_begins(hl_walker *w, int window) {
    w->window_on = window;
    w->window_at = 0;
    w->nchecked = 0;
    w->ahead_on = 0;
}

/* Copies n bytes of a frame at address through the walk's window: one read per window of
 * frames instead of one per frame. Returns 0 or -1. */
static int read_through_window(hl_walker *w, void *out, uintptr_t address, size_t n) {
    uintptr_t start = address & ~(uintptr_t)(HL_WALK_WINDOW - 1);
    if (!w->window_on || address - start + n > HL_WALK_WINDOW)
        return read_memory(w, out, address, n);
    if (w->window_at != start || start == 0) {
        /* The window lies within one page (pages are multiples of it), and the frame's page
         * is readable if the frame is. */
        w->window_at = 0;
        if (start == 0 || read_memory(w, w->window, start, HL_WALK_WINDOW) != 0) return -1;
        w->window_at = start;
    }
    memcpy(out, w->window + (address - start), n);
    return 0;
}

/* The header of the code object at address (code_read_size bytes): read ahead in this walk,
 * else read now into buffer. NULL if unreadable. */
static const uint8_t *read_code_header(hl_walker *w, uintptr_t address, uint8_t *buffer) {
    if (address == 0) return NULL;
    if (w->ahead_on)
        for (int i = 0; i < w->nahead_codes; i++)
            if (w->ahead_code[i] == address && w->ahead_code_ok[i]) return w->ahead_code_bytes[i];
    return read_memory(w, buffer, address, w->layout.code_read_size) == 0 ? buffer : NULL;
}

/* The cache entry for the code object at address, or NULL if it is not a readable code
 * object. The pointer stays valid until the next call. A code object checked earlier in the
 * same walk is not read again: a deep recursion's frames all run one, and a frame on the
 * stack keeps its code object alive. */
static hl_code *lookup_code(hl_walker *w, uintptr_t address) {
    const hl_layout *l = &w->layout;
    uint8_t buffer[HL_CODE_HEADER_BYTES];
    for (int i = 0; i < w->nchecked; i++)
        if (w->checked[i] == address) return &w->codes[w->checked_index[i]];
    const uint8_t *header = read_code_header(w, address, buffer);
    if (header == NULL) return NULL;
    if (hl_load_word(header, l->object_type) != l->code_type) return NULL;

    uint32_t index;
    int cached = hl_map_get(&w->code_index, address, &index);
    if (cached && same_identity(w, &w->codes[index], header)) return checked(w, address, index);

    hl_code fresh;
    if (describe_code(w, address, header, &fresh) != 0) return NULL;
    if (cached) { /* the address was reused by another code object */
        if (!fresh.shim) forget_shim_code(w, address);
        free(w->codes[index].table);
        w->codes[index] = fresh;
        return checked(w, address, index);
    }
    if (HL_ARRAY_RESERVE(w->codes, w->codes_capacity, w->ncodes + 1, 256) != 0) goto fail_fresh;
    if (hl_map_put(&w->code_index, address, (uint32_t)w->ncodes) != 0) goto fail_fresh;
    w->codes[w->ncodes] = fresh;
    return checked(w, address, (uint32_t)w->ncodes++);
fail_fresh:
    free(fresh.table);
    return NULL;
}

static int line_of(const hl_walker *w, hl_code *c, int offset_bytes) {
    if (offset_bytes < 0 || (size_t)offset_bytes >= c->code_bytes) return c->first_line;
    size_t slot = ((unsigned)offset_bytes / 2) % HL_CODE_LINES_CACHED;
    if (offset_bytes == c->cached_offset[slot]) return c->cached_line[slot];
    int line = hl_line_for_offset(w->layout.linetable_format, c->table, c->table_length,
                                  c->first_line, offset_bytes);
    c->cached_offset[slot] = offset_bytes;
    c->cached_line[slot] = line > 0 ? line : c->first_line;
    return c->cached_line[slot];
}

int hl_walker_line_of(hl_walker *w, uintptr_t code, int offset_bytes, int *ok) {
    walk_begins(w, 0);
    hl_code *c = lookup_code(w, code);
    *ok = c != NULL && !c->shim;
    if (!*ok) return -1;
    if (offset_bytes < 0 || (size_t)offset_bytes >= c->code_bytes) return -1;
    return hl_line_for_offset(w->layout.linetable_format, c->table, c->table_length, c->first_line,
                              offset_bytes);
}

/* ---- walking ------------------------------------------------------------------------- */

static uintptr_t innermost_frame(const hl_walker *w, uintptr_t tstate, int *ok) {
    const hl_layout *l = &w->layout;
    uintptr_t frame = 0;
    *ok = read_memory(w, &frame, tstate + l->tstate_frame, sizeof(frame)) == 0;
    if (*ok && l->frame_model == HL_FRAMES_CFRAME && frame != 0) /* frame is the _PyCFrame */
        *ok = read_memory(w, &frame, frame + l->cframe_current_frame, sizeof(frame)) == 0;
    return *ok ? frame : 0;
}

/* Copies n bytes of the frame at address: as read ahead in this walk (the walk follows the
 * chain read_ahead followed, so the next frame is looked for first), else through the window. */
static int read_frame_bytes(hl_walker *w, uint8_t *out, uintptr_t address, size_t n) {
    if (w->ahead_on) {
        int i = w->ahead_next;
        if (i >= w->nahead_frames || w->ahead_frame[i] != address)
            for (i = 0; i < w->nahead_frames && w->ahead_frame[i] != address; i++) {
            }
        if (i < w->nahead_frames) {
            memcpy(out, w->ahead_frame_bytes[i], n);
            w->ahead_next = i + 1;
            return 0;
        }
    }
    return read_through_window(w, out, address, n);
}

/* What read_frame found at an address. */
enum { FRAME_TORN = -1, FRAME_SHIM = 0, FRAME_CODE = 1 };

/* Reads the frame at address into buffer (HL_FRAME_BYTES bytes): the frame it returns to into
 * *previous and the code object it runs into *code (not checked yet). FRAME_TORN: unreadable,
 * or no longer a running frame (the thread returned past it while we read: frames live in
 * memory the interpreter reuses and unmaps). FRAME_SHIM: a frame marking a C-stack entry, not
 * Python code, to step over. */
static int parse_frame(const hl_walker *w, const uint8_t *buffer, uintptr_t *previous,
                       uintptr_t *code) {
    const hl_layout *l = &w->layout;
    /* 3.9/3.10: a frame object that was freed while we read (the thread returned past it) has
     * a reference count of 0 and its f_back links the interpreter's free list of frames, which
     * ends in NULL: followed, it looked like a whole stack of library frames with no user
     * frame, and its time was called unattributed. A frame being run is always referenced.
     * (ob_refcnt is the object's first word.) */
    if (l->frame_model == HL_FRAMES_OBJECTS && (intptr_t)hl_load_word(buffer, 0) <= 0)
        return FRAME_TORN;
    *code = hl_load_word(buffer, l->frame_code) & ~l->code_tag_bits;
    *previous = hl_load_word(buffer, l->frame_previous);
    if (l->frame_model != HL_FRAMES_OBJECTS && l->owner_interpreter >= 0 &&
        (int)(signed char)buffer[l->frame_owner] >= l->owner_interpreter)
        return FRAME_SHIM;
    return FRAME_CODE;
}

static int read_frame(hl_walker *w, uintptr_t address, uint8_t *buffer, uintptr_t *previous,
                      uintptr_t *code) {
    if (read_frame_bytes(w, buffer, address, w->layout.frame_read_size) != 0) return FRAME_TORN;
    return parse_frame(w, buffer, previous, code);
}

/* The code object a frame read as FRAME_CODE runs: its cache entry, or NULL with *shim = 1
 * for a frame to step over (3.13 shim frames hold None; a shim code object), or NULL with
 * *shim = 0 for a torn read. */
static hl_code *code_of(hl_walker *w, uintptr_t code_address, int *shim) {
    hl_code *c = lookup_code(w, code_address);
    if (c != NULL && c->shim) {
        *shim = 1;
        return NULL;
    }
    *shim = c == NULL && w->layout.frame_model == HL_FRAMES_CURRENT && code_address != 0;
    return c;
}

/* The frame (function and line) of a frame read into buffer that runs c. With leaf_flags
 * non-NULL (the innermost frame), also the HL_OP_* flags of the instruction it executes. */
static hl_frame decode_frame(const hl_walker *w, hl_code *c, const uint8_t *buffer,
                             int *leaf_flags) {
    const hl_layout *l = &w->layout;
    int offset_bytes;
    uintptr_t instruction;
    if (l->frame_model == HL_FRAMES_OBJECTS) {
        int lasti = hl_load_int(buffer, l->frame_instr);
        offset_bytes = lasti < 0 ? -1 : (l->linetable_format == HL_LNOTAB_39 ? lasti : lasti * 2);
        instruction = offset_bytes < 0 ? 0 : c->code_start + (uintptr_t)offset_bytes;
    } else {
        instruction = hl_load_word(buffer, l->frame_instr);
        offset_bytes = instruction >= c->code_start && instruction < c->code_start + c->code_bytes
                           ? (int)(instruction - c->code_start)
                           : -1;
    }
    if (leaf_flags != NULL && offset_bytes >= 0 && (size_t)offset_bytes < c->code_bytes) {
        /* The first byte of a code unit is its opcode (little-endian); a prefix's flags are
         * those of the instruction it prefixes (at most three prefixes in a row). */
        uint8_t opcode;
        for (int unit = 0; unit < 4 && (size_t)offset_bytes + 2 * (size_t)unit < c->code_bytes;
             unit++) {
            if (w->ahead_on && w->ahead_leaf_ok && w->ahead_leaf == instruction)
                opcode = w->ahead_leaf_bytes[2 * unit];
            else if (read_memory(w, &opcode, instruction + 2 * (uintptr_t)unit, 1) != 0) break;
            *leaf_flags = w->opcode_flags[opcode];
            if (!(*leaf_flags & HL_OP_PREFIX)) break;
        }
        *leaf_flags &= ~HL_OP_PREFIX;
    }
    return (hl_frame){c->file, c->function, line_of(w, c, offset_bytes), c->user};
}

/* The walk behind hl_walk and hl_walk_user: with first_user set, frames before the first user
 * frame are skipped without decoding their lines, and the walk ends at that frame. A walk
 * that meets an unreadable frame stops there with *complete = 0 and returns the frames read
 * so far. */
static int walk(hl_walker *w, uintptr_t tstate, hl_frame *frames, uintptr_t *addresses,
                int max_depth, int *leaf_flags, int first_user, int *complete) {
    int ok;
    walk_begins(w, 0);
    uintptr_t frame = innermost_frame(w, tstate, &ok);
    int depth = 0;
    *leaf_flags = 0;
    *complete = 0;
    if (!ok) return -1;

    for (int visited = 0; frame != 0 && depth < max_depth; visited++) {
        uint8_t buffer[HL_FRAME_BYTES];
        uintptr_t previous, code_address;
        int shim;
        if (visited >= MAX_FRAMES_VISITED) return depth;
        int kind = read_frame(w, frame, buffer, &previous, &code_address);
        if (kind == FRAME_TORN) return depth;
        hl_code *c = kind == FRAME_SHIM ? NULL : code_of(w, code_address, &shim);
        if (c == NULL) {
            if (kind == FRAME_SHIM || shim) {
                frame = previous;
                continue;
            }
            return depth;
        }
        if (first_user && !c->user) {
            frame = previous;
            continue;
        }
        frames[depth] = decode_frame(w, c, buffer, depth == 0 && !first_user ? leaf_flags : NULL);
        if (addresses != NULL) addresses[depth] = frame;
        depth++;
        if (first_user) break;
        frame = previous;
    }
    *complete = 1;
    return depth;
}

int hl_walk_frame_at(hl_walker *w, uintptr_t address, hl_frame *frame) {
    uint8_t buffer[HL_FRAME_BYTES];
    uintptr_t previous, code_address;
    int shim;
    walk_begins(w, 0);
    if (address == 0 || read_frame(w, address, buffer, &previous, &code_address) != FRAME_CODE)
        return -1;
    hl_code *c = code_of(w, code_address, &shim);
    if (c == NULL) return -1;
    *frame = decode_frame(w, c, buffer, NULL);
    return 0;
}

int hl_walk(hl_walker *w, uintptr_t tstate, hl_frame *frames, int max_depth, int *leaf_flags,
            int *complete) {
    return hl_walk_addresses(w, tstate, frames, NULL, max_depth, leaf_flags, complete);
}

int hl_walk_addresses(hl_walker *w, uintptr_t tstate, hl_frame *frames, uintptr_t *addresses,
                      int max_depth, int *leaf_flags, int *complete) {
    int whole;
    int depth = walk(w, tstate, frames, addresses, max_depth, leaf_flags, 0, &whole);
    if (complete != NULL) *complete = whole;
    else if (!whole) return -1;
    return depth;
}

int hl_walk_user(hl_walker *w, uintptr_t tstate, hl_frame *frame) {
    int flags, complete;
    int found = walk(w, tstate, frame, NULL, 1, &flags, 1, &complete);
    if (found == 1) return 1;
    return complete ? 0 : -1;
}

/* ---- the sampler's read-ahead ---------------------------------------------------------- */

/* Follows the chain from frame for up to HL_WALK_AHEAD frames (through the window, as the walk
 * would), then reads in one system call the headers of the distinct code objects they run and
 * the code units at the innermost code frame's instruction pointer (3.11+, whose frames hold
 * that pointer). The walk then takes these where it would read each in its turn: one system
 * call with a piece per header instead of a call per header. They are the same bytes read a
 * few microseconds earlier, and the walk checks them as it checked its own reads (identity of
 * the code objects, the frames' liveness); a piece that could not be read is read again on its
 * own when the walk needs it. */
static void read_ahead(hl_walker *w, uintptr_t frame) {
    const hl_layout *l = &w->layout;
    struct iovec local[HL_WALK_AHEAD + 1], remote[HL_WALK_AHEAD + 1];
    uint8_t ok[HL_WALK_AHEAD + 1];
    size_t pieces = 0;
    w->nahead_frames = w->ahead_next = w->nahead_codes = 0;
    w->ahead_leaf = 0;
    w->ahead_leaf_ok = 0;
    if (l->frame_read_size > HL_FRAME_BYTES || l->code_read_size > HL_CODE_HEADER_BYTES) return;
    while (frame != 0 && w->nahead_frames < HL_WALK_AHEAD) {
        uint8_t *bytes = w->ahead_frame_bytes[w->nahead_frames];
        uintptr_t previous, code;
        if (read_through_window(w, bytes, frame, l->frame_read_size) != 0) break;
        int kind = parse_frame(w, bytes, &previous, &code);
        if (kind == FRAME_TORN) break;
        w->ahead_frame[w->nahead_frames++] = frame;
        frame = previous;
        if (kind == FRAME_SHIM || code == 0 || code == l->none_object) continue;
        if (w->ahead_leaf == 0 && w->nahead_codes == 0 && l->frame_model != HL_FRAMES_OBJECTS)
            w->ahead_leaf = hl_load_word(bytes, l->frame_instr);
        int known = 0;
        for (int i = 0; i < w->nahead_codes && !known; i++) known = w->ahead_code[i] == code;
        if (known) continue;
        local[pieces] = (struct iovec){w->ahead_code_bytes[w->nahead_codes], l->code_read_size};
        remote[pieces++] = (struct iovec){(void *)code, l->code_read_size};
        w->ahead_code[w->nahead_codes++] = code;
    }
    if (w->ahead_leaf != 0) { /* last: if it runs off the end of a mapping, nothing follows */
        local[pieces] = (struct iovec){w->ahead_leaf_bytes, HL_LEAF_BYTES};
        remote[pieces++] = (struct iovec){(void *)w->ahead_leaf, HL_LEAF_BYTES};
    }
    if (pieces > 0) hl_memread_batch(w->pid, local, remote, pieces, ok);
    for (int i = 0; i < w->nahead_codes; i++) w->ahead_code_ok[i] = ok[i];
    if (w->ahead_leaf != 0) w->ahead_leaf_ok = ok[pieces - 1];
    w->ahead_on = 1;
}

/* ---- the sampler's walk: both ends of a deep stack ----------------------------------- */

/* Distinct code objects of an elided middle that are told apart; past this many, some of
 * its functions are taken to be missing from the kept frames (the cautious answer). A deep
 * recursion has one or a few. */
#define MIDDLE_CODES 32

typedef struct middle_code {
    uintptr_t code;
    uint32_t frames;
} middle_code;

/* Notes that a frame running code was elided. Returns 0, or -1 when the set is full. */
static int note_middle(middle_code *middle, int *count, uintptr_t code) {
    for (int i = *count - 1; i >= 0; i--) { /* the latest first: recursion repeats it */
        if (middle[i].code == code) {
            middle[i].frames++;
            return 0;
        }
    }
    if (*count >= MIDDLE_CODES) return -1;
    middle[(*count)++] = (middle_code){code, 1};
    return 0;
}

static int kept_function(const hl_sampled_stack *s, uint32_t function) {
    for (int i = 0; i < s->depth; i++)
        if (s->frames[i].function == function) return 1;
    return 0;
}

/* The chain is read once, innermost first. The first HL_MAX_DEPTH code frames are decoded
 * (function, line) as hl_walk does. Past them only each frame's address and code object are
 * noted (no line decoding; the frames come through the walk's window, so a deep recursion
 * costs a read per window of frames, not per frame), the latest HL_OUTER_DEPTH kept in a
 * ring: when the chain ends, the ring holds its outermost frames, which are decoded then (they
 * are the stack's oldest frames, so they are still there), and the frames between the
 * innermost part and the ring are the elided middle. Its distinct code objects are compared with the kept
 * frames' functions at the end, so that the profile can say whether a function's inclusive
 * time can miss anything. While no user frame has been met, frames past the innermost part
 * are looked up as well, to find the innermost user frame wherever it is. */
int hl_walk_sample(hl_walker *w, uintptr_t tstate, hl_sampled_stack *s) {
    enum { INNER = HL_MAX_DEPTH - 1 - HL_OUTER_DEPTH };
    uintptr_t ring[HL_OUTER_DEPTH], ring_code[HL_OUTER_DEPTH];
    int ring_next = 0, ring_used = 0;
    middle_code middle[MIDDLE_CODES];
    int nmiddle = 0, middle_full = 0;
    uint32_t past = 0; /* code frames read beyond the first HL_MAX_DEPTH */

    memset(s, 0, offsetof(hl_sampled_stack, frames));
    s->elided_kept = 1;
    int ok;
    walk_begins(w, 1); /* the sampler's thread: never a direct read */
    uintptr_t frame = innermost_frame(w, tstate, &ok);
    if (!ok) return -1;
    read_ahead(w, frame);

    for (int visited = 0; frame != 0; visited++) {
        uint8_t buffer[HL_FRAME_BYTES];
        uintptr_t previous, code_address;
        int shim;
        if (visited >= MAX_FRAMES_VISITED) {
            /* A chain this long (or a cycle in a torn one): its outer frames stay unknown, so
             * a tick's time stays bounded. The stack keeps its innermost part under a marker
             * counting the frames followed past it, none of whose functions count as kept. */
            if (past == 0) goto torn;
            s->depth = s->inner = INNER;
            s->elided = past + (HL_MAX_DEPTH - INNER);
            s->elided_kept = 0;
            s->bottomless = 1;
            s->complete = 1;
            return s->depth;
        }
        int kind = read_frame(w, frame, buffer, &previous, &code_address);
        if (kind == FRAME_TORN) goto torn;
        if (kind == FRAME_SHIM) {
            frame = previous;
            continue;
        }
        if (s->depth < HL_MAX_DEPTH) {
            hl_code *c = code_of(w, code_address, &shim);
            if (c == NULL) {
                if (!shim) goto torn;
                frame = previous;
                continue;
            }
            hl_frame f = decode_frame(w, c, buffer, s->depth == 0 ? &s->leaf_flags : NULL);
            if (c->user && !s->has_user) {
                s->user = f;
                s->has_user = 1;
            }
            s->frames[s->depth++] = f;
            if (s->depth <= INNER) {
                frame = previous;
                continue;
            }
        } else {
            /* 3.13 shim frames hold None; a code object of a frame being run is never NULL. */
            if (code_address == 0) goto torn;
            if ((w->layout.frame_model == HL_FRAMES_CURRENT && w->layout.none_object != 0 &&
                 code_address == w->layout.none_object) ||
                is_shim_code(w, code_address)) {
                frame = previous;
                continue;
            }
            if (!s->has_user) {
                hl_code *c = code_of(w, code_address, &shim);
                if (c == NULL) {
                    if (!shim) goto torn;
                    frame = previous;
                    continue;
                }
                if (c->user) {
                    s->user = decode_frame(w, c, buffer, NULL);
                    s->has_user = 1;
                }
            }
            past++;
        }
        /* Beyond the innermost part: into the ring; the frame it pushes out is elided (if
         * the chain goes on past HL_MAX_DEPTH at all: checked at the end). */
        if (ring_used == HL_OUTER_DEPTH) {
            if (note_middle(middle, &nmiddle, ring_code[ring_next]) != 0) middle_full = 1;
        } else {
            ring_used++;
        }
        ring[ring_next] = frame;
        ring_code[ring_next] = code_address;
        ring_next = (ring_next + 1) % HL_OUTER_DEPTH;
        frame = previous;
    }
    s->complete = 1;
    s->inner = s->depth;
    if (past == 0) return s->depth; /* the whole stack is in frames */

    /* The ring's frames, oldest first, are the outermost ones, innermost first. They are read
     * again (not taken from the read-ahead), to see that the thread is still in them. */
    w->ahead_on = 0;
    s->inner = INNER;
    s->depth = INNER;
    s->elided = past + (HL_MAX_DEPTH - INNER) - HL_OUTER_DEPTH;
    for (int k = 0; k < HL_OUTER_DEPTH; k++) {
        int slot = (ring_next + k) % HL_OUTER_DEPTH;
        uint8_t buffer[HL_FRAME_BYTES];
        uintptr_t previous, code_address;
        int shim;
        if (read_frame(w, ring[slot], buffer, &previous, &code_address) != FRAME_CODE ||
            code_address != ring_code[slot])
            goto torn; /* the thread returned past it since */
        hl_code *c = code_of(w, code_address, &shim);
        if (c == NULL) {
            if (!shim) goto torn;
            continue; /* not Python code: the stack's outer part is a frame shorter */
        }
        s->frames[s->depth++] = decode_frame(w, c, buffer, NULL);
    }
    if (middle_full) s->elided_kept = 0;
    for (int i = 0; i < nmiddle; i++) {
        int shim;
        hl_code *c = code_of(w, middle[i].code, &shim);
        if (c == NULL) {
            if (!shim) goto torn;
            s->elided -= middle[i].frames; /* not Python code: not a frame of the stack */
            continue;
        }
        if (!kept_function(s, c->function)) s->elided_kept = 0;
    }
    return s->depth;
torn:
    /* The innermost frames read are kept (and the user frame, if one was met); the caller
     * does not record a stack that is not whole. */
    s->complete = 0;
    if (s->depth > HL_MAX_DEPTH) s->depth = HL_MAX_DEPTH;
    s->inner = s->depth;
    s->elided = 0;
    s->bottomless = 0;
    return s->depth;
}

void hl_walker_clear(hl_walker *w) {
    for (size_t i = 0; i < w->ncodes; i++) free(w->codes[i].table);
    free(w->codes);
    hl_map_free(&w->code_index);
    hl_scope_clear(&w->scope);
    w->codes = NULL;
    w->ncodes = w->codes_capacity = 0;
    w->nshim_codes = 0;
}
