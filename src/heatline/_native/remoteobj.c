/* remoteobj.c: see remoteobj.h. */
#include "remoteobj.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "array.h"
#include "memread.h"

#define MAX_DICT_ENTRIES (1u << 20) /* a larger count is not a dict's, it is garbage */
#define MAX_LOCALS 4096             /* the same for a code object's variables */
#define SHOWN_CHARS 40              /* of a str or bytes, in a repr */
#define MAX_INT_DIGITS 8            /* 30-bit digits of an int shown in full (240 bits) */
#define ENTRY_CHUNK 64              /* dict entries read per system call */

#define TPFLAGS_INLINE_VALUES (1ul << 2)
#define TPFLAGS_MANAGED_DICT (1ul << 4)
#define KIND_HIDDEN 0x10 /* CO_FAST_HIDDEN: a comprehension's inlined variable (3.12+) */
#define KIND_CELL 0x40   /* CO_FAST_CELL */
#define KIND_FREE 0x80   /* CO_FAST_FREE */

static int peek(const hl_remote_objects *o, void *dst, uintptr_t src, size_t n) {
    return src != 0 && hl_memread_remote(o->pid, dst, src, n) == 0 ? 0 : -1;
}

static int word(const hl_remote_objects *o, uintptr_t src, uintptr_t *value) {
    *value = 0;
    return peek(o, value, src, sizeof(*value));
}

static uintptr_t type_of(const hl_remote_objects *o, uintptr_t object) {
    uintptr_t type;
    return word(o, object + o->layout->walk.object_type, &type) == 0 ? type : 0;
}

static int is(uintptr_t type, uintptr_t expected) {
    return type != 0 && type == expected;
}

#define HEAD_BYTES 128 /* an object's first bytes read at once: its header, often its data */

/* Reads the first bytes of an object into head (HEAD_BYTES of them, or only the `least` its
 * header needs where the object ends within HEAD_BYTES of an unmapped page). Returns how many,
 * or 0. */
static size_t read_head(const hl_remote_objects *o, uintptr_t object, uint8_t *head, size_t least) {
    if (peek(o, head, object, HEAD_BYTES) == 0) return HEAD_BYTES;
    return least <= HEAD_BYTES && peek(o, head, object, least) == 0 ? least : 0;
}

/* An ob_size, or -1 when it cannot be read or is out of bounds. */
static intptr_t var_size(const hl_remote_objects *o, uintptr_t object, size_t offset) {
    intptr_t size;
    if (peek(o, &size, object + offset, sizeof(size)) != 0 || size < 0 || size > (intptr_t)1 << 48)
        return -1;
    return size;
}

int hl_remote_type_name(const hl_remote_objects *o, uintptr_t object, char *out, size_t size) {
    uintptr_t type = type_of(o, object), name;
    out[0] = '\0';
    if (size < 2 || type == 0 || word(o, type + o->layout->objects.type_name, &name) != 0 ||
        name == 0)
        return -1;
    char buffer[HL_REMOTE_NAME_MAX];
    size_t n = size < sizeof(buffer) ? size : sizeof(buffer);
    /* tp_name may end close to an unmapped page: read less when the whole buffer cannot be. */
    while (n > 1 && peek(o, buffer, name, n - 1) != 0) n /= 2;
    if (n <= 1) return -1;
    buffer[n - 1] = '\0';
    size_t i = 0;
    for (; buffer[i] != '\0'; i++) out[i] = buffer[i] > 0x20 && buffer[i] < 0x7f ? buffer[i] : '?';
    out[i] = '\0';
    return i > 0 ? 0 : -1;
}

/* ---- str ------------------------------------------------------------------------------- */

/* Appends code point c to out[*n] as UTF-8 if it fits before limit. Returns 0 or -1. */
static int put_utf8(char *out, size_t *n, size_t limit, uint32_t c) {
    char b[4];
    size_t k;
    if (c >= 0xD800 && c < 0xE000) c = 0xFFFD; /* a lone surrogate: not valid UTF-8 */
    if (c < 0x80) b[0] = (char)c, k = 1;
    else if (c < 0x800) b[0] = (char)(0xC0 | c >> 6), b[1] = (char)(0x80 | (c & 0x3F)), k = 2;
    else if (c < 0x10000)
        b[0] = (char)(0xE0 | c >> 12), b[1] = (char)(0x80 | ((c >> 6) & 0x3F)),
        b[2] = (char)(0x80 | (c & 0x3F)), k = 3;
    else
        b[0] = (char)(0xF0 | c >> 18), b[1] = (char)(0x80 | ((c >> 12) & 0x3F)),
        b[2] = (char)(0x80 | ((c >> 6) & 0x3F)), b[3] = (char)(0x80 | (c & 0x3F)), k = 4;
    if (*n + k > limit) return -1;
    memcpy(out + *n, b, k);
    *n += k;
    return 0;
}

