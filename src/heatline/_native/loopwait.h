/* loopwait.h: the record of an event loop's wait that the sampler holds back until it is known
 * which awaits the wait belongs to (asyncwait.h says why and how it is charged).
 *
 * The sampler (sampler.c) fills it when the main thread is blocked in its asyncio event loop's
 * selector; the asyncwait part takes it on the main thread and charges its time to the awaits
 * where the loop's tasks are suspended, or back to the stack it was sampled at. Header only.
 */
#ifndef HEATLINE_LOOPWAIT_H
#define HEATLINE_LOOPWAIT_H

#include <stdint.h>

#include "frames.h"
#include "stats.h"

typedef struct hl_loop_wait {
    uint64_t ns;          /* held back so far; 0: none */
    uint32_t thread;      /* the sampler's index of the thread (the stack table's thread) */
    uint32_t length;      /* keys[0..length): the stack the wait was sampled at, outermost
                           * first (HL_FRAME_KEY) */
    uint32_t loop_depth;  /* keys[0..loop_depth): down to the event loop's own frame, which a
                           * task's stack continues (the selector's frames below it are not) */
    hl_frame target;      /* the line the sampler would have charged */
    uint64_t keys[HL_MAX_DEPTH];
} hl_loop_wait;

#endif
