/* got.c: see got.h. */
#define _GNU_SOURCE
#include "got.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "array.h"

#if defined(__x86_64__)
#define HL_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define HL_R_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define HL_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define HL_R_GLOB_DAT R_AARCH64_GLOB_DAT
#elif defined(__i386__)
#define HL_R_JUMP_SLOT R_386_JMP_SLOT
#define HL_R_GLOB_DAT R_386_GLOB_DAT
#endif

#if defined(__LP64__)
#define HL_R_SYM(info) ELF64_R_SYM(info)
#define HL_R_TYPE(info) ELF64_R_TYPE(info)
#else
#define HL_R_SYM(info) ELF32_R_SYM(info)
#define HL_R_TYPE(info) ELF32_R_TYPE(info)
#endif

typedef struct object_id {
    uintptr_t base;
    const void *phdr;
} object_id;

typedef struct saved_slot {
    object_id object;
    uintptr_t *slot;
    uintptr_t previous;
} saved_slot;

static pthread_mutex_t got_lock = PTHREAD_MUTEX_INITIALIZER;

/* fork() while another thread patches (a dlopen in a thread of its own): the lock is held
 * across the fork, so the child, which patches or restores the slots in its turn (a profiled
 * child's start; a fork child that profiles nothing takes the redirections out), never finds it
 * held by a thread it does not have, nor the tables half written. */
static void got_before_fork(void) {
    pthread_mutex_lock(&got_lock);
}
static void got_after_fork(void) {
    pthread_mutex_unlock(&got_lock);
}
static void register_fork_handlers(void) {
    pthread_atfork(got_before_fork, got_after_fork, got_after_fork);
}
static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;
static object_id *patched;
static size_t npatched, patched_capacity;
static saved_slot *saved;
static size_t nsaved, saved_capacity;

static int was_patched(object_id id) {
    for (size_t i = 0; i < npatched; i++)
        if (patched[i].base == id.base && patched[i].phdr == id.phdr) return 1;
    return 0;
}

static const char *basename_of(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Objects whose calls must stay direct: the C library and the dynamic linker (they implement
 * the functions), and the sanitizer runtimes (they interpose them). */
static int never_patched(const char *name) {
    static const char *const prefixes[] = {
        "libc.so", "ld-linux",  "ld-musl",    "ld64.so",    "libasan",       "libubsan", "liblsan",
        "libtsan", "libhwasan", "linux-vdso", "linux-gate", "libpthread.so", "libdl.so"};
    const char *base = basename_of(name);
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(*prefixes); i++)
        if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0) return 1;
    return 0;
}

static uintptr_t relocated(uintptr_t base, uintptr_t value) {
    /* glibc relocates these dynamic entries in place; other loaders leave them relative. */
    return value < base ? value + base : value;
}

typedef struct patch_request {
    const hl_got_symbol *symbols;
    size_t nsymbols;
    const char *self;        /* heatline's own object */
    const char *interpreter; /* libpython, or the executable when it is linked statically */
    int written;
} patch_request;

static void write_slot(object_id id, uintptr_t *slot, uintptr_t value, uintptr_t relro_start,
                       uintptr_t relro_end) {
    uintptr_t address = (uintptr_t)slot;
    int read_only = address >= relro_start && address < relro_end;
    long page_size = sysconf(_SC_PAGESIZE);
    void *page = (void *)(address & ~((uintptr_t)page_size - 1));
    if (read_only && mprotect(page, (size_t)page_size, PROT_READ | PROT_WRITE) != 0) return;
    if (HL_ARRAY_RESERVE(saved, saved_capacity, nsaved + 1, 64) == 0) {
        saved[nsaved++] = (saved_slot){id, slot, *slot};
        __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    }
    if (read_only) mprotect(page, (size_t)page_size, PROT_READ);
}

static void patch_table(patch_request *r, object_id id, int interpreter, const char *rel,
                        size_t rel_bytes, int is_rela, const ElfW(Sym) * symtab, const char *strtab,
                        uintptr_t relro_start, uintptr_t relro_end) {
    size_t entry = is_rela ? sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
    for (size_t at = 0; at + entry <= rel_bytes; at += entry) {
        const ElfW(Rel) *reloc = (const ElfW(Rel) *)(rel + at); /* Rela starts like Rel */
        unsigned long type = HL_R_TYPE(reloc->r_info);
        if (type != HL_R_JUMP_SLOT && type != HL_R_GLOB_DAT) continue;
        const ElfW(Sym) *sym = &symtab[HL_R_SYM(reloc->r_info)];
        if (sym->st_shndx != SHN_UNDEF || sym->st_name == 0) continue; /* not imported */
        const char *name = strtab + sym->st_name;
        for (size_t i = 0; i < r->nsymbols; i++) {
            const hl_got_symbol *s = &r->symbols[i];
            if ((interpreter && !s->everywhere) || strcmp(name, s->name) != 0) continue;
            uintptr_t *slot = (uintptr_t *)(id.base + reloc->r_offset);
            if (*slot != (uintptr_t)s->hook) {
                write_slot(id, slot, (uintptr_t)s->hook, relro_start, relro_end);
                r->written++;
            }
            break;
        }
    }
}