/* The first up to max code points of a compact str into points; its length into *length.
 * Returns how many were read, or -1. */
static intptr_t str_points(const hl_remote_objects *o, uintptr_t object, uint32_t *points,
                           size_t max, intptr_t *length) {
    const hl_layout *l = &o->layout->walk;
    uint8_t head[HEAD_BYTES];
    size_t got = read_head(o, object, head, l->str_compact_size);
    uintptr_t type;
    uint32_t state;
    if (got == 0 || l->str_compact_size > got) return -1;
    memcpy(&type, head + l->object_type, sizeof(type));
    memcpy(&state, head + l->str_state, sizeof(state));
    memcpy(length, head + l->str_length, sizeof(*length));
    if (!is(type, o->types.str_type) || *length < 0 || !HL_STR_COMPACT(state)) return -1;
    unsigned kind = HL_STR_KIND(state);
    if (kind != 1 && kind != 2 && kind != 4) return -1;
    size_t n = (size_t)*length < max ? (size_t)*length : max;
    size_t data = HL_STR_ASCII(state) ? l->str_ascii_size : l->str_compact_size;
    uint8_t raw[4 * 256];
    if (n > 256) n = 256;
    if (data + n * kind <= got) memcpy(raw, head + data, n * kind); /* read with the header */
    else if (n > 0 && peek(o, raw, object + data, n * kind) != 0) return -1;
    for (size_t i = 0; i < n; i++) {
        if (kind == 1) points[i] = raw[i];
        else if (kind == 2) points[i] = (uint32_t)raw[2 * i] | (uint32_t)raw[2 * i + 1] << 8;
        else memcpy(&points[i], raw + 4 * i, 4);
    }
    return (intptr_t)n;
}

int hl_remote_str(const hl_remote_objects *o, uintptr_t object, char *out, size_t size) {
    uint32_t points[256];
    intptr_t length;
    out[0] = '\0';
    if (size == 0) return -1;
    intptr_t n = str_points(o, object, points, sizeof(points) / sizeof(*points), &length);
    if (n < 0) return -1;
    size_t used = 0;
    intptr_t i = 0;
    for (; i < n && put_utf8(out, &used, size - 1, points[i]) == 0; i++) {
    }
    out[used] = '\0';
    return i < length ? 1 : 0;
}

#define STR_PREFIX_MAX (128 + HL_REMOTE_NAME_MAX) /* a str's header and a short key's text */

/* Whether the str header and characters read into buffer (str_ascii_size + strlen(text)
 * bytes) are those of a str equal to text (ASCII, shorter than HL_REMOTE_NAME_MAX). */
static int str_prefix_is(const hl_remote_objects *o, const uint8_t *buffer, const char *text) {
    const hl_layout *l = &o->layout->walk;
    size_t n = strlen(text);
    uintptr_t type;
    intptr_t length;
    uint32_t state;
    memcpy(&type, buffer + l->object_type, sizeof(type));
    memcpy(&length, buffer + l->str_length, sizeof(length));
    memcpy(&state, buffer + l->str_state, sizeof(state));
    return is(type, o->types.str_type) && (size_t)length == n && HL_STR_COMPACT(state) &&
           HL_STR_ASCII(state) && memcmp(buffer + l->str_ascii_size, text, n) == 0;
}

/* The index of the key among keys[0..n) that is the str text, or -1: the keys' headers and
 * characters read in one system call (a lookup in sys.modules compares hundreds). */
