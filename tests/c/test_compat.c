/* test_compat.c: compat.c's tables for reading another process, which need no interpreter: the
 * table of each minor version (hl_compat_remote_layout), and the _Py_DebugOffsets of 3.13-3.15
 * (hl_compat_apply_debug_offsets) applied to it, from the bytes those CPythons hold at the start
 * of their _PyRuntime (cases.h, written by make_cases.py): the offsets the interpreter publishes
 * must be the table's. What compat.c reads from the running interpreter (hl_compat_init,
 * hl_compat_remote_check against its headers, the GIL's holder) needs one, and is tested by the
 * Python suite on every version. compat.c is compiled against the headers of the CPython `make
 * test-c` finds and linked with its libpython, which these functions never call. */
#include <string.h>

#include "../../src/heatline/_native/compat.h"
#include "cases.h"
#include "check.h"

void test_compat_remote_tables(void) {
    hl_remote_layout r;
    CHECK(hl_compat_remote_layout(HL_REMOTE_MINOR_FIRST - 1, &r) == -1, "3.8 has a table");
    CHECK(hl_compat_remote_layout(HL_REMOTE_MINOR_LAST + 1, &r) == -1, "3.16 has a table");
    for (int minor = HL_REMOTE_MINOR_FIRST; minor <= HL_REMOTE_MINOR_LAST; minor++) {
        memset(&r, 0xAB, sizeof(r));
        CHECK(hl_compat_remote_layout(minor, &r) == 0, "3.%d has no table", minor);
        CHECK(r.version == (0x03000000ul | (unsigned long)minor << 16), "3.%d: version %#lx", minor,
              r.version);
        /* compat.h's frame models and line-table formats, by version */
        int model = minor <= 10   ? HL_FRAMES_OBJECTS
                    : minor <= 12 ? HL_FRAMES_CFRAME
                                  : HL_FRAMES_CURRENT;
        CHECK(r.walk.frame_model == model, "3.%d: frame model %d", minor, r.walk.frame_model);
        int format = minor == 9 ? HL_LNOTAB_39 : minor == 10 ? HL_LINETABLE_310 : HL_LOCATIONS_311;
        CHECK(r.walk.linetable_format == format, "3.%d: line table %d", minor,
              r.walk.linetable_format);
        CHECK(r.walk.has_native_thread_id == (minor >= 11), "3.%d: native thread id %d", minor,
              r.walk.has_native_thread_id);
        CHECK(r.walk.code_tag_bits == (minor >= 14 ? 3u : 0u), "3.%d: tag bits %#lx", minor,
              (unsigned long)r.walk.code_tag_bits);
        CHECK(r.gil_per_interpreter == (minor >= 12), "3.%d: GIL per interpreter %d", minor,
              r.gil_per_interpreter);
        CHECK(r.walk.owner_interpreter == (minor >= 12 ? 3 : -1), "3.%d: owner %d", minor,
              r.walk.owner_interpreter);
        /* what is read of a frame covers each field read from it */
        size_t frame_fields[] = {r.walk.frame_previous, r.walk.frame_code, r.walk.frame_instr};
        for (size_t i = 0; i < 3; i++)
            CHECK(frame_fields[i] + (r.walk.frame_model == HL_FRAMES_OBJECTS && i == 2 ? 4 : 8) <=
                      r.walk.frame_read_size,
                  "3.%d: frame field %zu at %zu past the %zu bytes read", minor, i, frame_fields[i],
                  r.walk.frame_read_size);
        if (r.walk.frame_model != HL_FRAMES_OBJECTS)
            CHECK(r.walk.frame_owner < r.walk.frame_read_size, "3.%d: owner unread", minor);
        /* the same for a code object (its line table, names and first line) */
        size_t code_fields[] = {r.walk.code_filename, r.walk.code_name, r.walk.code_qualname,
                                r.walk.code_linetable};
        for (size_t i = 0; i < 4; i++)
            CHECK(code_fields[i] + 8 <= r.walk.code_read_size,
                  "3.%d: code field %zu at %zu past the %zu bytes read", minor, i, code_fields[i],
                  r.walk.code_read_size);
        CHECK(r.walk.code_firstlineno + 4 <= r.walk.code_read_size, "3.%d: firstlineno", minor);
        /* PyObject's header is a refcount, then the type; a str's characters follow its header */
        CHECK(r.walk.object_type == 8, "3.%d: ob_type at %zu", minor, r.walk.object_type);
        CHECK(r.walk.str_compact_size > r.walk.str_ascii_size, "3.%d: str headers", minor);
    }
}

