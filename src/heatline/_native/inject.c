/* inject.c: see inject.h. */
#define _GNU_SOURCE
#include "inject.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "elf.h"

static int fail(hl_inject_result *r, int error, int os_error, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(r->message, sizeof(r->message), format, args);
    va_end(args);
    r->error = error;
    r->os_error = os_error;
    return -1;
}

#if defined(__x86_64__)

#include <elf.h>
#include <sys/user.h>

#define RED_ZONE 128
#define MAX_RANGES 16
#define MAX_PENDING 8
#define XSTATE_BYTES 65536 /* room for any XSAVE area (AMX's is about 11 KiB) */
#define POLL_NS 50000

/* ---- the target's memory map ------------------------------------------------------------- */

typedef struct range {
    uintptr_t start, end;
} range;

typedef struct maps {
    char libc[PATH_MAX];  /* the C library's file */
    uintptr_t libc_start; /* its mapping at offset 0 */
    uintptr_t library_start;
    int library_found;
    range unsafe[MAX_RANGES]; /* the C library's and the loader's code */
    size_t nunsafe;
} maps;

static int is_libc(const char *base) {
    return strncmp(base, "libc.so", 7) == 0 ||
           (strncmp(base, "libc-", 5) == 0 && strstr(base, ".so") != NULL);
}

static int is_loader(const char *base) {
    return strncmp(base, "ld-linux", 8) == 0 || strncmp(base, "ld-2.", 5) == 0;
}

/* Reads /proc/pid/maps: where the C library and library are loaded, where the code is that a
 * borrowed thread must not be in. Returns 0 or -errno. */
static int read_maps(int pid, const char *library, maps *m) {
    memset(m, 0, sizeof(*m));
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/maps", pid);
    FILE *file = fopen(path, "re");
    if (file == NULL) return errno == ENOENT ? -ESRCH : -errno;
    char line[PATH_MAX + 256];
    while (fgets(line, sizeof(line), file) != NULL) {
        unsigned long start, end, offset;
        char perms[8];
        int name_at = 0;
        if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &start, &end, perms, &offset, &name_at) <
                4 ||
            name_at == 0)
            continue;
        char *name = line + name_at;
        name[strcspn(name, "\n")] = '\0';
        if (name[0] != '/') continue;
        const char *base = strrchr(name, '/') + 1;
        if (offset == 0 && strcmp(name, library) == 0 && !m->library_found) {
            m->library_start = start;
            m->library_found = 1;
        }
        if (is_libc(base) && offset == 0 && m->libc_start == 0) {
            m->libc_start = start;
            snprintf(m->libc, sizeof(m->libc), "%s", name);
        }
        if ((is_libc(base) || is_loader(base)) && perms[2] == 'x' && m->nunsafe < MAX_RANGES)
            m->unsafe[m->nunsafe++] = (range){start, end};
    }
    fclose(file);
    return 0;
}

/* The address in the target of file's symbol name, the file being mapped at start (its offset-0
 * mapping); 0 when not found. The file is opened through /proc/pid/root first (a container's). */
static uintptr_t symbol_address(int pid, const char *file, uintptr_t start, const char *name) {
    char where[PATH_MAX + 64];
    for (int attempt = 0; attempt < 2; attempt++) {
        if (attempt == 0) snprintf(where, sizeof(where), "/proc/%d/root%s", pid, file);
        else snprintf(where, sizeof(where), "%s", file);
        hl_elf_symbol symbol = {name, 0, 0};
        uint64_t first_vaddr = 0;
        if (hl_elf_symbols(where, &symbol, 1, &first_vaddr) == 0 && symbol.found)
            return start - (uintptr_t)first_vaddr + (uintptr_t)symbol.value;
    }
    return 0;
}

/* ---- one borrowed thread ------------------------------------------------------------------ */

typedef struct borrowed {
    pid_t pid, tid;
    struct user_regs_struct regs; /* as it was */
    uint8_t *xstate;              /* its FPU/SSE/AVX state as it was */
    size_t xstate_size;
    int xstate_kind; /* NT_X86_XSTATE, or NT_PRFPREG where that is refused */
    int pending[MAX_PENDING]; /* signals that arrived for it meanwhile */
    int npending;
    uint64_t stopped_ns;
} borrowed;

/* Waits for tid's next stop (or end) until deadline. Returns 1 (stopped, *status set), 0 (the
 * deadline passed), -ESRCH (it exited). */
static int wait_stop(pid_t tid, int *status, uint64_t deadline) {
    for (;;) {
        pid_t got = waitpid(tid, status, __WALL | WNOHANG);
        if (got == tid) {
            if (WIFEXITED(*status) || WIFSIGNALED(*status)) return -ESRCH;
            if (WIFSTOPPED(*status)) return 1;
        } else if (got < 0 && errno != EINTR) {
            return -ESRCH;
        }
        if (hl_now_ns() >= deadline) return 0;
        struct timespec pause = {0, POLL_NS};
        nanosleep(&pause, NULL);
    }
}

