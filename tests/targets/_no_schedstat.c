/* LD_PRELOAD shim for the tests: open() of any path ending in /schedstat fails with EACCES,
 * as where /proc hides it, so heatline's "waiting for a CPU was not measured" path can be
 * taken on a machine that has the file. Every other open() goes to libc's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/types.h>

int open(const char *path, int flags, ...) {
    static int (*real)(const char *, int, ...);
    if (real == NULL) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    size_t length = path != NULL ? strlen(path) : 0;
    if (length >= 10 && strcmp(path + length - 10, "/schedstat") == 0) {
        errno = EACCES;
        return -1;
    }
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list args;
        va_start(args, flags);
        mode = (mode_t)va_arg(args, int);
        va_end(args);
    }
    return real(path, flags, mode);
}
