/* exitstatus.c: see exitstatus.h. */
#define _GNU_SOURCE
#include "exitstatus.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Set by hl_exit_status_record (with the GIL: one caller at a time); read at exit. */
static char *status_path;
static pid_t status_pid;
static int registered;

#ifdef __GLIBC__
static void write_status(int status, void *unused) {
    (void)unused;
    if (status_path == NULL || getpid() != status_pid) return;
    /* Appended to the file, which must exist: the child's profile, written by then. */
    int fd = open(status_path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) return; /* no profile written, or the main process removed the directory */
    char text[16];
    int length = snprintf(text, sizeof(text), "%d", status);
    ssize_t written = write(fd, text, (size_t)length);
    (void)written; /* a short write leaves a file the reader refuses: the status stays unknown */
    close(fd);
}
#endif

int hl_exit_status_record(const char *path) {
#ifdef __GLIBC__
    char *copy = strdup(path);
    if (copy == NULL) return -1;
    if (!registered) {
        if (on_exit(write_status, NULL) != 0) {
            free(copy);
            return -1;
        }
        registered = 1;
    }
    free(status_path);
    status_path = copy;
    status_pid = getpid();
    return 0;
#else
    (void)path;
    return -1;
#endif
}
