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

/* Calls visit for each symbol table (.dynsym, .symtab) of the file with its section header and
 * that of its string table, until visit returns non-zero (returned). A file without section
 * headers (stripped of them) has none: 0. Each reader reads the tables its own way:
 * hl_elf_symbols whole, hl_elf_name_offsets a piece at a time. */
typedef int (*table_visit)(void *context, int fd, uint64_t file_size, const Elf64_Shdr *entries,
                           const Elf64_Shdr *strings);
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
        result = visit(context, fd, file_size, table, &sections[table->sh_link]);
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

/* Reads one symbol table and its names whole, and looks the wanted symbols up in them. */
static int scan_visit(void *context, int fd, uint64_t file_size, const Elf64_Shdr *table,
                      const Elf64_Shdr *strings) {
    const wanted_symbols *wanted = context;
    Elf64_Sym *entries = read_part(fd, table->sh_offset, table->sh_size, file_size);
    char *names = read_part(fd, strings->sh_offset, strings->sh_size, file_size);
    if (entries != NULL && names != NULL)
        scan_table(entries, (size_t)(table->sh_size / sizeof(Elf64_Sym)), names,
                   (size_t)strings->sh_size, wanted->symbols, wanted->count);
    free(entries);
    free(names);
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

/* The GNU build id among a PT_NOTE segment's notes (each a header, its name and its
 * description, both padded to 4 bytes), into out. */
static void find_build_id(int fd, const Elf64_Phdr *note, uint64_t file_size, uint8_t *build_id,
                          size_t *build_id_size) {
    uint8_t *notes = read_part(fd, note->p_offset, note->p_filesz, file_size);
    if (notes == NULL) return;
    uint64_t at = 0, size = note->p_filesz;
    while (*build_id_size == 0 && size - at >= sizeof(Elf64_Nhdr)) {
        Elf64_Nhdr header;
        memcpy(&header, notes + at, sizeof(header));
        uint64_t name_at = at + sizeof(header);
        uint64_t description_at = name_at + (((uint64_t)header.n_namesz + 3) & ~(uint64_t)3);
        uint64_t next = description_at + (((uint64_t)header.n_descsz + 3) & ~(uint64_t)3);
        if (next > size || next <= at) break;
        if (header.n_type == NT_GNU_BUILD_ID && header.n_namesz == 4 &&
            memcmp(notes + name_at, "GNU", 4) == 0 && header.n_descsz > 0 &&
            header.n_descsz <= HL_ELF_BUILD_ID_MAX) {
            memcpy(build_id, notes + description_at, header.n_descsz);
            *build_id_size = header.n_descsz;
        }
        at = next;
    }
    free(notes);
}

/* ---- naming code by its file offset ------------------------------------------------------ */

#define SYMBOLS_PER_READ 8192 /* 192 KB of entries read at a time */
#define NAME_READ 256         /* the first read of a name; longer ones are read again, whole */

typedef struct wanted_offset {
    uint64_t address; /* link-time address of the offset */
    size_t index;     /* into the caller's arrays */
    /* the nearest function covering it so far (greatest start, then smallest size) */
    uint64_t value, size;
    uint32_t name;
    unsigned table;
    int covered;
} wanted_offset;

/* The functions starting at or before one wanted address whose start is found nowhere earlier
 * in the sorted addresses (see hl_elf_name_offsets): the greatest start of all, and the
 * greatest start of a function of size 0 (with its name). */
typedef struct start_bucket {
    uint64_t nearest;
    int any;
    uint64_t empty_value;
    uint32_t empty_name;
    unsigned empty_table;
    int empty;
} start_bucket;

typedef struct name_table {
    uint64_t offset, size; /* the string table of a symbol table, in the file */
} name_table;

#define MAX_NAME_TABLES 4

typedef struct naming {
    wanted_offset *wanted; /* sorted by address */
    start_bucket *buckets; /* one per wanted address */
    size_t count;
    name_table tables[MAX_NAME_TABLES];
    unsigned ntables;
} naming;

static int by_address(const void *a, const void *b) {
    const wanted_offset *x = a, *y = b;
    return x->address < y->address ? -1 : x->address > y->address;
}

/* The first wanted address at or after value. */
static size_t first_at_or_after(const naming *n, uint64_t value) {
    size_t low = 0, high = n->count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (n->wanted[middle].address < value) low = middle + 1;
        else high = middle;
    }
    return low;
}

