/* memread.c: see memread.h. */
#define _GNU_SOURCE
#include "memread.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* Set once by hl_memread_init (under the GIL, before the sampler thread starts) and read-only
 * afterwards. */
static int use_pipe = 0;
static pid_t self_pid; /* getpid() is a system call each time; refreshed by every init */

typedef struct pipe_pair {
    int fds[2];
    struct stat ids[2]; /* what fds were when made, to notice them being taken */
} pipe_pair;

/* The fallback pipe in the program's descriptor table, and the one the sampler thread makes in
 * its own (sampler.c): a descriptor number means something only in the table it was opened in. */
static pipe_pair shared_pipe = {{-1, -1}, {{0}}};
static pipe_pair own_pipe = {{-1, -1}, {{0}}};

/* Set by a thread reading its own stack (see hl_memread_direct). */
static __thread int direct __attribute__((tls_model("initial-exec")));
/* The pipe of the calling thread's table: own_pipe in the sampler thread, else NULL (shared). */
static __thread pipe_pair *thread_pipe __attribute__((tls_model("initial-exec")));

void hl_memread_direct(int on) {
    direct = on;
}

static int read_via_syscall(void *dst, uintptr_t src, size_t n) {
    struct iovec local = {dst, n};
    struct iovec remote = {(void *)src, n};
    ssize_t got = process_vm_readv(self_pid, &local, 1, &remote, 1, 0);
    return got == (ssize_t)n ? 0 : -1;
}

/* Whether p->fds[i] is still the pipe made by make_pipe. The program owns the descriptor
 * table: it may close our numbers (os.closerange) and get them back for its own files, which
 * heatline must then neither write to, read from, nor close. (In the sampler's own table it
 * cannot; the check costs the same and keeps one path.) */
static int pipe_end_ours(const pipe_pair *p, int i) {
    struct stat now;
    return p->fds[i] >= 0 && fstat(p->fds[i], &now) == 0 && now.st_dev == p->ids[i].st_dev &&
           now.st_ino == p->ids[i].st_ino && S_ISFIFO(now.st_mode);
}

static int make_pipe(pipe_pair *p) {
    if (pipe2(p->fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        p->fds[0] = p->fds[1] = -1;
        return -errno;
    }
    if (fstat(p->fds[0], &p->ids[0]) != 0 || fstat(p->fds[1], &p->ids[1]) != 0) {
        int error = errno;
        close(p->fds[0]);
        close(p->fds[1]);
        p->fds[0] = p->fds[1] = -1;
        return -error;
    }
    return 0;
}

/* The pipe fallback: write() from the address (EFAULT if unmapped), then read it back. Its
 * users (the sampler thread, and memory hooks reading another thread's stack) hold the engine
 * lock, so no locking is needed here; each uses the pipe of its descriptor table. Both ends are
 * checked to still be ours before each read (one fstat each; this path is only taken where
 * process_vm_readv is refused); a taken end is forgotten, never closed, and a new pipe is
 * made. */
static int read_via_pipe(void *dst, uintptr_t src, size_t n) {
    pipe_pair *p = thread_pipe != NULL ? thread_pipe : &shared_pipe;
    if (!pipe_end_ours(p, 0) || !pipe_end_ours(p, 1)) {
        p->fds[0] = p->fds[1] = -1; /* the numbers are the program's now */
        if (make_pipe(p) != 0) return -1;
    }
    char *out = dst;
    while (n > 0) {
        size_t chunk = n > 4096 ? 4096 : n;
        /* The system call itself, not libc's write(): a sanitizer's interceptor of write()
         * checks the bytes it sends, and reading memory the program may have freed is what
         * this function is for (the caller validates what it got). Under ASan, a frame or
         * thread state read just after it was freed was reported, the report written to
         * descriptor 2 of the sampler's own table, and the program aborted without a word. */
        ssize_t w = (ssize_t)syscall(SYS_write, p->fds[1], (const void *)src, chunk);
        if (w <= 0) return -1;
        ssize_t r = read(p->fds[0], out, (size_t)w);
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
    int error = make_pipe(&shared_pipe);
    if (error != 0) return error;
    use_pipe = 1;
    return 0;
}

void hl_memread_fini(void) {
    if (!use_pipe) return;
    for (int i = 0; i < 2; i++)
        if (pipe_end_ours(&shared_pipe, i)) close(shared_pipe.fds[i]);
    shared_pipe.fds[0] = shared_pipe.fds[1] = -1;
    use_pipe = 0;
}

void hl_memread_own_table(void) {
    /* The previous sampler's pipe went with its table; this one makes its own when first needed.
     * Only one sampler thread runs at a time. */
    own_pipe.fds[0] = own_pipe.fds[1] = -1;
    thread_pipe = &own_pipe;
}

int hl_memread(void *dst, uintptr_t src, size_t n) {
    if (src == 0 || n == 0) return -1;
    if (direct) {
        memcpy(dst, (const void *)src, n);
        return 0;
    }
    return use_pipe ? read_via_pipe(dst, src, n) : read_via_syscall(dst, src, n);
}

void hl_memread_batch(int pid, struct iovec *local, struct iovec *remote, size_t n, uint8_t *ok) {
    if (pid == 0 && (direct || use_pipe)) {
        for (size_t i = 0; i < n; i++)
            ok[i] =
                hl_memread(local[i].iov_base, (uintptr_t)remote[i].iov_base, local[i].iov_len) == 0;
        return;
    }
    size_t start = 0;
    while (start < n) {
        ssize_t got = process_vm_readv(pid == 0 ? self_pid : (pid_t)pid, local + start, n - start,
                                       remote + start, n - start, 0);
        if (got < 0 && errno != EFAULT) { /* refused, or gone: nothing more will be read */
            while (start < n) ok[start++] = 0;
            return;
        }
        size_t left = got < 0 ? 0 : (size_t)got;
        while (start < n && left >= local[start].iov_len) { /* whole pieces */
            left -= local[start].iov_len;
            ok[start++] = 1;
        }
        if (start < n) ok[start++] = 0; /* where the kernel stopped: unreadable */
    }
}

int hl_memread_remote(int pid, void *dst, uintptr_t src, size_t n) {
    if (src == 0 || n == 0) return -EFAULT;
    struct iovec local = {dst, n};
    struct iovec remote = {(void *)src, n};
    ssize_t got = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
    if (got == (ssize_t)n) return 0;
    return got < 0 ? -errno : -EFAULT;
}

int hl_memwrite_remote(int pid, uintptr_t dst, const void *src, size_t n) {
    if (dst == 0 || n == 0) return -EFAULT;
    struct iovec local = {(void *)src, n};
    struct iovec remote = {(void *)dst, n};
    ssize_t got = process_vm_writev((pid_t)pid, &local, 1, &remote, 1, 0);
    if (got == (ssize_t)n) return 0;
    return got < 0 ? -errno : -EFAULT;
}
