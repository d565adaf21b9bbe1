/* linetable.h: the line number of a bytecode offset, decoded from a copy of a code object's
 * line table (the same answer PyCode_Addr2Line gives, computed without the GIL and without
 * touching the code object).
 */
#ifndef HEATLINE_LINETABLE_H
#define HEATLINE_LINETABLE_H

#include <stddef.h>
#include <stdint.h>

/* format: an hl_linetable_format (compat.h). offset_bytes: the instruction's offset in bytes
 * from the start of the bytecode. Returns the line, or -1 when the table assigns none (for
 * instance, artificial instructions). */
int hl_line_for_offset(int format, const uint8_t *table, size_t len, int firstlineno,
                       int offset_bytes);

#endif