static void consider(naming *n, const Elf64_Sym *symbol, unsigned table) {
    uint64_t value = symbol->st_value, size = symbol->st_size;
    size_t j = first_at_or_after(n, value);
    if (j == n->count) return; /* starts after every wanted address */
    start_bucket *b = &n->buckets[j];
    if (!b->any || value > b->nearest) b->nearest = value, b->any = 1;
    if (size == 0) {
        if (!b->empty || value > b->empty_value)
            *b = (start_bucket){b->nearest, 1, value, symbol->st_name, table, 1};
        return;
    }
    for (size_t i = j; i < n->count && n->wanted[i].address - value < size; i++) {
        wanted_offset *w = &n->wanted[i];
        if (!w->covered || value > w->value || (value == w->value && size < w->size)) {
            w->value = value;
            w->size = size;
            w->name = symbol->st_name;
            w->table = table;
            w->covered = 1;
        }
    }
}

/* Reads one symbol table in pieces, each function symbol considered for every wanted address. */
static int naming_visit(void *context, int fd, uint64_t file_size, const Elf64_Shdr *entries,
                        const Elf64_Shdr *strings) {
    naming *n = context;
    if (n->ntables == MAX_NAME_TABLES) return 0;
    if (entries->sh_offset > file_size || entries->sh_size > file_size - entries->sh_offset ||
        strings->sh_offset > file_size || strings->sh_size > file_size - strings->sh_offset ||
        strings->sh_size == 0)
        return 0; /* not a table this file holds: skipped, as a table that cannot be read */
    unsigned table = n->ntables++;
    n->tables[table] = (name_table){strings->sh_offset, strings->sh_size};
    Elf64_Sym *chunk = malloc(SYMBOLS_PER_READ * sizeof(*chunk));
    if (chunk == NULL) return -ENOMEM;
    uint64_t total = entries->sh_size / sizeof(Elf64_Sym);
    for (uint64_t first = 0; first < total; first += SYMBOLS_PER_READ) {
        size_t count =
            total - first < SYMBOLS_PER_READ ? (size_t)(total - first) : SYMBOLS_PER_READ;
        size_t bytes = count * sizeof(*chunk), done = 0;
        while (done < bytes) {
            ssize_t got = pread(fd, (char *)chunk + done, bytes - done,
                                (off_t)(entries->sh_offset + first * sizeof(*chunk) + done));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) break;
            done += (size_t)got;
        }
        count = done / sizeof(*chunk); /* a file cut short meanwhile: what was read */
        for (size_t i = 0; i < count; i++) {
            const Elf64_Sym *symbol = &chunk[i];
            unsigned type = ELF64_ST_TYPE(symbol->st_info);
            if ((type == STT_FUNC || type == STT_GNU_IFUNC) && symbol->st_shndx != SHN_UNDEF &&
                symbol->st_value != 0 && symbol->st_name != 0 && symbol->st_name < strings->sh_size)
                consider(n, symbol, table);
        }
        if (count < SYMBOLS_PER_READ && first + count < total) break;
    }
    free(chunk);
    return 0;
}

/* The name at offset name of a string table, read from the file: up to its NUL, or to the
 * table's end. A new string, or NULL. */
static char *read_name(int fd, const name_table *t, uint32_t name) {
    uint64_t room = t->size - name, want = room < NAME_READ ? room : NAME_READ;
    for (;;) {
        char *text = malloc((size_t)want + 1);
        if (text == NULL) return NULL;
        ssize_t got = pread(fd, text, (size_t)want, (off_t)(t->offset + name));
        if (got < 0) {
            free(text);
            return NULL;
        }
        text[got] = '\0';
        if (strlen(text) < (size_t)got || (uint64_t)got < want || want == room) return text;
        free(text);
        want = room < want * 16 ? room : want * 16; /* a long (C++) name: read again, more */
    }
}