/* The fields the debug offsets set, as (name, offset, size) of hl_remote_layout. */
#define FIELD(name) {#name, offsetof(hl_remote_layout, name), sizeof(((hl_remote_layout *)0)->name)}
static const struct {
    const char *name;
    size_t offset, size;
} debug_fields[] = {
    FIELD(runtime_interpreters_head),
    FIELD(interp_id),
    FIELD(interp_next),
    FIELD(walk.interp_threads_head),
    FIELD(gil_per_interpreter),
    FIELD(gil_state),
    FIELD(gil_locked),
    FIELD(gil_holder),
    FIELD(walk.tstate_next),
    FIELD(tstate_interp),
    FIELD(walk.frame_model),
    FIELD(walk.tstate_frame),
    FIELD(walk.tstate_thread_id),
    FIELD(walk.tstate_native_thread_id),
    FIELD(walk.has_native_thread_id),
    FIELD(walk.frame_previous),
    FIELD(walk.frame_code),
    FIELD(walk.frame_instr),
    FIELD(walk.frame_owner),
    FIELD(walk.frame_read_size),
    FIELD(walk.code_filename),
    FIELD(walk.code_name),
    FIELD(walk.code_qualname),
    FIELD(walk.code_linetable),
    FIELD(walk.code_firstlineno),
    FIELD(walk.code_adaptive),
    FIELD(walk.code_read_size),
    FIELD(walk.object_type),
    FIELD(walk.bytes_size),
    FIELD(walk.bytes_data),
    FIELD(walk.str_state),
    FIELD(walk.str_length),
    FIELD(walk.str_ascii_size),
    FIELD(walk.str_compact_size),
};
#undef FIELD

/* A case's bytes padded with zeros to the HL_DEBUG_OFFSETS_SIZE the function reads. */
static void padded(const struct debug_case *k, uint8_t *out) {
    memset(out, 0, HL_DEBUG_OFFSETS_SIZE);
    memcpy(out, k->bytes, k->size < HL_DEBUG_OFFSETS_SIZE ? k->size : HL_DEBUG_OFFSETS_SIZE);
}

/* The version word of a case (the patch release that wrote it). */
static uint64_t version_word(const uint8_t *bytes) {
    uint64_t word;
    memcpy(&word, bytes + 8, sizeof(word));
    return word;
}

void test_compat_debug_offsets_match_the_tables(void) {
    size_t count = sizeof(debug_cases) / sizeof(*debug_cases);
    CHECK(count == 3, "%zu debug offset cases, not 3.13-3.15's", count);
    for (size_t c = 0; c < count; c++) {
        const struct debug_case *k = &debug_cases[c];
        uint8_t bytes[HL_DEBUG_OFFSETS_SIZE];
        padded(k, bytes);
        hl_remote_layout table, applied;
        CHECK(hl_compat_remote_layout(k->minor, &table) == 0, "no table for 3.%d", k->minor);
        applied = table;
        applied.version = (unsigned long)version_word(bytes);
        const char *why = NULL;
        int rc = hl_compat_apply_debug_offsets(bytes, &applied, &why);
        CHECK(rc == 0, "CPython %s: %s", k->version, why ? why : "?");
        CHECK(applied.version == version_word(bytes), "CPython %s: version %#lx", k->version,
              applied.version);
        for (size_t i = 0; i < sizeof(debug_fields) / sizeof(*debug_fields); i++) {
            const char *a = (const char *)&applied + debug_fields[i].offset;
            const char *t = (const char *)&table + debug_fields[i].offset;
            CHECK(memcmp(a, t, debug_fields[i].size) == 0,
                  "CPython %s: %s is not the table's (debug offsets %zu, table %zu)", k->version,
                  debug_fields[i].name, *(const size_t *)(const void *)a,
                  *(const size_t *)(const void *)t);
        }
    }
}

/* hl_compat_apply_debug_offsets of 3.13's bytes changed by change (word index, value; -1: none)
 * with the table of minor and the version word as r->version; its result and reason. */
static int apply_changed(int minor, int word, uint64_t value, const char **why) {
    uint8_t bytes[HL_DEBUG_OFFSETS_SIZE];
    padded(&debug_cases[0], bytes);
    if (word >= 0) memcpy(bytes + 8 * word, &value, sizeof(value));
    hl_remote_layout r;
    if (hl_compat_remote_layout(minor, &r) != 0) r.version = 0x030C0000ul;
    *why = NULL;
    return hl_compat_apply_debug_offsets(bytes, &r, why);
}

void test_compat_debug_offsets_refused(void) {
    CHECK(debug_cases[0].minor == 13, "the first case is 3.%d's", debug_cases[0].minor);
    const char *why;
    CHECK(apply_changed(13, -1, 0, &why) == 0, "unchanged: %s", why);
    CHECK(apply_changed(13, 0, 0x5950677562656478ull /* xdebugPY */, &why) == -1 &&
              strstr(why, "cookie"),
          "a wrong cookie: %s", why ? why : "accepted");
    CHECK(apply_changed(14, -1, 0, &why) == -1 && strstr(why, "another version"),
          "3.13's offsets for 3.14: %s", why ? why : "accepted");
    CHECK(apply_changed(12, -1, 0, &why) == -1 && strstr(why, "shape"),
          "3.12 (no debug offsets): %s", why ? why : "accepted");
    CHECK(apply_changed(13, 2, 1, &why) == -1 && strstr(why, "free-threaded"),
          "a free-threaded build: %s", why ? why : "accepted");
    /* word 5: 3.13's runtime_state.interpreters_head */
    CHECK(apply_changed(13, 5, 1u << 20, &why) == -1 && strstr(why, "not offsets"),
          "an offset of 1 MB: %s", why ? why : "accepted");
    /* words 15 and 17: 3.13's gil_runtime_state and its locked field, this one before it */
    CHECK(apply_changed(13, 17, 0, &why) == -1 && strstr(why, "GIL"),
          "the GIL's locked field before its state: %s", why ? why : "accepted");
}
