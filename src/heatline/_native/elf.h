/* elf.h: the symbols of an ELF file on disk, read without loading it: where heatline dump
 * (remote.c) finds another process's interpreter (_PyRuntime) and the type objects it checks
 * what it reads against, in the executable or the libpython that process maps.
 *
 * Every table is bounds-checked against the file's size: the file is another process's (a
 * container's, through /proc/PID/root) and could be anything.
 */
#ifndef HEATLINE_ELF_H
#define HEATLINE_ELF_H

#include <stddef.h>
#include <stdint.h>

typedef struct hl_elf_symbol {
    const char *name; /* in: the symbol's name */
    uint64_t value;   /* out: its st_value (a link-time address), when found */
    int found;
} hl_elf_symbol;

/* Looks the symbols up in path's .dynsym and .symtab (defined symbols only). *first_vaddr gets
 * the link-time address of the file's start (the lowest loadable segment's address less its
 * file offset, rounded down to a page): the file's mapping at offset 0, minus it, is what to
 * add to a symbol's value (0 for a position-dependent executable). Returns 0; -ENOEXEC when
 * path is not a 64-bit little-endian ELF file for this machine; another -errno when it cannot
 * be opened or mapped. */
int hl_elf_symbols(const char *path, hl_elf_symbol *symbols, size_t count, uint64_t *first_vaddr);

/* A file's functions, for naming the code at an offset in the file (native.c, at the end of a
 * run): every defined function symbol of its .symtab and .dynsym, sorted by address, and its
 * loadable segments (to turn a file offset into a link-time address), and its build id. */
typedef struct hl_elf_function {
    uint64_t value, size;
    size_t name; /* offset in names */
} hl_elf_function;

#define HL_ELF_BUILD_ID_MAX 64

typedef struct hl_elf_segment {
    uint64_t offset, vaddr, size; /* p_offset, p_vaddr, p_filesz */
} hl_elf_segment;

typedef struct hl_elf_functions {
    hl_elf_function *functions;
    size_t count;
    char *names; /* the string tables, one after the other, each NUL-terminated */
    size_t names_size;
    hl_elf_segment *segments;
    size_t nsegments;
    uint8_t build_id[HL_ELF_BUILD_ID_MAX]; /* its GNU build id (.note.gnu.build-id), if any */
    size_t build_id_size;                  /* 0: none */
} hl_elf_functions;

/* Reads path's functions into *out (zeroed first). Returns 0 (possibly with no functions: a
 * stripped file), or -errno / -ENOEXEC as hl_elf_symbols does; *out is then empty. */
int hl_elf_functions_read(const char *path, hl_elf_functions *out);

/* The name of the function whose code holds the byte at file_offset, or NULL: not in a loaded
 * segment, or in no function the tables name (a static function of a file stripped of its
 * .symtab: naming the exported function before it would be a wrong name). */
const char *hl_elf_function_at(const hl_elf_functions *f, uint64_t file_offset);

void hl_elf_functions_free(hl_elf_functions *f);

#endif