static int find_str(const hl_remote_objects *o, const uintptr_t *keys, size_t n, const char *text) {
    size_t size = o->layout->walk.str_ascii_size + strlen(text);
    uint8_t buffers[ENTRY_CHUNK][STR_PREFIX_MAX];
    struct iovec local[ENTRY_CHUNK], remote[ENTRY_CHUNK];
    uint8_t ok[ENTRY_CHUNK];
    size_t index[ENTRY_CHUNK], count = 0;
    if (strlen(text) >= HL_REMOTE_NAME_MAX || size > STR_PREFIX_MAX) return -1;
    for (size_t i = 0; i < n && i < ENTRY_CHUNK; i++) {
        if (keys[i] == 0) continue;
        local[count] = (struct iovec){buffers[count], size};
        remote[count] = (struct iovec){(void *)keys[i], size};
        index[count++] = i;
    }
    if (count == 0) return -1;
    hl_memread_batch(o->pid, local, remote, count, ok);
    for (size_t k = 0; k < count; k++)
        if (ok[k] && str_prefix_is(o, buffers[k], text)) return (int)index[k];
    return -1;
}

/* ---- repr ------------------------------------------------------------------------------ */

typedef struct text {
    char *out;
    size_t used, size;
} text;

static int add(text *t, const char *s) {
    size_t n = strlen(s);
    if (t->used + n >= t->size) n = t->size - 1 - t->used;
    memcpy(t->out + t->used, s, n);
    t->used += n;
    t->out[t->used] = '\0';
    return 0;
}

/* A character of a str's or bytes' repr, escaped as Python escapes it; -1 when it does not fit
 * with reserve bytes left. */
static int add_char(text *t, uint32_t c, uint32_t quote, int bytes, size_t reserve) {
    char escaped[12];
    size_t limit = t->size - 1 - reserve;
    if (c == quote || c == '\\') snprintf(escaped, sizeof(escaped), "\\%c", (char)c);
    else if (c == '\n') snprintf(escaped, sizeof(escaped), "\\n");
    else if (c == '\r') snprintf(escaped, sizeof(escaped), "\\r");
    else if (c == '\t') snprintf(escaped, sizeof(escaped), "\\t");
    else if (c < 0x20 || c == 0x7f || (c >= 0x80 && (bytes || c <= 0xa0 || c == 0xad)))
        snprintf(escaped, sizeof(escaped), "\\x%02x", (unsigned)c);
    else if (!bytes && c >= 0xD800 && c < 0xE000)
        snprintf(escaped, sizeof(escaped), "\\u%04x", (unsigned)c);
    else {
        size_t used = t->used;
        if (put_utf8(t->out, &used, limit, c) != 0) return -1;
        t->used = used;
        t->out[used] = '\0';
        return 0;
    }
    size_t n = strlen(escaped);
    if (t->used + n > limit) return -1;
    memcpy(t->out + t->used, escaped, n + 1);
    t->used += n;
    return 0;
}

/* 'text' or b'text' from the first n of length characters; "..." after the quote when cut. */
static void quoted(text *t, const uint32_t *points, size_t n, intptr_t length, int bytes) {
    int single = 0, dbl = 0;
    for (size_t i = 0; i < n; i++) single |= points[i] == '\'', dbl |= points[i] == '"';
    uint32_t quote = single && !dbl ? '"' : '\'';
    char q[2] = {(char)quote, '\0'};
    if (bytes) add(t, "b");
    add(t, q);
    size_t i = 0;
    for (; i < n && add_char(t, points[i], quote, bytes, 4) == 0; i++) {
    }
    add(t, q);
    if ((intptr_t)i < length) add(t, "...");
}

/* Python's repr of a float: the shortest form that reads back the same, fixed-point when its
 * exponent is from -4 to 15, else scientific. */
static void float_repr(double value, char *out, size_t size) {
    if (isnan(value)) {
        snprintf(out, size, "nan");
        return;
    }
    if (isinf(value)) {
        snprintf(out, size, value < 0 ? "-inf" : "inf");
        return;
    }
    char buffer[64];
    int digits = 1;
    for (; digits < 17; digits++) {
        snprintf(buffer, sizeof(buffer), "%.*e", digits - 1, value);
        if (strtod(buffer, NULL) == value) break;
    }
    snprintf(buffer, sizeof(buffer), "%.*e", digits - 1, value);
    int exponent = atoi(strchr(buffer, 'e') + 1);
    if (exponent >= -4 && exponent < 16) {
        int decimals = digits - 1 - exponent;
        snprintf(out, size, "%.*f", decimals > 0 ? decimals : 0, value);
        if (strchr(out, '.') == NULL && strlen(out) + 2 < size) strcat(out, ".0");
    } else {
        snprintf(out, size, "%s", buffer);
    }
}

