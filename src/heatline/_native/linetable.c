/* linetable.c: decoders for the three line-table formats CPython has used since 3.9.
 *
 * 3.9  co_lnotab: byte pairs (address increment, signed line increment). The line of an
 *      address is the line reached after applying every pair whose address is <= it.
 * 3.10 co_linetable: byte pairs (bytecode length, signed line delta) describing consecutive
 *      ranges; a delta of -128 marks a range with no line.
 * 3.11+ co_linetable ("location table"): entries each covering 1-8 code units; the first byte
 *      holds 1, a 4-bit code and (length - 1). Codes 0-9: same line (short form, one column
 *      byte follows); 10-12: line += code - 10 (two column bytes follow); 13: line += signed
 *      varint; 14: line += signed varint, then end line, column and end column varints;
 *      15: no location. Varints are 6-bit groups, little end first, bit 6 = more follows.
 *      Only the line delta is decoded; columns are skipped.
 */
#include "linetable.h"

#include "compat.h"

static int lnotab_39(const uint8_t *p, size_t len, int line, int addr_q) {
    int addr = 0;
    for (size_t i = 0; i + 1 < len; i += 2) {
        addr += p[i];
        if (addr > addr_q) break;
        line += (int8_t)p[i + 1];
    }
    return line;
}

static int linetable_310(const uint8_t *p, size_t len, int line, int addr_q) {
    int start = 0;
    for (size_t i = 0; i + 1 < len; i += 2) {
        int end = start + p[i];
        int delta = (int8_t)p[i + 1];
        if (delta != -128) line += delta;
        if (start <= addr_q && addr_q < end) return delta == -128 ? -1 : line;
        start = end;
    }
    return -1;
}

/* Reads an unsigned varint at p[*i]; never reads past len. */
static unsigned read_varint(const uint8_t *p, size_t len, size_t *i) {
    unsigned value = 0;
    unsigned shift = 0;
    while (*i < len) {
        uint8_t b = p[(*i)++];
        if (shift < 32) value |= (unsigned)(b & 63) << shift;
        shift += 6;
        if (!(b & 64)) break;
    }
    return value;
}

static int read_svarint(const uint8_t *p, size_t len, size_t *i) {
    unsigned u = read_varint(p, len, i);
    return (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
}

static int locations_311(const uint8_t *p, size_t len, int line, int unit_q) {
    size_t i = 0;
    int unit = 0;
    while (i < len) {
        uint8_t first = p[i];
        if (!(first & 0x80)) return -1; /* not at an entry start: corrupt copy */
        int code = (first >> 3) & 15;
        int length = (first & 7) + 1;
        size_t next = i + 1;
        if (code == 13 || code == 14) line += read_svarint(p, len, &next);
        else if (code >= 10 && code <= 12) line += code - 10;
        if (unit <= unit_q && unit_q < unit + length) return code == 15 ? -1 : line;
        unit += length;
        /* Every byte of an entry but the first has bit 7 clear (varints and columns use at
         * most 7 bits), so the next entry starts at the next byte with bit 7 set. */
        for (i = i + 1; i < len && !(p[i] & 0x80); i++) {
        }
    }
    return -1;
}

int hl_line_for_offset(int format, const uint8_t *table, size_t len, int firstlineno,
                       int offset_bytes) {
    if (table == NULL || offset_bytes < 0) return -1;
    switch (format) {
        case HL_LNOTAB_39: return lnotab_39(table, len, firstlineno, offset_bytes);
        case HL_LINETABLE_310: return linetable_310(table, len, firstlineno, offset_bytes);
        case HL_LOCATIONS_311: return locations_311(table, len, firstlineno, offset_bytes / 2);
        default: return -1;
    }
}
