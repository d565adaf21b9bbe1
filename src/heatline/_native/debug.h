/* debug.h: HL_ASSERT, the engine's checks of its own contracts (which lock is held, what a
 * table holds), compiled into debug builds only.
 *
 * A debug build is one with HEATLINE_DEBUG defined (setup.py defines it for the ASan build,
 * HEATLINE_SANITIZE=1, and for HEATLINE_DEBUG=1) or one without NDEBUG (a debug build of
 * CPython passes no NDEBUG). A release build compiles every check out, so the hot paths (the
 * tick, the allocation hooks) pay nothing for them: C's own assert() cannot be used for that,
 * since CPython's flags define NDEBUG in every build of an extension, the ASan one included.
 *
 * A failed check writes one line to the program's standard error with write(2) and aborts: both
 * are async-signal-safe and allocate nothing, so a check may fail inside an allocation hook or in
 * the sampler thread without recursing into the allocator it is checking.
 */
#ifndef HEATLINE_DEBUG_H
#define HEATLINE_DEBUG_H

#if defined(HEATLINE_DEBUG) || !defined(NDEBUG)
#define HL_DEBUG 1
#else
#define HL_DEBUG 0
#endif

#if HL_DEBUG

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* To the program's standard error: the sampler thread's descriptor table is its own (sampler.c),
 * where 2 is whatever it opened third, so the message goes through /proc/self/fd/2, the main
 * thread's (the process's) descriptor 2, opened anew; only where that cannot be opened, to 2. */
#ifdef O_CLOEXEC /* not declared to a file built without _GNU_SOURCE or POSIX.1-2008 */
#define HL_DEBUG_CLOEXEC O_CLOEXEC
#else
#define HL_DEBUG_CLOEXEC 0
#endif
static inline void hl_debug_write(const char *text) {
    int fd = open("/proc/self/fd/2", O_WRONLY | O_APPEND | O_NOCTTY | HL_DEBUG_CLOEXEC);
    (void)!write(fd >= 0 ? fd : 2, text, strlen(text));
    if (fd >= 0) close(fd);
}

__attribute__((noreturn, cold)) static inline void hl_assert_failed(const char *expression,
                                                                    const char *file, int line) {
    char digits[16];
    size_t n = sizeof(digits);
    digits[--n] = '\0';
    do digits[--n] = (char)('0' + line % 10);
    while ((line /= 10) > 0 && n > 0);
    hl_debug_write("heatline: internal check failed: ");
    hl_debug_write(expression);
    hl_debug_write(" (");
    hl_debug_write(file);
    hl_debug_write(":");
    hl_debug_write(digits + n);
    hl_debug_write(")\n");
    abort();
}

#define HL_ASSERT(condition)                                                                       \
    ((condition) ? (void)0 : hl_assert_failed(#condition, __FILE__, __LINE__))

#else

/* Nothing: not even evaluated (a check may call what exists in debug builds only). */
#define HL_ASSERT(condition) ((void)0)

#endif

#endif
