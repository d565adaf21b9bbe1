/* Copy probe: counts the bytes every library passes to memcpy and memmove (and to their
 * fortified and mempcpy variants), for the copy truths of the memory targets.
 *
 * Build and use (tests/integration/test_memory_truth.py does this):
 *   gcc -O1 -fno-builtin -shared -fPIC -o copyprobe.so tests/targets/_copyprobe.c -ldl
 *   LD_PRELOAD=$PWD/copyprobe.so HEATLINE_TRUTH_MODE=copyprobe python target.py
 * The target's truth module reads hl_copyprobe_bytes() (through ctypes) at every line of its
 * phase functions.
 *
 * LD_PRELOAD interposes on exactly the calls a GOT/PLT hook sees: calls made through the
 * dynamic symbol table by libpython, extension modules and other libraries. Copies made inside
 * libc itself (realloc moving a block, stdio) and copies the compiler inlined (small fixed
 * sizes) are invisible to both, and are not what "copy volume" measures.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

static uint64_t copied;

typedef void *(*copy_fn)(void *, const void *, size_t);
typedef void *(*copy_chk_fn)(void *, const void *, size_t, size_t);

static copy_fn real_memcpy, real_memmove, real_mempcpy;
static copy_chk_fn real_memcpy_chk, real_memmove_chk, real_mempcpy_chk;

uint64_t hl_copyprobe_bytes(void) {
    return __atomic_load_n(&copied, __ATOMIC_RELAXED);
}

static void count(size_t n) {
    __atomic_fetch_add(&copied, (uint64_t)n, __ATOMIC_RELAXED);
}

/* Before the constructor has run (a library's own initialisation): a byte loop the compiler is
 * told not to turn back into a memmove call. */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void *
slow_move(void *dst, const void *src, size_t n) {
    volatile unsigned char *d = dst;
    const volatile unsigned char *s = src;
    if (d < s) {
        for (size_t i = 0; i < n; i++) d[i] = s[i];
    } else {
        for (size_t i = n; i > 0; i--) d[i - 1] = s[i - 1];
    }
    return dst;
}

__attribute__((constructor)) static void resolve(void) {
    real_memcpy = (copy_fn)dlsym(RTLD_NEXT, "memcpy");
    real_memmove = (copy_fn)dlsym(RTLD_NEXT, "memmove");
    real_mempcpy = (copy_fn)dlsym(RTLD_NEXT, "mempcpy");
    real_memcpy_chk = (copy_chk_fn)dlsym(RTLD_NEXT, "__memcpy_chk");
    real_memmove_chk = (copy_chk_fn)dlsym(RTLD_NEXT, "__memmove_chk");
    real_mempcpy_chk = (copy_chk_fn)dlsym(RTLD_NEXT, "__mempcpy_chk");
}

void *memcpy(void *dst, const void *src, size_t n) {
    count(n);
    return real_memcpy ? real_memcpy(dst, src, n) : slow_move(dst, src, n);
}

void *memmove(void *dst, const void *src, size_t n) {
    count(n);
    return real_memmove ? real_memmove(dst, src, n) : slow_move(dst, src, n);
}

void *mempcpy(void *dst, const void *src, size_t n) {
    count(n);
    if (real_mempcpy) return real_mempcpy(dst, src, n);
    return (char *)slow_move(dst, src, n) + n;
}

void *__memcpy_chk(void *dst, const void *src, size_t n, size_t room) {
    count(n);
    if (real_memcpy_chk) return real_memcpy_chk(dst, src, n, room);
    return slow_move(dst, src, n);
}

void *__memmove_chk(void *dst, const void *src, size_t n, size_t room) {
    count(n);
    if (real_memmove_chk) return real_memmove_chk(dst, src, n, room);
    return slow_move(dst, src, n);
}

void *__mempcpy_chk(void *dst, const void *src, size_t n, size_t room) {
    count(n);
    if (real_mempcpy_chk) return real_mempcpy_chk(dst, src, n, room);
    return (char *)slow_move(dst, src, n) + n;
}
