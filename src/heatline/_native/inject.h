/* inject.h: heatline attach's way in: a shared library loaded into another running process, and
 * one of its functions called there, with ptrace alone (no gdb or lldb).
 *
 * One thread of the target is borrowed for a moment: seized (PTRACE_SEIZE) and stopped
 * (PTRACE_INTERRUPT), its registers saved (general, and the whole FPU/SSE/AVX state), then made
 * to call dlopen(library, RTLD_NOW) and library's function(argument) as if it had called them
 * itself: the argument string is written below its stack pointer (past the 128-byte red zone),
 * the stack 16-byte aligned, and a return address of 0 pushed, so each call's return faults
 * into a ptrace stop (SIGSEGV at address 0) where its result is read and the signal dropped.
 * Then the registers are put back exactly and the thread let go: a thread that was blocked in a
 * system call has the kernel restart it, as after any stop (the saved orig_rax and the
 * -ERESTART* value in rax are what the kernel's restart reads on the way out; the borrowed
 * registers carry orig_rax = -1, so nothing is restarted into the calls). A signal that arrives
 * for the thread meanwhile is kept and handed back when it is let go.
 *
 * Which thread: dlopen takes the loader's lock and malloc's, so the borrowed thread must hold
 * neither. A thread blocked in a system call from the list in inject.c (sleep, select, poll,
 * read, futex...) holds none; a thread stopped in user code holds none unless it was inside the C
 * library or the loader, which its instruction pointer tells: such a thread is let go again and
 * another (or the same, a moment later) is tried. No Python runs on the borrowed thread: the
 * library's function only starts a thread of its own (agent.c).
 *
 * A library already mapped in the target (a second attach) is not loaded again: only its
 * function is called. x86_64 only (the register convention); other machines get
 * HL_INJECT_UNSUPPORTED. The C library must be glibc (dlopen in libc.so.6 from 2.34, else its
 * __libc_dlopen_mode).
 */
#ifndef HEATLINE_INJECT_H
#define HEATLINE_INJECT_H

#include <stdint.h>

enum hl_inject_error {
    HL_INJECT_OK = 0,
    HL_INJECT_NO_PROCESS,  /* no such process, or it exited meanwhile */
    HL_INJECT_REFUSED,     /* ptrace refused: os_error says how (EPERM...) */
    HL_INJECT_UNSUPPORTED, /* not x86_64, or no glibc dlopen in the target */
    HL_INJECT_BUSY,        /* no thread could be borrowed safely before the deadline */
    HL_INJECT_LOAD_FAILED, /* dlopen returned NULL in the target */
    HL_INJECT_FAILED,      /* a call did not return as expected (crash, deadline) */
};

typedef struct hl_inject_result {
    int error;        /* an hl_inject_error */
    int os_error;     /* the errno behind it, or 0 */
    char message[512];
    int tid;          /* the thread borrowed */
    int loaded;       /* 1: the library was loaded by this call (0: it was mapped already) */
    int64_t value;    /* what function returned (its int result, sign-extended) */
    uint64_t held_ns; /* how long the borrowed thread was kept from its own work */
} hl_inject_result;

/* Loads library (an absolute path as the target sees it) into process pid unless it is mapped
 * there already, then calls its exported `int function(const char *argument)` on a borrowed
 * thread. Gives up after timeout_ns. Returns 0, or -1 with out->error set. Needs neither the
 * GIL nor the engine. */
int hl_inject(int pid, const char *library, const char *function, const char *argument,
              uint64_t timeout_ns, hl_inject_result *out);

#endif