/* An int's sign and digits: -1 unreadable, else how many digits (at most max) in digits and
 * the sign in *negative. */
static intptr_t int_digits(const hl_remote_objects *o, uintptr_t object, uint32_t *digits,
                           size_t max, int *negative) {
    const hl_object_layout *ol = &o->layout->objects;
    uint8_t head[HEAD_BYTES];
    size_t got = read_head(o, object, head, ol->long_digits);
    intptr_t size;
    if (got == 0 || ol->long_digits > got) return -1;
    memcpy(&size, head + ol->var_size, sizeof(size));
    intptr_t n;
    if (ol->long_model == HL_LONG_TAG) {
        uintptr_t tag = (uintptr_t)size;
        *negative = (tag & 3) == 2;
        n = (intptr_t)(tag >> 3);
    } else {
        *negative = size < 0;
        n = size < 0 ? -size : size;
    }
    if (n < 0 || n > (intptr_t)1 << 40) return -1;
    if ((size_t)n > max) return n; /* too long to read: the caller sees n > max */
    size_t bytes = (size_t)n * sizeof(*digits);
    if (ol->long_digits + bytes <= got) memcpy(digits, head + ol->long_digits, bytes);
    else if (n > 0 && peek(o, digits, object + ol->long_digits, bytes) != 0) return -1;
    for (intptr_t i = 0; i < n; i++)
        if (digits[i] >> 30) return -1;
    return n;
}

int hl_remote_int(const hl_remote_objects *o, uintptr_t object, int64_t *value) {
    uint32_t digits[3];
    int negative;
    if (!is(type_of(o, object), o->types.int_type)) return -1;
    intptr_t n = int_digits(o, object, digits, 3, &negative);
    if (n < 0 || n > 3) return -1;
    unsigned __int128 v = 0;
    for (intptr_t i = n - 1; i >= 0; i--) v = v << 30 | digits[i];
    if (v > (unsigned __int128)INT64_MAX + (negative ? 1 : 0)) return -1;
    *value = negative ? (int64_t)(0 - (uint64_t)v) : (int64_t)v;
    return 0;
}

/* An int's decimal digits, from its base-2**30 digits (divided by 10**9 repeatedly). */
static void int_repr(const uint32_t *digits, intptr_t n, int negative, char *out, size_t size) {
    uint32_t work[MAX_INT_DIGITS];
    uint32_t groups[MAX_INT_DIGITS * 2];
    int ngroups = 0;
    memcpy(work, digits, (size_t)n * sizeof(*work));
    while (n > 0) {
        uint64_t rest = 0;
        for (intptr_t i = n - 1; i >= 0; i--) {
            uint64_t current = rest << 30 | work[i];
            work[i] = (uint32_t)(current / 1000000000u);
            rest = current % 1000000000u;
        }
        groups[ngroups++] = (uint32_t)rest;
        while (n > 0 && work[n - 1] == 0) n--;
    }
    size_t used = (size_t)snprintf(out, size, "%s%" PRIu32, negative ? "-" : "",
                                   ngroups ? groups[ngroups - 1] : 0);
    for (int g = ngroups - 2; g >= 0 && used < size; g--)
        used += (size_t)snprintf(out + used, size - used, "%09" PRIu32, groups[g]);
}