static void keep_signal(borrowed *b, int signal) {
    if (b->npending < MAX_PENDING) b->pending[b->npending++] = signal;
}

/* The system calls a thread can be blocked in without holding the loader's or malloc's lock:
 * waits for time, for descriptors, for children, for signals, for a futex (a lock or condition
 * of its own: a lock of malloc's or the loader's it waits for is held by another thread, which
 * will let it go). x86_64's numbers. */
static int blocking_syscall(long number) {
    switch (number) {
        case 0:   /* read */
        case 7:   /* poll */
        case 23:  /* select */
        case 34:  /* pause */
        case 35:  /* nanosleep */
        case 43:  /* accept */
        case 45:  /* recvfrom */
        case 47:  /* recvmsg */
        case 61:  /* wait4 */
        case 128: /* rt_sigtimedwait */
        case 130: /* rt_sigsuspend */
        case 202: /* futex */
        case 230: /* clock_nanosleep */
        case 232: /* epoll_wait */
        case 247: /* waitid */
        case 270: /* pselect6 */
        case 271: /* ppoll */
        case 281: /* epoll_pwait */
        case 288: /* accept4 */
        case 441: /* epoll_pwait2 */ return 1;
        default: return 0;
    }
}

/* Whether the stopped thread may run dlopen now. */
static int safe_to_borrow(const borrowed *b, const maps *m) {
    long long syscall_number = (long long)b->regs.orig_rax;
    if (syscall_number >= 0) return blocking_syscall((long)syscall_number);
    for (size_t i = 0; i < m->nunsafe; i++)
        if (b->regs.rip >= m->unsafe[i].start && b->regs.rip < m->unsafe[i].end) return 0;
    return 1;
}

/* Lets the thread go with its registers as they were, handing back the signals it got. */
static void give_back(borrowed *b) {
    ptrace(PTRACE_SETREGS, b->tid, NULL, &b->regs);
    if (b->xstate != NULL) {
        struct iovec io = {b->xstate, b->xstate_size};
        ptrace(PTRACE_SETREGSET, b->tid, (void *)(intptr_t)b->xstate_kind, &io);
    }
    int first = b->npending > 0 ? b->pending[0] : 0;
    ptrace(PTRACE_DETACH, b->tid, NULL, (void *)(intptr_t)first);
    for (int i = 1; i < b->npending; i++) syscall(SYS_tgkill, b->pid, b->tid, b->pending[i]);
    free(b->xstate);
    b->xstate = NULL;
}

/* Seizes and stops tid and saves its state. Returns 0, or -errno (-ETIMEDOUT: it did not stop;
 * it is let go). */
static int borrow(pid_t pid, pid_t tid, borrowed *b, uint64_t deadline) {
    memset(b, 0, sizeof(*b));
    b->pid = pid;
    b->tid = tid;
    if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) return -errno;
    ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
    int status;
    for (;;) {
        int got = wait_stop(tid, &status, deadline);
        if (got < 0) return -ESRCH;
        if (got == 0) {
            /* A thread that cannot stop (uninterruptible sleep) stays attached until it does:
             * detaching needs a stop. The kernel lets it go when heatline exits. */
            return -ETIMEDOUT;
        }
        if ((status >> 16) == PTRACE_EVENT_STOP) break; /* our interrupt (or a group stop) */
        keep_signal(b, WSTOPSIG(status));                /* a signal on its way: later */
        ptrace(PTRACE_CONT, tid, NULL, NULL);
        ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
    }
    b->stopped_ns = hl_now_ns();
    if (ptrace(PTRACE_GETREGS, tid, NULL, &b->regs) != 0) {
        int error = errno;
        ptrace(PTRACE_DETACH, tid, NULL, NULL);
        return -error;
    }
    b->xstate = malloc(XSTATE_BYTES);
    if (b->xstate == NULL) {
        ptrace(PTRACE_DETACH, tid, NULL, NULL);
        return -ENOMEM;
    }
    struct iovec io = {b->xstate, XSTATE_BYTES};
    b->xstate_kind = NT_X86_XSTATE;
    if (ptrace(PTRACE_GETREGSET, tid, (void *)(intptr_t)NT_X86_XSTATE, &io) != 0) {
        io.iov_len = sizeof(struct user_fpregs_struct);
        b->xstate_kind = NT_PRFPREG;
        if (ptrace(PTRACE_GETREGSET, tid, (void *)(intptr_t)NT_PRFPREG, &io) != 0) {
            int error = errno;
            free(b->xstate);
            b->xstate = NULL;
            ptrace(PTRACE_DETACH, tid, NULL, NULL);
            return -error;
        }
    }
    b->xstate_size = io.iov_len;
    return 0;
}