typedef struct name_request {
    const uint64_t *offsets;
    size_t count;
    char **names;
    uint8_t *build_id;
    size_t *build_id_size;
} name_request;

static int name_offsets(int fd, uint64_t file_size, void *context) {
    name_request *r = context;
    Elf64_Ehdr header;
    if (read_header(fd, &header) != 0) return -ENOEXEC;
    Elf64_Phdr *segments = NULL;
    if (header.e_phentsize == sizeof(Elf64_Phdr))
        segments =
            read_part(fd, header.e_phoff, (uint64_t)header.e_phnum * sizeof(Elf64_Phdr), file_size);
    if (segments == NULL) return -ENOEXEC;

    naming n = {0};
    n.wanted = calloc(r->count ? r->count : 1, sizeof(*n.wanted));
    n.buckets = calloc(r->count ? r->count : 1, sizeof(*n.buckets));
    int error = n.wanted != NULL && n.buckets != NULL ? 0 : -ENOMEM;
    for (unsigned i = 0; i < header.e_phnum && error == 0; i++)
        if (segments[i].p_type == PT_NOTE && *r->build_id_size == 0)
            find_build_id(fd, &segments[i], file_size, r->build_id, r->build_id_size);
    /* Each offset as a link-time address, where a loaded segment holds it. */
    for (size_t k = 0; k < r->count && error == 0; k++) {
        for (unsigned i = 0; i < header.e_phnum; i++) {
            const Elf64_Phdr *p = &segments[i];
            if (p->p_type == PT_LOAD && r->offsets[k] >= p->p_offset &&
                r->offsets[k] - p->p_offset < p->p_filesz) {
                n.wanted[n.count++] = (wanted_offset){
                    .address = p->p_vaddr + (r->offsets[k] - p->p_offset), .index = k};
                break;
            }
        }
    }
    free(segments);
    if (error == 0 && n.count > 0) {
        qsort(n.wanted, n.count, sizeof(*n.wanted), by_address);
        error = for_each_symbol_table(fd, &header, file_size, naming_visit, &n);
    }

    /* Walking the addresses upwards, the nearest start and nearest empty function so far are
     * those of every function starting at or before the address (a function's bucket is the
     * first address at or after its start). The nearest start's function of size 0 names the
     * address (an alias, or a function whose size the tables leave out); else the nearest
     * function covering it does; else nothing does. */
    start_bucket so_far = {0};
    for (size_t i = 0; i < n.count && error == 0; i++) {
        const start_bucket *b = &n.buckets[i];
        if (b->any && (!so_far.any || b->nearest > so_far.nearest))
            so_far.nearest = b->nearest, so_far.any = 1;
        if (b->empty && (!so_far.empty || b->empty_value > so_far.empty_value)) {
            so_far.empty_value = b->empty_value;
            so_far.empty_name = b->empty_name;
            so_far.empty_table = b->empty_table;
            so_far.empty = 1;
        }
        const wanted_offset *w = &n.wanted[i];
        if (so_far.empty && so_far.empty_value == so_far.nearest)
            r->names[w->index] = read_name(fd, &n.tables[so_far.empty_table], so_far.empty_name);
        else if (w->covered) r->names[w->index] = read_name(fd, &n.tables[w->table], w->name);
    }
    free(n.wanted);
    free(n.buckets);
    return error;
}

int hl_elf_name_offsets(const char *path, const uint64_t *offsets, size_t count, char **names,
                        uint8_t *build_id, size_t *build_id_size) {
    for (size_t k = 0; k < count; k++) names[k] = NULL;
    *build_id_size = 0;
    name_request request = {offsets, count, names, build_id, build_id_size};
    int error = with_file(path, name_offsets, &request);
    if (error != 0)
        for (size_t k = 0; k < count; k++) {
            free(names[k]);
            names[k] = NULL;
        }
    return error;
}
