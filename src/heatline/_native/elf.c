/* elf.c: see elf.h.
 *
 * The file is read with pread, not mapped: a mapped file that another process truncates turns
 * the next access into SIGBUS, and heatline dump must not die of the file it reads. */
#define _GNU_SOURCE
#include "elf.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__)
#define HL_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HL_ELF_MACHINE EM_AARCH64
#else
#define HL_ELF_MACHINE EM_NONE /* matches nothing: dump reads the two machines above */
#endif

#define MAX_TABLE_BYTES (256u << 20) /* a symbol or string table larger than this is not one */

/* Reads size bytes at offset into a new buffer, or NULL (out of the file, too large, short). */
static void *read_part(int fd, uint64_t offset, uint64_t size, uint64_t file_size) {
    if (size == 0 || size > MAX_TABLE_BYTES || offset > file_size || size > file_size - offset)
        return NULL;
    uint8_t *buffer = malloc((size_t)size);
    if (buffer == NULL) return NULL;
    size_t done = 0;
    while (done < size) {
        ssize_t got = pread(fd, buffer + done, (size_t)size - done, (off_t)(offset + done));
        if (got <= 0) {
            if (got < 0 && errno == EINTR) continue;
            free(buffer);
            return NULL;
        }
        done += (size_t)got;
    }
    return buffer;
}

static void scan_table(const Elf64_Sym *table, size_t n, const char *names, size_t names_size,
                       hl_elf_symbol *symbols, size_t count) {
    for (size_t i = 0; i < n; i++) {
        const Elf64_Sym *symbol = &table[i];
        if (symbol->st_shndx == SHN_UNDEF || symbol->st_name >= names_size) continue;
        const char *name = names + symbol->st_name;
        size_t room = names_size - symbol->st_name; /* the name must end inside the table */
        for (size_t k = 0; k < count; k++) {
            if (symbols[k].found) continue;
            size_t want = strlen(symbols[k].name);
            if (want < room && memcmp(name, symbols[k].name, want + 1) == 0) {
                symbols[k].value = symbol->st_value;
                symbols[k].found = 1;
            }
        }
    }
}

/* Reads and checks the ELF header: a 64-bit little-endian file for this machine. 0 or
 * -ENOEXEC. */
static int read_header(int fd, Elf64_Ehdr *header) {
    if (pread(fd, header, sizeof(*header), 0) != (ssize_t)sizeof(*header)) return -ENOEXEC;
    if (memcmp(header->e_ident, ELFMAG, SELFMAG) != 0 || header->e_ident[EI_CLASS] != ELFCLASS64 ||
        header->e_ident[EI_DATA] != ELFDATA2LSB || header->e_machine != HL_ELF_MACHINE)
        return -ENOEXEC;
    return 0;
}

/* Calls visit for each symbol table (.dynsym, .symtab) of the file with its entries and its
 * string table, both read whole, until visit returns non-zero (returned). A file without
 * section headers (stripped of them) has none: 0. */
typedef int (*table_visit)(void *context, const Elf64_Sym *entries, size_t count, const char *names,
                           size_t names_size);
static int for_each_symbol_table(int fd, const Elf64_Ehdr *header, uint64_t file_size,
                                 table_visit visit, void *context) {
    Elf64_Shdr *sections = NULL;
    if (header->e_shentsize == sizeof(Elf64_Shdr))
        sections = read_part(fd, header->e_shoff, (uint64_t)header->e_shnum * sizeof(Elf64_Shdr),
                             file_size);
    int result = 0;
    for (unsigned i = 0; sections != NULL && i < header->e_shnum && result == 0; i++) {
        const Elf64_Shdr *table = &sections[i];
        if (table->sh_type != SHT_DYNSYM && table->sh_type != SHT_SYMTAB) continue;
        if (table->sh_entsize != sizeof(Elf64_Sym) || table->sh_link >= header->e_shnum) continue;
        const Elf64_Shdr *strings = &sections[table->sh_link];
        Elf64_Sym *entries = read_part(fd, table->sh_offset, table->sh_size, file_size);
        char *names = read_part(fd, strings->sh_offset, strings->sh_size, file_size);
        if (entries != NULL && names != NULL)
            result = visit(context, entries, (size_t)(table->sh_size / sizeof(Elf64_Sym)), names,
                           (size_t)strings->sh_size);
        free(entries);
        free(names);
    }
    free(sections);
    return result;
}

