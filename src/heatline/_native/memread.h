/* memread.h: fault-tolerant reads of this process's own memory (and of another's).
 *
 * The sampler thread inspects interpreter structures that other threads are changing at the
 * same moment: a frame can be popped and its memory unmapped between two reads. A plain load
 * could then crash the profiled program. hl_memread() copies through the kernel
 * (process_vm_readv on our own pid), which reports a bad address as an error instead of a
 * fault. Where that system call is refused (some seccomp profiles), it falls back to writing
 * the bytes into a pipe, which fails just as gracefully with EFAULT.
 *
 * A successful read is a snapshot, not a consistent view: callers validate what they read.
 */
#ifndef HEATLINE_MEMREAD_H
#define HEATLINE_MEMREAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Prepares the read path (opens the fallback pipe if needed). Returns 0 or -errno. */
int hl_memread_init(void);
void hl_memread_fini(void);

/* Called by a thread that has a descriptor table of its own (the sampler: sampler.c), before
 * it reads: in the pipe fallback its reads use a pipe made in its own table, since the numbers
 * of the one hl_memread_init made mean nothing there. */
void hl_memread_own_table(void);

/* Copies n bytes from address src into dst. Returns 0, or -1 if any byte is unreadable. */
int hl_memread(void *dst, uintptr_t src, size_t n);

/* A thread reading its own Python stack (a memory hook finding the line that allocates) reads
 * memory nothing else can free meanwhile: its frames are popped only by itself, and they keep
 * their code objects alive. It may switch to plain loads for the duration, which saves a
 * system call per read. Per thread. */
void hl_memread_direct(int on);

/* Copies n bytes from address src of process pid (another process, heatline dump) into dst:
 * process_vm_readv, with the kernel's permission checks (those of ptrace attach). Returns 0, or
 * -errno: EPERM refused, ESRCH no such process, EFAULT an unreadable byte (a short read is one);
 * ENOSYS where the system call does not exist (gVisor). */
int hl_memread_remote(int pid, void *dst, uintptr_t src, size_t n);
/* Its converse: n bytes of src written at address dst of process pid (process_vm_writev, the
 * same permission checks). Returns 0 or -errno, as hl_memread_remote. */
int hl_memwrite_remote(int pid, uintptr_t dst, const void *src, size_t n);

/* Several reads in as few system calls as it can: piece i is local[i].iov_len bytes from
 * remote[i].iov_base into local[i].iov_base (remote[i].iov_len must be the same), from this
 * process (pid 0, hl_memread's path) or process pid. ok[i] is set to 1 where piece i was read
 * whole, else 0. The kernel reads the pieces in order and stops at the first it cannot read;
 * the read goes on after that piece, so one unreadable piece costs one more call. At most
 * 1024 pieces (IOV_MAX). */
void hl_memread_batch(int pid, struct iovec *local, struct iovec *remote, size_t n, uint8_t *ok);

/* Reads one pointer-sized word. Returns 0 or -1. */
static inline int hl_memread_ptr(uintptr_t *dst, uintptr_t src) {
    return hl_memread(dst, src, sizeof(*dst));
}

#endif