/* Writes size bytes at address in the thread's process, a word at a time. */
static int poke(pid_t tid, uintptr_t address, const void *data, size_t size) {
    const uint8_t *bytes = data;
    for (size_t done = 0; done < size; done += sizeof(long)) {
        long word = 0;
        memcpy(&word, bytes + done, size - done < sizeof(long) ? size - done : sizeof(long));
        if (ptrace(PTRACE_POKEDATA, tid, (void *)(address + done), (void *)word) != 0)
            return -errno;
    }
    return 0;
}

/* Makes the borrowed thread call function(string, second) and return into address 0. Returns 0
 * with *result (rax), or -1 with r's error set. */
static int call(borrowed *b, uintptr_t function, const char *string, uint64_t second,
                uint64_t *result, uint64_t deadline, hl_inject_result *r) {
    size_t length = strlen(string) + 1;
    size_t padded = (length + sizeof(long) - 1) & ~(sizeof(long) - 1);
    uintptr_t text = ((uintptr_t)b->regs.rsp - RED_ZONE - padded) & ~(uintptr_t)15;
    uintptr_t sp = text - 8; /* at a function's entry, rsp + 8 is a multiple of 16 */
    uint64_t zero = 0;
    int error = poke(b->tid, text, string, length);
    if (error == 0) error = poke(b->tid, sp, &zero, sizeof(zero));
    if (error != 0)
        return fail(r, HL_INJECT_FAILED, -error, "writing to thread %d's stack: %s", b->tid,
                    strerror(-error));
    struct user_regs_struct regs = b->regs;
    regs.rip = function;
    regs.rsp = sp;
    regs.rdi = text;
    regs.rsi = second;
    regs.rax = 0;
    regs.orig_rax = (unsigned long long)-1; /* no system call to restart into the call */
    regs.eflags &= ~0x400ull;               /* the direction flag clear, as the ABI wants */
    if (ptrace(PTRACE_SETREGS, b->tid, NULL, &regs) != 0 ||
        ptrace(PTRACE_CONT, b->tid, NULL, NULL) != 0)
        return fail(r, HL_INJECT_FAILED, errno, "running thread %d: %s", b->tid, strerror(errno));
    for (;;) {
        int status;
        int got = wait_stop(b->tid, &status, deadline);
        if (got < 0) return fail(r, HL_INJECT_NO_PROCESS, ESRCH, "the process exited");
        if (got == 0) {
            ptrace(PTRACE_INTERRUPT, b->tid, NULL, NULL);
            if (wait_stop(b->tid, &status, hl_now_ns() + 1000000000u) <= 0)
                return fail(r, HL_INJECT_NO_PROCESS, ESRCH, "the process exited");
            return fail(r, HL_INJECT_FAILED, ETIMEDOUT,
                        "the call in thread %d did not return in time", b->tid);
        }
        int signal = WSTOPSIG(status);
        if ((status >> 16) != 0) {
            ptrace(PTRACE_CONT, b->tid, NULL, NULL); /* a group stop, or a late interrupt */
            continue;
        }
        if (signal == SIGSEGV) {
            struct user_regs_struct now;
            if (ptrace(PTRACE_GETREGS, b->tid, NULL, &now) != 0)
                return fail(r, HL_INJECT_FAILED, errno, "reading thread %d: %s", b->tid,
                            strerror(errno));
            if (now.rip == 0) {
                *result = now.rax;
                return 0;
            }
            return fail(r, HL_INJECT_FAILED, EFAULT,
                        "the call in thread %d crashed (at %#llx); its state is put back", b->tid,
                        (unsigned long long)now.rip);
        }
        keep_signal(b, signal);
        ptrace(PTRACE_CONT, b->tid, NULL, NULL);
    }
}

/* The process's threads, those blocked in a system call first, then the others; the main
 * thread first of its group. */
static size_t candidates(int pid, pid_t *tids, size_t capacity) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", pid);
    DIR *dir = opendir(path);
    if (dir == NULL) return 0;
    pid_t others[256];
    size_t n = 0, nothers = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL && n + nothers < capacity && nothers < 256) {
        char *end;
        long tid = strtol(entry->d_name, &end, 10);
        if (*end != '\0' || tid <= 0) continue;
        char file[96], text[64] = "";
        snprintf(file, sizeof(file), "/proc/%d/task/%ld/syscall", pid, tid);
        FILE *f = fopen(file, "re");
        if (f != NULL) {
            if (fgets(text, sizeof(text), f) == NULL) text[0] = '\0';
            fclose(f);
        }
        char *after;
        long number = strtol(text, &after, 10);
        pid_t *list = after != text && blocking_syscall(number) ? tids : others;
        size_t *count = list == tids ? &n : &nothers;
        list[(*count)++] = (pid_t)tid;
        if (tid == pid) { /* the main thread first */
            list[*count - 1] = list[0];
            list[0] = (pid_t)tid;
        }
    }
    closedir(dir);
    memcpy(&tids[n], others, nothers * sizeof(pid_t));
    return n + nothers;
}

