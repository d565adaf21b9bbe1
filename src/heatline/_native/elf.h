/* elf.h: the symbols of an ELF file on disk, read without loading it: where heatline dump
 * (remote.c) finds another process's interpreter (_PyRuntime) and the type objects it checks
 * what it reads against, in the executable or the libpython that process maps; and the
 * functions that native frames' addresses fall in (native.c).
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

#define HL_ELF_BUILD_ID_MAX 64

/* Names the code at each of count offsets into path (native.c, at the end of a run): names[k]
 * gets a new string (the caller frees it), the function of the file's .symtab or .dynsym whose
 * code holds the byte at offsets[k]: of the functions starting at or before it, one of size 0
 * at the nearest start (an alias, or a function the tables give no size), else the nearest that
 * covers it; NULL where the offset is in no loaded segment or no function covers it (a static
 * function of a file stripped of its .symtab: naming the exported one before it would be a
 * wrong name). build_id gets the file's GNU build id (.note.gnu.build-id, *build_id_size bytes;
 * 0: none).
 *
 * One pass over the symbol tables, read a piece at a time, with the offsets sorted: the time is
 * the tables' size times log(count), and only the names found are read. libtorch_cpu's tables
 * are tens of MB: sorting and copying them whole would take ~0.2 s of a torch program's end. Returns 0, or -errno / -ENOEXEC as hl_elf_symbols does (names all NULL). */
int hl_elf_name_offsets(const char *path, const uint64_t *offsets, size_t count, char **names,
                        uint8_t *build_id, size_t *build_id_size);

#endif