/* The repr of an object at address object. */
static int repr_object(const hl_remote_objects *o, uintptr_t object, char *out, size_t size) {
    const hl_remote_types *ty = &o->types;
    const hl_object_layout *ol = &o->layout->objects;
    text t = {out, 0, size};
    out[0] = '\0';
    if (size < 16) return -1;
    if (object == 0) return add(&t, "<unreadable>");
    if (is(object, ty->none)) return add(&t, "None");
    if (is(object, ty->true_object)) return add(&t, "True");
    if (is(object, ty->false_object)) return add(&t, "False");
    uintptr_t type = type_of(o, object);
    if (type == 0) return add(&t, "<unreadable>");
    if (is(type, ty->int_type)) {
        uint32_t digits[MAX_INT_DIGITS];
        int negative;
        intptr_t n = int_digits(o, object, digits, MAX_INT_DIGITS, &negative);
        if (n < 0) return add(&t, "<unreadable>");
        if (n > MAX_INT_DIGITS) {
            snprintf(out, size, "<int of %" PRIdPTR " bits>", n * 30);
            return 0;
        }
        int_repr(digits, n, negative, out, size);
        return 0;
    }
    if (is(type, ty->float_type)) {
        double value;
        if (peek(o, &value, object + ol->float_value, sizeof(value)) != 0)
            return add(&t, "<unreadable>");
        float_repr(value, out, size);
        return 0;
    }
    if (is(type, ty->str_type)) {
        uint32_t points[SHOWN_CHARS];
        intptr_t length;
        intptr_t n = str_points(o, object, points, SHOWN_CHARS, &length);
        if (n < 0) return add(&t, "<unreadable>");
        quoted(&t, points, (size_t)n, length, 0);
        return 0;
    }
    if (is(type, ty->bytes_type)) {
        const hl_layout *l = &o->layout->walk;
        intptr_t length = var_size(o, object, l->bytes_size);
        uint8_t raw[SHOWN_CHARS];
        uint32_t points[SHOWN_CHARS];
        size_t n = length < 0 ? 0 : (size_t)length < SHOWN_CHARS ? (size_t)length : SHOWN_CHARS;
        if (length < 0 || (n > 0 && peek(o, raw, object + l->bytes_data, n) != 0))
            return add(&t, "<unreadable>");
        for (size_t i = 0; i < n; i++) points[i] = raw[i];
        quoted(&t, points, n, length, 1);
        return 0;
    }
    const char *container = is(type, ty->list_type)        ? "list"
                            : is(type, ty->tuple_type)     ? "tuple"
                            : is(type, ty->dict_type)      ? "dict"
                            : is(type, ty->set_type)       ? "set"
                            : is(type, ty->frozenset_type) ? "frozenset"
                                                           : NULL;
    if (container != NULL) {
        size_t offset = is(type, ty->dict_type)                                  ? ol->dict_used
                        : is(type, ty->set_type) || is(type, ty->frozenset_type) ? ol->set_used
                                                                                 : ol->var_size;
        intptr_t length = var_size(o, object, offset);
        if (length < 0) return add(&t, "<unreadable>");
        snprintf(out, size, "<%s of %" PRIdPTR ">", container, length);
        return 0;
    }
    char name[HL_REMOTE_NAME_MAX];
    if (hl_remote_type_name(o, object, name, sizeof(name)) != 0) return add(&t, "<unreadable>");
    snprintf(out, size, "<%s object>", name);
    return 0;
}

void hl_remote_repr(const hl_remote_objects *o, uintptr_t object, char *out, size_t size) {
    if (size > 0) out[0] = '\0';
    repr_object(o, object, out, size);
}

/* ---- dicts ----------------------------------------------------------------------------- */

/* Visits the items of a dict keys object (with find set, only the one whose key is the str
 * find): the values are the entries' own (values 0) or those of a split dict's values struct
 * at values, values[i] for entry i. Returns 0 or -1. */