static int patch_object(struct dl_phdr_info *info, size_t size, void *data) {
    patch_request *r = data;
    (void)size;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    object_id id = {info->dlpi_addr, info->dlpi_phdr};
    if (was_patched(id) || never_patched(name)) return 0;
    if (r->self != NULL && strcmp(name, r->self) == 0) return 0;
    if (HL_ARRAY_RESERVE(patched, patched_capacity, npatched + 1, 64) != 0) return 0;
    patched[npatched++] = id;
    int interpreter =
        name[0] == '\0' || (r->interpreter != NULL && strcmp(name, r->interpreter) == 0);

    const ElfW(Dyn) *dynamic = NULL;
    uintptr_t relro_start = 0, relro_end = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC) dynamic = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        if (ph->p_type == PT_GNU_RELRO) {
            relro_start = info->dlpi_addr + ph->p_vaddr;
            relro_end = relro_start + ph->p_memsz;
        }
    }
    if (dynamic == NULL) return 0;
    uintptr_t symtab = 0, strtab = 0, jmprel = 0, rela = 0, rel = 0;
    size_t pltrelsz = 0, relasz = 0, relsz = 0;
    long pltrel = 0;
    for (const ElfW(Dyn) *d = dynamic; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
            case DT_SYMTAB: symtab = relocated(info->dlpi_addr, d->d_un.d_ptr); break;
            case DT_STRTAB: strtab = relocated(info->dlpi_addr, d->d_un.d_ptr); break;
            case DT_JMPREL: jmprel = relocated(info->dlpi_addr, d->d_un.d_ptr); break;
            case DT_PLTRELSZ: pltrelsz = d->d_un.d_val; break;
            case DT_PLTREL: pltrel = (long)d->d_un.d_val; break;
            case DT_RELA: rela = relocated(info->dlpi_addr, d->d_un.d_ptr); break;
            case DT_RELASZ: relasz = d->d_un.d_val; break;
            case DT_REL: rel = relocated(info->dlpi_addr, d->d_un.d_ptr); break;
            case DT_RELSZ: relsz = d->d_un.d_val; break;
            default: break;
        }
    }
    if (symtab == 0 || strtab == 0) return 0;
    const ElfW(Sym) *syms = (const ElfW(Sym) *)symtab;
    const char *strs = (const char *)strtab;
    if (jmprel != 0)
        patch_table(r, id, interpreter, (const char *)jmprel, pltrelsz, pltrel == DT_RELA, syms,
                    strs, relro_start, relro_end);
    if (rela != 0)
        patch_table(r, id, interpreter, (const char *)rela, relasz, 1, syms, strs, relro_start,
                    relro_end);
    if (rel != 0)
        patch_table(r, id, interpreter, (const char *)rel, relsz, 0, syms, strs, relro_start,
                    relro_end);
    return 0;
}

int hl_got_patch(const hl_got_symbol *symbols, size_t nsymbols, const void *interpreter_function) {
#ifndef HL_R_JUMP_SLOT
    (void)symbols;
    (void)nsymbols;
    (void)interpreter_function;
    return 0;
#else
    Dl_info self, interpreter;
    patch_request r = {symbols, nsymbols, NULL, NULL, 0};
    if (dladdr((void *)&hl_got_patch, &self) != 0) r.self = self.dli_fname;
    if (interpreter_function != NULL && dladdr(interpreter_function, &interpreter) != 0)
        r.interpreter = interpreter.dli_fname;
    pthread_once(&fork_handlers_once, register_fork_handlers);
    pthread_mutex_lock(&got_lock);
    dl_iterate_phdr(patch_object, &r);
    pthread_mutex_unlock(&got_lock);
    return r.written;
#endif
}

static int restore_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    object_id id = {info->dlpi_addr, info->dlpi_phdr};
    uintptr_t relro_start = 0, relro_end = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_RELRO) {
            relro_start = info->dlpi_addr + ph->p_vaddr;
            relro_end = relro_start + ph->p_memsz;
        }
    }
    long page_size = sysconf(_SC_PAGESIZE);
    /* Newest first, so a slot written twice ends with its original content. */
    for (size_t i = nsaved; i-- > 0;) {
        if (saved[i].object.base != id.base || saved[i].object.phdr != id.phdr) continue;
        uintptr_t address = (uintptr_t)saved[i].slot;
        int read_only = address >= relro_start && address < relro_end;
        void *page = (void *)(address & ~((uintptr_t)page_size - 1));
        if (read_only && mprotect(page, (size_t)page_size, PROT_READ | PROT_WRITE) != 0) continue;
        __atomic_store_n(saved[i].slot, saved[i].previous, __ATOMIC_RELEASE);
        if (read_only) mprotect(page, (size_t)page_size, PROT_READ);
    }
    return 0;
}

