/* unaligned.h: loading a field from a byte buffer at any offset, for the code that reads foreign
 * layouts by offset rather than through structs: the interpreter's frames and code objects
 * copied out with hl_memread (frames.c, whose offsets come from compat.h's table) and CUPTI's
 * callback data and activity records (cupti.c, whose offsets are gpu_abi.h's).
 *
 * A load through a cast pointer would be undefined behaviour where the offset is not aligned
 * for the type, and would break the aliasing rules; memcpy is defined for any offset, and the
 * compiler turns it into one plain load. One macro defines every loader, so they cannot drift
 * apart; each is named after the type it returns.
 */
#ifndef HEATLINE_UNALIGNED_H
#define HEATLINE_UNALIGNED_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HL_UNALIGNED_LOADER(name, type)                                                            \
    static inline type name(const void *buffer, size_t offset) {                                   \
        type value;                                                                                \
        memcpy(&value, (const uint8_t *)buffer + offset, sizeof(value));                           \
        return value;                                                                              \
    }

HL_UNALIGNED_LOADER(hl_load_word, uintptr_t)
HL_UNALIGNED_LOADER(hl_load_int, int)
HL_UNALIGNED_LOADER(hl_load_u32, uint32_t)
HL_UNALIGNED_LOADER(hl_load_u64, uint64_t)
HL_UNALIGNED_LOADER(hl_load_pointer, const void *) /* a pointer stored in the buffer */

#endif
