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
#define HEADER_BUFFER 512        /* >= every layout's code_read_size */
#define FRAME_BUFFER 128         /* >= every layout's frame_read_size */
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
    uint8_t header[HEADER_BUFFER];
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

/* Fills *c from the code object at address whose header was just read into header.
 * Returns 0 or -1 (unreadable, or out of memory). */
static int describe_code(hl_walker *w, uintptr_t address, const uint8_t *header, hl_code *c) {
    const hl_layout *l = &w->layout;
    char *path = NULL, *name = NULL, *qualname = NULL;
    memset(c, 0, sizeof(*c));
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

    /* The scope is decided when a file is first interned; later calls return the same id. */
    int64_t file =
        hl_stats_file(w->stats, path, (size_t)path_length, hl_scope_is_user(&w->scope, path));
    if (file < 0) goto fail_table;
    int64_t function = hl_stats_function(w->stats, (uint32_t)file, name, qualname, c->first_line);
    if (function < 0) goto fail_table;
    c->file = (uint32_t)file;
    c->function = (uint32_t)function;
    c->user = w->stats->files[file].user;
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

/* The cache entry for the code object at address, or NULL if it is not a readable code
 * object. The pointer stays valid until the next call. */
static hl_code *lookup_code(hl_walker *w, uintptr_t address) {
    const hl_layout *l = &w->layout;
    uint8_t header[HEADER_BUFFER];
    if (address == 0 || read_memory(w, header, address, l->code_read_size) != 0) return NULL;
    if (hl_load_word(header, l->object_type) != l->code_type) return NULL;

    uint32_t index;
    int cached = hl_map_get(&w->code_index, address, &index);
    if (cached && same_identity(w, &w->codes[index], header)) return &w->codes[index];

    hl_code fresh;
    if (describe_code(w, address, header, &fresh) != 0) return NULL;
    if (cached) { /* the address was reused by another code object */
        free(w->codes[index].table);
        w->codes[index] = fresh;
        return &w->codes[index];
    }
    if (HL_ARRAY_RESERVE(w->codes, w->codes_capacity, w->ncodes + 1, 256) != 0) goto fail_fresh;
    if (hl_map_put(&w->code_index, address, (uint32_t)w->ncodes) != 0) goto fail_fresh;
    w->codes[w->ncodes] = fresh;
    return &w->codes[w->ncodes++];
fail_fresh:
    free(fresh.table);
    return NULL;
}

static int line_of(const hl_walker *w, const hl_code *c, int offset_bytes) {
    if (offset_bytes < 0 || (size_t)offset_bytes >= c->code_bytes) return c->first_line;
    int line = hl_line_for_offset(w->layout.linetable_format, c->table, c->table_length,
                                  c->first_line, offset_bytes);
    return line > 0 ? line : c->first_line;
}

int hl_walker_line_of(hl_walker *w, uintptr_t code, int offset_bytes, int *ok) {
    hl_code *c = lookup_code(w, code);
    *ok = c != NULL;
    if (c == NULL) return -1;
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

/* The walk behind hl_walk and hl_walk_user: with first_user set, frames before the first user
 * frame are skipped without decoding their lines, and the walk ends at that frame. A walk
 * that meets an unreadable frame (the thread returned past it while we read: frames live in
 * memory the interpreter reuses and unmaps) stops there with *complete = 0 and returns the
 * frames read so far. */
static int walk(hl_walker *w, uintptr_t tstate, hl_frame *frames, int max_depth, int *leaf_flags,
                int first_user, int *complete) {
    const hl_layout *l = &w->layout;
    int ok;
    uintptr_t frame = innermost_frame(w, tstate, &ok);
    int depth = 0;
    *leaf_flags = 0;
    *complete = 0;
    if (!ok) return -1;

    for (int visited = 0; frame != 0 && depth < max_depth; visited++) {
        uint8_t buffer[FRAME_BUFFER];
        if (visited >= MAX_FRAMES_VISITED) return depth;
        if (read_memory(w, buffer, frame, l->frame_read_size) != 0) return depth;
        /* 3.9/3.10: a frame object that was freed while we read (the thread returned past
         * it) has a reference count of 0 and its f_back links the interpreter's free list of
         * frames, which ends in NULL: followed, it looked like a whole stack of library frames
         * with no user frame, and its time was called unattributed. A frame being run is
         * always referenced. (ob_refcnt is the object's first word.) */
        if (l->frame_model == HL_FRAMES_OBJECTS && (intptr_t)hl_load_word(buffer, 0) <= 0)
            return depth;
        uintptr_t code_address = hl_load_word(buffer, l->frame_code);
        uintptr_t previous = hl_load_word(buffer, l->frame_previous);
        if (l->frame_model != HL_FRAMES_OBJECTS && l->owner_cstack >= 0 &&
            (int)(signed char)buffer[l->frame_owner] == l->owner_cstack) {
            frame = previous; /* a shim frame marking a C-stack entry: not Python code */
            continue;
        }
        hl_code *c = lookup_code(w, code_address);
        if (c == NULL) {
            /* 3.13 shim frames hold None; anything else unreadable means a torn read. */
            if (l->frame_model == HL_FRAMES_CURRENT && code_address != 0) {
                frame = previous;
                continue;
            }
            return depth;
        }

        int offset_bytes;
        uintptr_t instruction;
        if (l->frame_model == HL_FRAMES_OBJECTS) {
            int lasti = hl_load_int(buffer, l->frame_instr);
            offset_bytes =
                lasti < 0 ? -1 : (l->linetable_format == HL_LNOTAB_39 ? lasti : lasti * 2);
            instruction = offset_bytes < 0 ? 0 : c->code_start + (uintptr_t)offset_bytes;
        } else {
            instruction = hl_load_word(buffer, l->frame_instr);
            offset_bytes =
                instruction >= c->code_start && instruction < c->code_start + c->code_bytes
                    ? (int)(instruction - c->code_start)
                    : -1;
        }
        if (depth == 0 && offset_bytes >= 0 && (size_t)offset_bytes < c->code_bytes) {
            /* The first byte of a code unit is its opcode (little-endian); a prefix's flags are
             * those of the instruction it prefixes (at most three prefixes in a row). */
            uint8_t opcode;
            for (int unit = 0; unit < 4 && (size_t)offset_bytes + 2 * (size_t)unit < c->code_bytes;
                 unit++) {
                if (read_memory(w, &opcode, instruction + 2 * (uintptr_t)unit, 1) != 0) break;
                *leaf_flags = w->opcode_flags[opcode];
                if (!(*leaf_flags & HL_OP_PREFIX)) break;
            }
            *leaf_flags &= ~HL_OP_PREFIX;
        }
        if (first_user && !c->user) {
            frame = previous;
            continue;
        }
        frames[depth++] = (hl_frame){c->file, c->function, line_of(w, c, offset_bytes), c->user};
        if (first_user) break;
        frame = previous;
    }
    *complete = 1;
    return depth;
}

int hl_walk(hl_walker *w, uintptr_t tstate, hl_frame *frames, int max_depth, int *leaf_flags,
            int *complete) {
    int whole;
    int depth = walk(w, tstate, frames, max_depth, leaf_flags, 0, &whole);
    if (complete != NULL) *complete = whole;
    else if (!whole) return -1;
    return depth;
}

int hl_walk_user(hl_walker *w, uintptr_t tstate, hl_frame *frame) {
    int flags, complete;
    int found = walk(w, tstate, frame, 1, &flags, 1, &complete);
    if (found == 1) return 1;
    return complete ? 0 : -1;
}

void hl_walker_clear(hl_walker *w) {
    for (size_t i = 0; i < w->ncodes; i++) free(w->codes[i].table);
    free(w->codes);
    hl_map_free(&w->code_index);
    hl_scope_clear(&w->scope);
    w->codes = NULL;
    w->ncodes = w->codes_capacity = 0;
}