/* Opens path and calls read(fd, its size, context) on it: a regular, non-empty file. */
static int with_file(const char *path, int (*read)(int, uint64_t, void *), void *context) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    struct stat st;
    int error = -ENOEXEC;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        error = read(fd, (uint64_t)st.st_size, context);
    close(fd);
    return error;
}

typedef struct wanted_symbols {
    hl_elf_symbol *symbols;
    size_t count;
    uint64_t *first_vaddr;
} wanted_symbols;

static int scan_visit(void *context, const Elf64_Sym *entries, size_t count, const char *names,
                      size_t names_size) {
    const wanted_symbols *wanted = context;
    scan_table(entries, count, names, names_size, wanted->symbols, wanted->count);
    return 0;
}

static int read_file(int fd, uint64_t file_size, void *context) {
    wanted_symbols *wanted = context;
    Elf64_Ehdr header;
    if (read_header(fd, &header) != 0) return -ENOEXEC;

    /* The program headers: where the file's start is loaded. */
    uint64_t lowest = UINT64_MAX;
    Elf64_Phdr *segments = NULL;
    if (header.e_phentsize == sizeof(Elf64_Phdr))
        segments =
            read_part(fd, header.e_phoff, (uint64_t)header.e_phnum * sizeof(Elf64_Phdr), file_size);
    for (unsigned i = 0; segments != NULL && i < header.e_phnum; i++) {
        if (segments[i].p_type != PT_LOAD || segments[i].p_vaddr < segments[i].p_offset) continue;
        uint64_t start = segments[i].p_vaddr - segments[i].p_offset;
        if (start < lowest) lowest = start;
    }
    free(segments);
    if (lowest == UINT64_MAX) return -ENOEXEC;
    *wanted->first_vaddr = lowest & ~(uint64_t)0xFFF;

    /* The symbol tables (none where the file was stripped of its sections: no symbols found). */
    return for_each_symbol_table(fd, &header, file_size, scan_visit, wanted);
}

int hl_elf_symbols(const char *path, hl_elf_symbol *symbols, size_t count, uint64_t *first_vaddr) {
    for (size_t k = 0; k < count; k++) {
        symbols[k].found = 0;
        symbols[k].value = 0;
    }
    wanted_symbols wanted = {symbols, count, first_vaddr};
    return with_file(path, read_file, &wanted);
}

/* ---- functions by address ----------------------------------------------------------------- */

static int by_value(const void *a, const void *b) {
    const hl_elf_function *x = a, *y = b;
    if (x->value != y->value) return x->value < y->value ? -1 : 1;
    if (x->size != y->size) return x->size > y->size ? -1 : 1; /* the largest first */
    return 0;
}

/* Appends table's defined functions, naming them by their offset into the names read so far. */
static int add_functions(hl_elf_functions *out, const Elf64_Sym *table, size_t n, size_t names_base,
                         size_t names_size) {
    size_t wanted = out->count;
    for (size_t i = 0; i < n; i++) {
        unsigned type = ELF64_ST_TYPE(table[i].st_info);
        if ((type == STT_FUNC || type == STT_GNU_IFUNC) && table[i].st_shndx != SHN_UNDEF &&
            table[i].st_value != 0 && table[i].st_name != 0 && table[i].st_name < names_size)
            wanted++;
    }
    if (wanted == out->count) return 0;
    hl_elf_function *grown = realloc(out->functions, wanted * sizeof(*grown));
    if (grown == NULL) return -ENOMEM;
    out->functions = grown;
    for (size_t i = 0; i < n; i++) {
        unsigned type = ELF64_ST_TYPE(table[i].st_info);
        if ((type == STT_FUNC || type == STT_GNU_IFUNC) && table[i].st_shndx != SHN_UNDEF &&
            table[i].st_value != 0 && table[i].st_name != 0 && table[i].st_name < names_size)
            out->functions[out->count++] = (hl_elf_function){table[i].st_value, table[i].st_size,
                                                             names_base + table[i].st_name};
    }
    return 0;
}

/* Appends one symbol table's functions, its names copied after the names so far. */
static int functions_visit(void *context, const Elf64_Sym *entries, size_t count, const char *names,
                           size_t size) {
    hl_elf_functions *out = context;
    if (size == 0) return 0;
    char *all = realloc(out->names, out->names_size + size + 1);
    if (all == NULL) return -ENOMEM;
    out->names = all;
    memcpy(all + out->names_size, names, size);
    all[out->names_size + size] = '\0'; /* a last name running off its table ends */
    int error = add_functions(out, entries, count, out->names_size, size);
    out->names_size += size + 1;
    return error;
}