static int keys_items(const hl_remote_objects *o, uintptr_t keys, uintptr_t values,
                      const char *find, hl_remote_item_visit visit, void *context) {
    const hl_object_layout *ol = &o->layout->objects;
    uint8_t header[64];
    if (ol->keys_indices > sizeof(header) || peek(o, header, keys, ol->keys_indices) != 0)
        return -1;
    intptr_t nentries;
    memcpy(&nentries, header + ol->keys_nentries, sizeof(nentries));
    size_t index_bytes, entry_size = 24, key_at = 8, value_at = 16;
    if (ol->keys_model == HL_KEYS_LOG2) {
        unsigned log2_size = header[ol->keys_size], log2_index_bytes = header[ol->keys_size + 1];
        unsigned kind = header[ol->keys_size + 2];
        if (log2_size > 30 || log2_index_bytes > 34) return -1;
        index_bytes = (size_t)1 << log2_index_bytes;
        if (kind != 0) entry_size = 16, key_at = 0, value_at = 8; /* unicode keys: no hash */
    } else {
        intptr_t dk_size;
        memcpy(&dk_size, header + ol->keys_size, sizeof(dk_size));
        if (dk_size <= 0 || dk_size > (intptr_t)1 << 30) return -1;
        size_t width = dk_size <= 0xff ? 1 : dk_size <= 0xffff ? 2 : 4;
        index_bytes = (size_t)dk_size * width;
    }
    if (nentries < 0 || nentries > (intptr_t)MAX_DICT_ENTRIES) return -1;
    if (values != 0 && ol->values_items > 0) {
        /* 3.13+: the values struct starts with its capacity (a byte): past it is not its */
        uint8_t capacity;
        if (peek(o, &capacity, values, 1) != 0) return -1;
        if (nentries > capacity) nentries = capacity;
    }
    if (values != 0) values += ol->values_items;
    uintptr_t entries = keys + ol->keys_indices + index_bytes;
    for (intptr_t first = 0; first < nentries; first += ENTRY_CHUNK) {
        size_t n =
            (size_t)(nentries - first) < ENTRY_CHUNK ? (size_t)(nentries - first) : ENTRY_CHUNK;
        uint8_t chunk[ENTRY_CHUNK * 24];
        uintptr_t split[ENTRY_CHUNK];
        if (peek(o, chunk, entries + (uintptr_t)first * entry_size, n * entry_size) != 0) return -1;
        if (values != 0 &&
            peek(o, split, values + (uintptr_t)first * sizeof(uintptr_t), n * sizeof(*split)) != 0)
            return -1;
        uintptr_t key[ENTRY_CHUNK], value[ENTRY_CHUNK];
        for (size_t i = 0; i < n; i++) {
            memcpy(&key[i], chunk + i * entry_size + key_at, sizeof(*key));
            if (values != 0) value[i] = split[i];
            else memcpy(&value[i], chunk + i * entry_size + value_at, sizeof(*value));
            if (value[i] == 0) key[i] = 0; /* a deleted entry */
        }
        if (find != NULL) {
            int found = find_str(o, key, n, find);
            if (found >= 0) {
                visit(o, key[found], value[found], context);
                return 0;
            }
            continue;
        }
        for (size_t i = 0; i < n; i++)
            if (key[i] != 0 && visit(o, key[i], value[i], context) != 0) return 0;
    }
    return 0;
}

int hl_remote_dict_items(const hl_remote_objects *o, uintptr_t dict, hl_remote_item_visit visit,
                         void *context) {
    const hl_object_layout *ol = &o->layout->objects;
    uintptr_t keys, values;
    if (!is(type_of(o, dict), o->types.dict_type) || word(o, dict + ol->dict_keys, &keys) != 0 ||
        word(o, dict + ol->dict_values, &values) != 0 || keys == 0)
        return -1;
    return keys_items(o, keys, values, NULL, visit, context);
}

typedef struct lookup {
    const char *key;
    uintptr_t value;
} lookup;

/* The visit of a lookup (keys_items with find): the value found. */
static int found_value(const hl_remote_objects *o, uintptr_t key, uintptr_t value, void *context) {
    (void)o, (void)key;
    ((lookup *)context)->value = value;
    return 1;
}

/* The value of str key in the keys object (values: as keys_items'), or 0. */
static uintptr_t keys_get(const hl_remote_objects *o, uintptr_t keys, uintptr_t values,
                          const char *key) {
    lookup l = {key, 0};
    return keys_items(o, keys, values, key, found_value, &l) == 0 ? l.value : 0;
}

uintptr_t hl_remote_dict_get(const hl_remote_objects *o, uintptr_t dict, const char *key) {
    const hl_object_layout *ol = &o->layout->objects;
    uintptr_t keys, values;
    if (!is(type_of(o, dict), o->types.dict_type) || word(o, dict + ol->dict_keys, &keys) != 0 ||
        word(o, dict + ol->dict_values, &values) != 0 || keys == 0)
        return 0;
    return keys_get(o, keys, values, key);
}

