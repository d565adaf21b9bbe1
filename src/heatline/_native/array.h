/* array.h: the engine's one growable array: room for more elements in a malloc'ed array that
 * doubles as it grows.
 *
 * It calls the C library's realloc directly, never the Python allocators, so it may run where
 * the engine may not recurse into an allocator it hooks: in the sampler thread, in a memory
 * hook's slow path and in CUPTI's callbacks (those threads are marked as inside the engine, and
 * heatline's own calls to realloc are never redirected: got.c patches other objects only).
 */
#ifndef HEATLINE_ARRAY_H
#define HEATLINE_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Makes *items hold at least `needed` elements of item_size bytes, doubling *capacity (from
 * `first` when the array is empty). Returns 0, or -1 when out of memory (the array is then
 * unchanged). */
static inline int hl_array_reserve(void **items, size_t *capacity, size_t needed, size_t item_size,
                                   size_t first) {
    if (needed <= *capacity) return 0;
    size_t grown = *capacity ? *capacity : first;
    while (grown < needed) {
        if (grown > SIZE_MAX / 2) return -1;
        grown *= 2;
    }
    if (grown > SIZE_MAX / item_size) return -1;
    void *p = realloc(*items, grown * item_size);
    if (p == NULL) return -1;
    *items = p;
    *capacity = grown;
    return 0;
}

/* Room for `needed` elements in the array `items` (an lvalue of pointer type) whose capacity
 * is the lvalue `capacity`. */
#define HL_ARRAY_RESERVE(items, capacity, needed, first)                                           \
    hl_array_reserve((void **)&(items), &(capacity), (needed), sizeof(*(items)), (first))

#endif
