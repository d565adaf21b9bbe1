/* clock.h: the engine's one clock, CLOCK_MONOTONIC in nanoseconds, for the sampler's ticks, the
 * memory events' times and the GPU timelines. A header of its own so that every room can read
 * it without depending on another. Its includer defines _GNU_SOURCE (or includes Python.h)
 * first, for clock_gettime under -std=c11. */
#ifndef HEATLINE_CLOCK_H
#define HEATLINE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t hl_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