size_t hl_got_redirected_slots(void) {
    pthread_mutex_lock(&got_lock);
    size_t n = nsaved;
    pthread_mutex_unlock(&got_lock);
    return n;
}

void hl_got_restore(void) {
    pthread_mutex_lock(&got_lock);
    if (nsaved) dl_iterate_phdr(restore_object, NULL);
    free(saved);
    free(patched);
    saved = NULL;
    patched = NULL;
    nsaved = saved_capacity = npatched = patched_capacity = 0;
    pthread_mutex_unlock(&got_lock);
}

/* ---- dlopen with the caller's search path ---------------------------------------------- */

#define SEARCH_PATH_MAX 4096

/* Tries each entry of the colon-separated list as a directory holding file. */
static void *open_in(void *(*open_path)(const char *, int), const char *list, const char *origin,
                     const char *file, int flags) {
    char path[SEARCH_PATH_MAX];
    size_t file_length = strlen(file);
    while (list != NULL) {
        const char *end = strchr(list, ':');
        size_t n = end != NULL ? (size_t)(end - list) : strlen(list);
        size_t used = 0;
        int usable = 1;
        for (size_t i = 0; i < n && usable;) {
            const char *token = NULL;
            size_t skip = 0;
            if (strncmp(list + i, "${ORIGIN}", 9) == 0) token = origin, skip = 9;
            else if (strncmp(list + i, "$ORIGIN", 7) == 0) token = origin, skip = 7;
            else if (list[i] == '$') usable = 0; /* $LIB, $PLATFORM: left to the loader */
            if (!usable) break;
            if (token != NULL) {
                size_t t = strlen(token);
                if (t == 0 || used + t >= sizeof(path)) usable = 0;
                else memcpy(path + used, token, t), used += t;
                i += skip;
            } else if (used + 1 < sizeof(path)) {
                path[used++] = list[i++];
            } else {
                usable = 0;
            }
        }
        if (used == 0) path[used++] = '.'; /* an empty entry is the current directory */
        if (usable && used + 1 + file_length < sizeof(path)) {
            path[used++] = '/';
            memcpy(path + used, file, file_length + 1);
            if (access(path, F_OK) == 0) {
                void *handle = open_path(path, flags);
                if (handle != NULL) return handle; /* else (wrong class...) go on, as ld.so does */
            }
        }
        list = end != NULL ? end + 1 : NULL;
    }
    return NULL;
}

void *hl_dlopen_as_caller(void *(*open_path)(const char *, int), const char *file, int flags,
                          const void *caller) {
    if (file == NULL || strchr(file, '/') != NULL) return open_path(file, flags);
    Dl_info info;
    struct link_map *map = NULL;
    if (!dladdr1(caller, &info, (void **)&map, RTLD_DL_LINKMAP) || map == NULL || map->l_ld == NULL)
        return open_path(file, flags);
    uintptr_t strtab = 0, rpath = 0, runpath = 0;
    int has_rpath = 0, has_runpath = 0;
    for (const ElfW(Dyn) *d = map->l_ld; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_STRTAB) strtab = relocated(map->l_addr, d->d_un.d_ptr);
        else if (d->d_tag == DT_RPATH) rpath = d->d_un.d_val, has_rpath = 1;
        else if (d->d_tag == DT_RUNPATH) runpath = d->d_un.d_val, has_runpath = 1;
    }
    if (strtab == 0 || (!has_rpath && !has_runpath)) return open_path(file, flags);

    /* Already loaded under this name: dlopen returns that object whatever the path. */
    void *handle = open_path(file, flags | RTLD_NOLOAD);
    if (handle != NULL) return handle;

    char origin[SEARCH_PATH_MAX] = "";
    const char *name = map->l_name;
    const char *slash = name != NULL ? strrchr(name, '/') : NULL;
    if (slash != NULL && (size_t)(slash - name) < sizeof(origin)) {
        memcpy(origin, name, (size_t)(slash - name));
        origin[slash == name ? 1 : slash - name] = '\0';
        if (slash == name) origin[0] = '/';
    }
    if (has_rpath && !has_runpath) {
        handle = open_in(open_path, (const char *)strtab + rpath, origin, file, flags);
        if (handle != NULL) return handle;
    }
    if (has_runpath) {
        const char *library_path = getauxval(AT_SECURE) ? NULL : getenv("LD_LIBRARY_PATH");
        if (library_path != NULL && library_path[0] != '\0') {
            handle = open_in(open_path, library_path, "", file, flags);
            if (handle != NULL) return handle;
        }
        handle = open_in(open_path, (const char *)strtab + runpath, origin, file, flags);
        if (handle != NULL) return handle;
    }
    return open_path(file, flags);
}
