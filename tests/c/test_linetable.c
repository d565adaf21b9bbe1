/* test_linetable.c: linetable.c's decoders against the answers of the CPythons that wrote the
 * tables (cases.h, written by make_cases.py: one function's table from 3.9's co_lnotab, 3.10's
 * co_linetable and 3.11-3.15's location table, with and without columns, and the line of each
 * of its instruction offsets as that CPython gives it), then the edges: offsets past the end,
 * negative ones, no table, a corrupt or cut table. Each table is decoded from a copy of exactly
 * its size, so the sanitized build catches a read past its end. */
#include <stdlib.h>
#include <string.h>

#include "../../src/heatline/_native/compat.h"
#include "../../src/heatline/_native/linetable.h"
#include "cases.h"
#include "check.h"

void test_linetable_answers_every_offset(void) {
    for (size_t c = 0; c < sizeof(line_cases) / sizeof(*line_cases); c++) {
        const struct line_case *k = &line_cases[c];
        uint8_t *table = malloc(k->size);
        CHECK(table != NULL, "malloc");
        memcpy(table, k->table, k->size);
        int wrong = -1, got = 0;
        for (size_t i = 0; i < k->count && wrong < 0; i++) {
            got = hl_line_for_offset(k->format, table, k->size, k->firstlineno, (int)(2 * i));
            if (got != k->lines[i]) wrong = (int)i;
        }
        free(table);
        CHECK(wrong < 0, "CPython %s, offset %d: line %d, CPython says %d", k->version, 2 * wrong,
              got, k->lines[wrong]);
    }
}

/* The case of a format, from cases.h. */
static const struct line_case *case_of(int format, const char *version) {
    for (size_t c = 0; c < sizeof(line_cases) / sizeof(*line_cases); c++)
        if (line_cases[c].format == format && strcmp(line_cases[c].version, version) == 0)
            return &line_cases[c];
    return NULL;
}

void test_linetable_edges(void) {
    const struct line_case *lnotab = case_of(HL_LNOTAB_39, "3.9.18");
    const struct line_case *linetable = case_of(HL_LINETABLE_310, "3.10.13");
    const struct line_case *locations = case_of(HL_LOCATIONS_311, "3.11.7");
    CHECK(lnotab && linetable && locations, "cases.h lacks a format");
    int past = (int)(2 * lnotab->count);
    /* lnotab: the last line applies to every offset past the table's last step */
    int line = hl_line_for_offset(HL_LNOTAB_39, lnotab->table, lnotab->size, 1, past + 100);
    CHECK(line == lnotab->lines[lnotab->count - 1], "3.9 past the end: %d", line);
    /* the later formats describe ranges: past the last, no line */
    line = hl_line_for_offset(HL_LINETABLE_310, linetable->table, linetable->size, 1,
                              (int)(2 * linetable->count));
    CHECK(line == -1, "3.10 past the end: %d", line);
    line = hl_line_for_offset(HL_LOCATIONS_311, locations->table, locations->size, 1,
                              (int)(2 * locations->count));
    CHECK(line == -1, "3.11 past the end: %d", line);
    /* the first line: the table's first entry and firstlineno together */
    line = hl_line_for_offset(HL_LOCATIONS_311, locations->table, locations->size, 100, 0);
    CHECK(line == locations->lines[0] + 99, "3.11 with firstlineno 100: %d", line);

    static const int formats[] = {HL_LNOTAB_39, HL_LINETABLE_310, HL_LOCATIONS_311};
    for (size_t f = 0; f < 3; f++) {
        line = hl_line_for_offset(formats[f], locations->table, locations->size, 1, -2);
        CHECK(line == -1, "format %d, a negative offset: %d", formats[f], line);
        line = hl_line_for_offset(formats[f], NULL, 10, 1, 0);
        CHECK(line == -1, "format %d, no table: %d", formats[f], line);
    }
    line = hl_line_for_offset(0, locations->table, locations->size, 1, 0);
    CHECK(line == -1, "an unknown format: %d", line);
    line = hl_line_for_offset(4, locations->table, locations->size, 1, 0);
    CHECK(line == -1, "an unknown format: %d", line);

    /* 3.11+: a byte without bit 7 where an entry starts is no table (a copy torn mid-write) */
    static const uint8_t torn[] = {0x05, 0x80 | (13 << 3), 0x02};
    line = hl_line_for_offset(HL_LOCATIONS_311, torn, sizeof(torn), 1, 0);
    CHECK(line == -1, "a torn table: %d", line);
    /* a varint cut by the table's end (more-bit set on the last byte), read no further than
     * it: one unit, line += (3 | 2 << 6 ... cut) */
    uint8_t *cut = malloc(2);
    CHECK(cut != NULL, "malloc");
    cut[0] = 0x80 | (13 << 3); /* code 13, one code unit: line += signed varint */
    cut[1] = 0x40 | 4;         /* 4: +2, and more follows (past the end) */
    line = hl_line_for_offset(HL_LOCATIONS_311, cut, 2, 10, 0);
    free(cut);
    CHECK(line == 12, "a varint cut by the end: %d", line);
    /* a long varint: 0x3F in each group, more set in all but the last (a delta of 2^35-ish,
     * folded into 32 bits without reading past the table) */
    static const uint8_t long_varint[] = {
        0x80 | (13 << 3), 0x42, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x00};
    line = hl_line_for_offset(HL_LOCATIONS_311, long_varint, sizeof(long_varint), 10, 0);
    CHECK(line == 11, "a varint of zero groups after the first: %d", line);
}