uintptr_t hl_remote_attribute(const hl_remote_objects *o, uintptr_t object, const char *name) {
    const hl_object_layout *ol = &o->layout->objects;
    uintptr_t type = type_of(o, object), flags, cached_keys = 0, slot;
    intptr_t dictoffset, basicsize;
    /* The type's fields from tp_basicsize to tp_dictoffset, in one read */
    uint8_t fields[512];
    size_t first = ol->type_basicsize, end = ol->type_dictoffset + sizeof(dictoffset);
    if (ol->type_flags + sizeof(flags) > end) end = ol->type_flags + sizeof(flags);
    if (type == 0 || end - first > sizeof(fields) ||
        peek(o, fields, type + first, end - first) != 0)
        return 0;
    memcpy(&flags, fields + ol->type_flags - first, sizeof(flags));
    memcpy(&dictoffset, fields + ol->type_dictoffset - first, sizeof(dictoffset));
    memcpy(&basicsize, fields, sizeof(basicsize));
    uintptr_t found = 0;
    uintptr_t dict = 0;
    int managed = ol->managed_dict != HL_DICT_AT_OFFSET && (flags & TPFLAGS_MANAGED_DICT);
    if (managed && word(o, type + ol->type_cached_keys, &cached_keys) != 0) return 0;
    uintptr_t before = object - 3 * sizeof(uintptr_t); /* the managed dict's word */
    if (!managed) {
        /* A positive tp_dictoffset locates the dict pointer (a negative one counts from the end
         * of a variable-sized object, which Thread is not). */
        if (dictoffset <= 0 || word(o, object + (uintptr_t)dictoffset, &dict) != 0) return 0;
    } else if (ol->managed_dict == HL_DICT_OR_VALUES_311) {
        uintptr_t values;
        if (word(o, before, &dict) != 0) return 0;
        if (dict == 0 && word(o, before - sizeof(uintptr_t), &values) == 0 && values != 0 &&
            cached_keys != 0)
            found = keys_get(o, cached_keys, values, name);
    } else if (ol->managed_dict == HL_DICT_OR_VALUES_312) {
        if (word(o, before, &slot) != 0) return 0;
        if (slot & 1) { /* values, stored minus one */
            if (cached_keys != 0) found = keys_get(o, cached_keys, slot + 1, name);
        } else {
            dict = slot;
        }
    } else {
        if (word(o, before, &dict) != 0) return 0;
        uint8_t valid = 0;
        uintptr_t values = object + (uintptr_t)basicsize;
        if (dict == 0 && (flags & TPFLAGS_INLINE_VALUES) && basicsize > 0 && cached_keys != 0 &&
            peek(o, &valid, values + 3, 1) == 0 && valid)
            found = keys_get(o, cached_keys, values, name);
    }
    if (dict != 0) return hl_remote_dict_get(o, dict, name);
    return found;
}

/* ---- thread names ---------------------------------------------------------------------- */

typedef struct names_visit {
    void (*visit)(uint64_t ident, const char *name, void *context);
    void *context;
    int count;
} names_visit;

static int thread_item(const hl_remote_objects *o, uintptr_t key, uintptr_t thread, void *context) {
    names_visit *v = context;
    int64_t ident;
    char name[HL_REMOTE_NAME_MAX];
    if (hl_remote_int(o, key, &ident) != 0) return 0;
    if (hl_remote_str(o, hl_remote_attribute(o, thread, "_name"), name, sizeof(name)) < 0) return 0;
    v->visit((uint64_t)ident, name, v->context);
    v->count++;
    return 0;
}

uintptr_t hl_remote_threading_active(const hl_remote_objects *o, uintptr_t interp) {
    const hl_object_layout *ol = &o->layout->objects;
    uintptr_t modules, threading, globals;
    if (word(o, interp + ol->interp_modules, &modules) != 0 || modules == 0) return 0;
    threading = hl_remote_dict_get(o, modules, "threading");
    if (threading == 0 || word(o, threading + ol->module_dict, &globals) != 0) return 0;
    return hl_remote_dict_get(o, globals, "_active");
}

int hl_remote_thread_names(const hl_remote_objects *o, uintptr_t active,
                           void (*visit)(uint64_t ident, const char *name, void *context),
                           void *context) {
    names_visit v = {visit, context, 0};
    if (active == 0 || hl_remote_dict_items(o, active, thread_item, &v) != 0) return -1;
    return v.count;
}

/* ---- a frame's locals ------------------------------------------------------------------ */

/* A tuple's items (at most max) into items. Returns how many, or -1. */
static intptr_t tuple_items(const hl_remote_objects *o, uintptr_t tuple, uintptr_t *items,
                            size_t max) {
    const hl_object_layout *ol = &o->layout->objects;
    if (!is(type_of(o, tuple), o->types.tuple_type)) return -1;
    intptr_t n = var_size(o, tuple, ol->var_size);
    if (n < 0 || (size_t)n > max) return -1;
    if (n > 0 && peek(o, items, tuple + ol->tuple_items, (size_t)n * sizeof(*items)) != 0)
        return -1;
    return n;
}

