/* got.h: redirecting other libraries' calls to the C library by rewriting their GOT slots.
 *
 * Every shared object (and the executable) calls malloc, memcpy and friends through its global
 * offset table: a table of function addresses the dynamic linker fills in. Overwriting a slot
 * with the address of a hook redirects that object's calls, without re-executing the program
 * under LD_PRELOAD, so it works in an interpreter that is already running (heatline.start(),
 * notebooks). Objects loaded later are patched when they are loaded: dlopen itself is one of
 * the redirected functions (see memory.c).
 *
 * Each object is patched at most once per session; every slot written is remembered with its
 * previous content and restored by hl_got_restore(), for objects still loaded.
 *
 * Thread safety: patch and restore serialise on a lock of their own. A slot is one aligned
 * pointer-sized store, which other threads calling through it see atomically.
 */
#ifndef HEATLINE_GOT_H
#define HEATLINE_GOT_H

#include <stddef.h>

typedef struct hl_got_symbol {
    const char *name;
    void *hook;
    int everywhere; /* 1: also in the interpreter itself (see hl_got_patch) */
} hl_got_symbol;

/* Redirects `symbols` in every loaded object not patched yet this session, except the C
 * library, the dynamic linker, sanitizer runtimes and the object containing heatline's own
 * engine. In the interpreter's own objects (the executable, and the object containing
 * `interpreter_function`: libpython when it is a shared library), only symbols marked
 * `everywhere` are redirected. The symbol table must stay valid until hl_got_restore(). Returns
 * the number of slots written. */
int hl_got_patch(const hl_got_symbol *symbols, size_t nsymbols, const void *interpreter_function);

/* dlopen(file, flags) searched as if called from the object containing `caller`, with
 * `open_path` (the real dlopen) doing each load. A hook that calls the real dlopen makes
 * heatline's module the caller, so the caller's own DT_RPATH/DT_RUNPATH would not be searched;
 * this puts them back in glibc's order: an object already loaded under that name first; then
 * the caller's DT_RPATH (when it has no DT_RUNPATH); LD_LIBRARY_PATH (not in secure mode) and
 * the caller's DT_RUNPATH; then open_path(file) for the cache and default directories.
 * $ORIGIN and ${ORIGIN} are expanded; an entry using $LIB or $PLATFORM is skipped. Names with
 * a '/' and callers with neither tag go straight to open_path. */
void *hl_dlopen_as_caller(void *(*open_path)(const char *, int), const char *file, int flags,
                          const void *caller);

/* Puts back every slot written since the last restore, in objects still loaded, and forgets
 * which objects were patched. */
void hl_got_restore(void);

/* Slots redirected now: those written since the last hl_got_restore(), in this process or,
 * in a fork child, in the parent before the fork (the child inherits them). */
size_t hl_got_redirected_slots(void);

#endif
