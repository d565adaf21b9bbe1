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

#endif