/* The object a frame's slot holds (a _PyStackRef's pointer, 3.14+), or 0 with *tagged set to
 * the int a tagged slot holds. */
static uintptr_t slot_object(const hl_remote_objects *o, uintptr_t slot, int *is_int,
                             int64_t *tagged) {
    *is_int = 0;
    if (!o->layout->objects.stackrefs) return slot;
    if ((slot & 3) == 3) {
        *is_int = 1;
        *tagged = (int64_t)(intptr_t)slot >> 2;
        return 0;
    }
    return slot & ~(uintptr_t)3;
}

typedef struct frame_names {
    uintptr_t names[MAX_LOCALS];
    uint8_t kinds[MAX_LOCALS];
    uintptr_t slots[MAX_LOCALS];
} frame_names;

int hl_remote_frame_locals(const hl_remote_objects *o, uintptr_t frame, hl_remote_local **locals,
                           size_t *count, size_t *capacity) {
    const hl_layout *l = &o->layout->walk;
    const hl_object_layout *ol = &o->layout->objects;
    uintptr_t code;
    if (word(o, frame + l->frame_code, &code) != 0) return -1;
    code &= ~l->code_tag_bits;
    if (l->code_type != 0 && !is(type_of(o, code), l->code_type)) return -1;
    frame_names *f = calloc(1, sizeof(*f));
    if (f == NULL) return -1;
    intptr_t n = 0;
    int result = -1;
    if (ol->code_nlocals == 0) { /* 3.11+: one tuple of names, one bytes of kinds */
        uintptr_t names, kinds;
        if (word(o, code + ol->code_localsplusnames, &names) != 0 ||
            word(o, code + ol->code_localspluskinds, &kinds) != 0)
            goto done;
        n = tuple_items(o, names, f->names, MAX_LOCALS);
        if (n < 0 || var_size(o, kinds, l->bytes_size) != n ||
            (n > 0 && peek(o, f->kinds, kinds + l->bytes_data, (size_t)n) != 0))
            goto done;
    } else { /* 3.9, 3.10: locals, then cells, then free variables */
        int nlocals;
        uintptr_t tuples[3];
        if (peek(o, &nlocals, code + ol->code_nlocals, sizeof(nlocals)) != 0 || nlocals < 0 ||
            word(o, code + ol->code_varnames, &tuples[0]) != 0 ||
            word(o, code + ol->code_cellvars, &tuples[1]) != 0 ||
            word(o, code + ol->code_freevars, &tuples[2]) != 0)
            goto done;
        for (int t = 0; t < 3; t++) {
            intptr_t got = tuple_items(o, tuples[t], f->names + n, MAX_LOCALS - (size_t)n);
            if (got < 0 || (t == 0 && got != nlocals)) goto done;
            memset(f->kinds + n, t == 0 ? 0 : t == 1 ? KIND_CELL : KIND_FREE, (size_t)got);
            n += got;
        }
    }
    if (n > 0 &&
        peek(o, f->slots, frame + ol->frame_localsplus, (size_t)n * sizeof(uintptr_t)) != 0)
        goto done;
    result = 0;
    for (intptr_t i = 0; i < n; i++) {
        int is_int;
        int64_t tagged = 0;
        uintptr_t value = slot_object(o, f->slots[i], &is_int, &tagged);
        if ((f->kinds[i] & KIND_HIDDEN) || (value == 0 && !is_int)) continue; /* unbound */
        if ((f->kinds[i] & (KIND_CELL | KIND_FREE)) && !is_int &&
            is(type_of(o, value), o->types.cell_type)) {
            if (word(o, value + ol->cell_ref, &value) != 0) value = 1; /* unreadable */
            if (value == 0) continue;                                  /* an empty cell */
        }
        if (HL_ARRAY_RESERVE(*locals, *capacity, *count + 1, 16) != 0) {
            result = -1;
            break;
        }
        hl_remote_local *local = &(*locals)[*count];
        memset(local, 0, sizeof(*local));
        if (hl_remote_str(o, f->names[i], local->name, sizeof(local->name)) < 0)
            snprintf(local->name, sizeof(local->name), "?");
        if (is_int) snprintf(local->repr, sizeof(local->repr), "%" PRId64, tagged);
        else repr_object(o, value, local->repr, sizeof(local->repr));
        ++*count;
        result++;
    }
done:
    free(f);
    return result;
}