int hl_inject(int pid, const char *library, const char *function, const char *argument,
              uint64_t timeout_ns, hl_inject_result *out) {
    memset(out, 0, sizeof(*out));
    uint64_t deadline = hl_now_ns() + timeout_ns;
    maps m;
    int error = read_maps(pid, library, &m);
    if (error == -ESRCH) return fail(out, HL_INJECT_NO_PROCESS, ESRCH, "no process %d", pid);
    if (error != 0)
        return fail(out, HL_INJECT_REFUSED, -error, "reading /proc/%d/maps: %s", pid,
                    strerror(-error));
    uintptr_t open_library = 0;
    uint64_t open_flags = 2; /* RTLD_NOW */
    if (!m.library_found) {
        if (m.libc_start == 0)
            return fail(out, HL_INJECT_UNSUPPORTED, 0,
                        "process %d maps no GNU C library (glibc), whose dlopen heatline uses",
                        pid);
        open_library = symbol_address(pid, m.libc, m.libc_start, "dlopen");
        if (open_library == 0) { /* glibc before 2.34: dlopen is libdl's; libc has its own */
            open_library = symbol_address(pid, m.libc, m.libc_start, "__libc_dlopen_mode");
            open_flags |= 0x80000000u; /* __RTLD_DLOPEN */
        }
        if (open_library == 0)
            return fail(out, HL_INJECT_UNSUPPORTED, 0, "no dlopen found in %s", m.libc);
    }

    pid_t tids[256];
    borrowed b;
    int have = 0;
    int last_error = 0;
    while (!have && hl_now_ns() < deadline) {
        size_t n = candidates(pid, tids, sizeof(tids) / sizeof(tids[0]));
        if (n == 0) return fail(out, HL_INJECT_NO_PROCESS, ESRCH, "no process %d", pid);
        for (size_t i = 0; i < n && !have; i++) {
            error = borrow(pid, tids[i], &b, deadline);
            if (error == -EPERM || error == -EACCES)
                return fail(out, HL_INJECT_REFUSED, -error, "ptrace of process %d: %s", pid,
                            strerror(-error));
            if (error != 0) {
                last_error = -error;
                continue; /* gone, or would not stop */
            }
            if (safe_to_borrow(&b, &m)) have = 1;
            else give_back(&b);
        }
        if (!have) {
            struct timespec pause = {0, 1000000}; /* let the threads move on */
            nanosleep(&pause, NULL);
        }
    }
    if (!have) {
        if (last_error == ESRCH && kill(pid, 0) != 0)
            return fail(out, HL_INJECT_NO_PROCESS, ESRCH, "process %d exited", pid);
        return fail(out, HL_INJECT_BUSY, last_error,
                    "no thread of process %d could be borrowed in time (each was inside the C "
                    "library or the loader)",
                    pid);
    }
    out->tid = b.tid;

    int result = 0;
    uint64_t value = 0;
    if (open_library != 0) {
        result = call(&b, open_library, library, open_flags, &value, deadline, out);
        if (result == 0 && value == 0)
            result = fail(out, HL_INJECT_LOAD_FAILED, 0,
                          "dlopen(%s) failed in process %d (can it read that file?)", library, pid);
        if (result == 0) {
            out->loaded = 1;
            error = read_maps(pid, library, &m);
            if (error != 0 || !m.library_found)
                result = fail(out, HL_INJECT_FAILED, 0,
                              "%s is not mapped in process %d after "
                              "dlopen",
                              library, pid);
        }
    }
    if (result == 0) {
        uintptr_t address = symbol_address(pid, library, m.library_start, function);
        if (address == 0)
            result = fail(out, HL_INJECT_FAILED, 0, "%s has no function %s", library, function);
        else result = call(&b, address, argument, 0, &value, deadline, out);
        if (result == 0) out->value = (int64_t)(int32_t)(uint32_t)value;
    }
    out->held_ns = hl_now_ns() - b.stopped_ns;
    if (out->error != HL_INJECT_NO_PROCESS) give_back(&b);
    else free(b.xstate);
    return result;
}

#else

int hl_inject(int pid, const char *library, const char *function, const char *argument,
              uint64_t timeout_ns, hl_inject_result *out) {
    (void)pid;
    (void)library;
    (void)function;
    (void)argument;
    (void)timeout_ns;
    memset(out, 0, sizeof(*out));
    return fail(out, HL_INJECT_UNSUPPORTED, 0,
                "heatline attach runs on x86_64 only (the registers of a borrowed call)");
}

#endif