/* The GNU build id among a PT_NOTE segment's notes (each a header, its name and its
 * description, both padded to 4 bytes), into out. */
static void find_build_id(int fd, const Elf64_Phdr *note, uint64_t file_size,
                          hl_elf_functions *out) {
    uint8_t *notes = read_part(fd, note->p_offset, note->p_filesz, file_size);
    if (notes == NULL) return;
    uint64_t at = 0, size = note->p_filesz;
    while (out->build_id_size == 0 && size - at >= sizeof(Elf64_Nhdr)) {
        Elf64_Nhdr header;
        memcpy(&header, notes + at, sizeof(header));
        uint64_t name_at = at + sizeof(header);
        uint64_t description_at = name_at + (((uint64_t)header.n_namesz + 3) & ~(uint64_t)3);
        uint64_t next = description_at + (((uint64_t)header.n_descsz + 3) & ~(uint64_t)3);
        if (next > size || next <= at) break;
        if (header.n_type == NT_GNU_BUILD_ID && header.n_namesz == 4 &&
            memcmp(notes + name_at, "GNU", 4) == 0 && header.n_descsz > 0 &&
            header.n_descsz <= HL_ELF_BUILD_ID_MAX) {
            memcpy(out->build_id, notes + description_at, header.n_descsz);
            out->build_id_size = header.n_descsz;
        }
        at = next;
    }
    free(notes);
}

static int read_functions(int fd, uint64_t file_size, void *context) {
    hl_elf_functions *out = context;
    Elf64_Ehdr header;
    if (read_header(fd, &header) != 0) return -ENOEXEC;

    Elf64_Phdr *segments = NULL;
    if (header.e_phentsize == sizeof(Elf64_Phdr))
        segments =
            read_part(fd, header.e_phoff, (uint64_t)header.e_phnum * sizeof(Elf64_Phdr), file_size);
    if (segments == NULL) return -ENOEXEC;
    out->segments = calloc(header.e_phnum ? header.e_phnum : 1, sizeof(*out->segments));
    if (out->segments == NULL) {
        free(segments);
        return -ENOMEM;
    }
    for (unsigned i = 0; i < header.e_phnum; i++) {
        if (segments[i].p_type == PT_LOAD)
            out->segments[out->nsegments++] =
                (hl_elf_segment){segments[i].p_offset, segments[i].p_vaddr, segments[i].p_filesz};
        else if (segments[i].p_type == PT_NOTE && out->build_id_size == 0)
            find_build_id(fd, &segments[i], file_size, out);
    }
    free(segments);

    int error = for_each_symbol_table(fd, &header, file_size, functions_visit, out);
    if (error == 0 && out->count > 0)
        qsort(out->functions, out->count, sizeof(*out->functions), by_value);
    return error;
}

int hl_elf_functions_read(const char *path, hl_elf_functions *out) {
    memset(out, 0, sizeof(*out));
    int error = with_file(path, read_functions, out);
    if (error != 0) hl_elf_functions_free(out);
    return error;
}

const char *hl_elf_function_at(const hl_elf_functions *f, uint64_t file_offset) {
    uint64_t address = 0;
    int loaded = 0;
    for (size_t i = 0; i < f->nsegments && !loaded; i++) {
        const hl_elf_segment *s = &f->segments[i];
        if (file_offset >= s->offset && file_offset - s->offset < s->size) {
            address = s->vaddr + (file_offset - s->offset);
            loaded = 1;
        }
    }
    if (!loaded || f->count == 0) return NULL;
    size_t low = 0, high = f->count; /* the first function starting after address */
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (f->functions[middle].value <= address) low = middle + 1;
        else high = middle;
    }
    /* Of the functions starting at or before it, the nearest that covers it (an alias or a
     * function of size 0, which covers the address when it is the nearest one). */
    for (size_t i = low; i > 0; i--) {
        const hl_elf_function *candidate = &f->functions[i - 1];
        if (address - candidate->value < candidate->size || (candidate->size == 0 && i == low))
            return f->names + candidate->name;
        if (low - i >= 16) break; /* farther back: none of these covers it */
    }
    return NULL;
}

void hl_elf_functions_free(hl_elf_functions *f) {
    free(f->functions);
    free(f->names);
    free(f->segments);
    memset(f, 0, sizeof(*f));
}
