/* memread.c: see memread.h. */
#define _GNU_SOURCE
#include "memread.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* Set once by hl_memread_init (under the GIL, before the sampler thread starts) and read-only
 * afterwards. */
static int use_pipe = 0;
static int pipe_fds[2] = {-1, -1};
static struct stat pipe_ids[2]; /* what pipe_fds were when made, to notice them being taken */
static pid_t self_pid; /* getpid() is a system call each time; refreshed by every init */

/* Set by a thread reading its own stack (see hl_memread_direct). */
static __thread int direct __attribute__((tls_model("initial-exec")));

void hl_memread_direct(int on) {
    direct = on;
}

static int read_via_syscall(void *dst, uintptr_t src, size_t n) {
    struct iovec local = {dst, n};
    struct iovec remote = {(void *)src, n};
    ssize_t got = process_vm_readv(self_pid, &local, 1, &remote, 1, 0);
    return got == (ssize_t)n ? 0 : -1;
}

/* Whether pipe_fds[i] is still the pipe made by make_pipe. The program owns the descriptor
 * table: it may close our numbers (os.closerange) and get them back for its own files, which
 * heatline must then neither write to, read from, nor close. */
static int pipe_end_ours(int i) {
    struct stat now;
    return pipe_fds[i] >= 0 && fstat(pipe_fds[i], &now) == 0 && now.st_dev == pipe_ids[i].st_dev &&
           now.st_ino == pipe_ids[i].st_ino && S_ISFIFO(now.st_mode);
}

static int make_pipe(void) {
    if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        pipe_fds[0] = pipe_fds[1] = -1;
        return -errno;
    }
    if (fstat(pipe_fds[0], &pipe_ids[0]) != 0 || fstat(pipe_fds[1], &pipe_ids[1]) != 0) {
        int error = errno;
        close(pipe_fds[0]);
        close(pipe_fds[1]);
        pipe_fds[0] = pipe_fds[1] = -1;
        return -error;
    }
    return 0;
}

/* The pipe fallback: write() from the address (EFAULT if unmapped), then read it back. Its
 * users (the sampler thread, and memory hooks reading another thread's stack) hold the engine
 * lock, so no locking is needed here. Both ends are checked to still be ours before each read
 * (one fstat each; this path is only taken where process_vm_readv is refused); a taken end is
 * forgotten, never closed, and a new pipe is made. */
static int read_via_pipe(void *dst, uintptr_t src, size_t n) {
    if (!pipe_end_ours(0) || !pipe_end_ours(1)) {
        pipe_fds[0] = pipe_fds[1] = -1; /* the numbers are the program's now */
        if (make_pipe() != 0) return -1;
    }
    char *out = dst;
    while (n > 0) {
        size_t chunk = n > 4096 ? 4096 : n;
        ssize_t w = write(pipe_fds[1], (const void *)src, chunk);
        if (w <= 0) return -1;
        ssize_t r = read(pipe_fds[0], out, (size_t)w);
        if (r != w) return -1;
        out += w;
        src += (uintptr_t)w;
        n -= (size_t)w;
    }
    return 0;
}

int hl_memread_init(void) {
    uintptr_t probe = 0x5eed;
    uintptr_t copy = 0;
    self_pid = getpid();
    if (use_pipe) return 0;
    if (read_via_syscall(&copy, (uintptr_t)&probe, sizeof(probe)) == 0 && copy == probe) return 0;
    int error = make_pipe();
    if (error != 0) return error;
    use_pipe = 1;
    return 0;
}

void hl_memread_fini(void) {
    if (!use_pipe) return;
    for (int i = 0; i < 2; i++)
        if (pipe_end_ours(i)) close(pipe_fds[i]);
    pipe_fds[0] = pipe_fds[1] = -1;
    use_pipe = 0;
}

int hl_memread(void *dst, uintptr_t src, size_t n) {
    if (src == 0 || n == 0) return -1;
    if (direct) {
        memcpy(dst, (const void *)src, n);
        return 0;
    }
    return use_pipe ? read_via_pipe(dst, src, n) : read_via_syscall(dst, src, n);
}

int hl_memread_remote(int pid, void *dst, uintptr_t src, size_t n) {
    if (src == 0 || n == 0) return -EFAULT;
    struct iovec local = {dst, n};
    struct iovec remote = {(void *)src, n};
    ssize_t got = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
    if (got == (ssize_t)n) return 0;
    return got < 0 ? -errno : -EFAULT;
}
