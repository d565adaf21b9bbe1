/* test_elf.c: elf.c's symbol lookup and naming, against what the dynamic loader says of the
 * same files (dlsym, dladdr, dl_iterate_phdr): the fixture shared object (fixture.c, built by
 * `make test-c`, its path the runner's argument), this executable and the C library. Then files
 * that are not ELF, or are cut short or corrupt, copied to temporary files: refused, or read
 * without finding anything, and never a crash (the sanitized build catches a read out of
 * bounds). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/heatline/_native/elf.h"
#include "check.h"

int main(int argc, char **argv);

/* Where address's object is loaded, as dladdr says: the address of its file offset 0. */
static uintptr_t file_base(const void *address) {
    Dl_info info;
    return dladdr(address, &info) ? (uintptr_t)info.dli_fbase : 0;
}

static void *open_fixture(void) {
    return fixture_path ? dlopen(fixture_path, RTLD_NOW | RTLD_LOCAL) : NULL;
}

/* A function pointer as an address (POSIX: dlsym's results convert both ways). */
#define FUNCTION_ADDRESS(f) ((uintptr_t)(void *)(f))

void test_elf_symbols_match_dlsym(void) {
    void *fixture = open_fixture();
    CHECK(fixture != NULL, "dlopen %s: %s", fixture_path ? fixture_path : "(no path)", dlerror());
    void *add = dlsym(fixture, "fixture_add"), *data = dlsym(fixture, "fixture_data");
    void *(*local_address)(void) = (void *(*)(void))dlsym(fixture, "fixture_local_address");
    CHECK(add != NULL && data != NULL && local_address != NULL, "dlsym: %s", dlerror());

    hl_elf_symbol symbols[] = {{.name = "fixture_add"},
                               {.name = "fixture_data"},
                               {.name = "fixture_local"},
                               {.name = "fixture_missing"}};
    uint64_t first_vaddr = 1;
    int rc = hl_elf_symbols(fixture_path, symbols, 4, &first_vaddr);
    CHECK(rc == 0, "hl_elf_symbols: %d", rc);
    CHECK(first_vaddr == 0, "a shared object is linked at 0, not %#llx",
          (unsigned long long)first_vaddr);
    uintptr_t base = file_base(add) - first_vaddr;
    CHECK(symbols[0].found && base + symbols[0].value == (uintptr_t)add, "fixture_add %#llx",
          (unsigned long long)symbols[0].value);
    CHECK(symbols[1].found && base + symbols[1].value == (uintptr_t)data, "fixture_data %#llx",
          (unsigned long long)symbols[1].value);
    /* static: in .symtab only, so found there */
    CHECK(symbols[2].found && base + symbols[2].value == (uintptr_t)local_address(),
          "fixture_local %#llx", (unsigned long long)symbols[2].value);
    CHECK(!symbols[3].found && symbols[3].value == 0, "a missing symbol found at %#llx",
          (unsigned long long)symbols[3].value);
    dlclose(fixture);

    /* this executable (position-independent or not): main and this test function */
    hl_elf_symbol own[] = {{.name = "main"}, {.name = "test_elf_symbols_match_dlsym"}};
    rc = hl_elf_symbols("/proc/self/exe", own, 2, &first_vaddr);
    CHECK(rc == 0, "hl_elf_symbols(/proc/self/exe): %d", rc);
    base = file_base((void *)FUNCTION_ADDRESS(main)) - first_vaddr;
    CHECK(own[0].found && base + own[0].value == FUNCTION_ADDRESS(main), "main %#llx",
          (unsigned long long)own[0].value);
    CHECK(own[1].found && base + own[1].value == FUNCTION_ADDRESS(test_elf_symbols_match_dlsym),
          "test_elf_symbols_match_dlsym %#llx", (unsigned long long)own[1].value);
}

void test_elf_symbols_of_libc_match_dlsym(void) {
    /* the C library this process runs with, wherever the distribution keeps it; functions that
     * are not IFUNCs (dlsym would give the implementation chosen, not the symbol's value) */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    CHECK(libc != NULL, "libc.so.6 not loaded: %s", dlerror());
    static const char *const names[] = {"qsort", "getenv", "abort", "fclose", "dl_iterate_phdr"};
    enum { N = sizeof(names) / sizeof(*names) };
    Dl_info info;
    void *qsort_address = dlsym(libc, "qsort");
    CHECK(qsort_address != NULL && dladdr(qsort_address, &info) && info.dli_fname != NULL,
          "dladdr(qsort)");
    hl_elf_symbol symbols[N];
    for (size_t i = 0; i < N; i++) symbols[i] = (hl_elf_symbol){.name = names[i]};
    uint64_t first_vaddr;
    int rc = hl_elf_symbols(info.dli_fname, symbols, N, &first_vaddr);
    CHECK(rc == 0, "hl_elf_symbols(%s): %d", info.dli_fname, rc);
    uintptr_t base = (uintptr_t)info.dli_fbase - first_vaddr;
    for (size_t i = 0; i < N; i++) {
        void *address = dlsym(libc, names[i]);
        CHECK(address != NULL, "dlsym(%s)", names[i]);
        CHECK(symbols[i].found && base + symbols[i].value == (uintptr_t)address,
              "%s in %s: %#llx, loaded at %p", names[i], info.dli_fname,
              (unsigned long long)symbols[i].value, address);
    }
    dlclose(libc);
}

/* The file offset of a loaded address and its object's GNU build id, from the program
 * headers as the loader mapped them. */
typedef struct loaded {
    uintptr_t address;
    uint64_t offset;
    int found;
    uint8_t build_id[HL_ELF_BUILD_ID_MAX];
    size_t build_id_size;
} loaded;

static int find_loaded(struct dl_phdr_info *object, size_t size, void *context) {
    (void)size;
    loaded *l = context;
    for (int i = 0; i < object->dlpi_phnum && !l->found; i++) {
        const ElfW(Phdr) *p = &object->dlpi_phdr[i];
        uintptr_t start = object->dlpi_addr + p->p_vaddr;
        if (p->p_type == PT_LOAD && l->address >= start && l->address - start < p->p_filesz) {
            l->offset = l->address - start + p->p_offset;
            l->found = 1;
        }
    }
    for (int i = 0; i < object->dlpi_phnum && l->found && !l->build_id_size; i++) {
        const ElfW(Phdr) *p = &object->dlpi_phdr[i];
        if (p->p_type != PT_NOTE) continue;
        const uint8_t *at = (const uint8_t *)(object->dlpi_addr + p->p_vaddr),
                      *end = at + p->p_memsz;
        while (at + sizeof(ElfW(Nhdr)) <= end) {
            ElfW(Nhdr) note;
            memcpy(&note, at, sizeof(note));
            const uint8_t *name = at + sizeof(note);
            const uint8_t *description = name + ((note.n_namesz + 3) & ~3u);
            if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 &&
                memcmp(name, "GNU", 4) == 0 && note.n_descsz <= HL_ELF_BUILD_ID_MAX) {
                memcpy(l->build_id, description, note.n_descsz);
                l->build_id_size = note.n_descsz;
                break;
            }
            at = description + ((note.n_descsz + 3) & ~3u);
        }
    }
    return l->found;
}

void test_elf_names_offsets(void) {
    void *fixture = open_fixture();
    CHECK(fixture != NULL, "dlopen: %s", dlerror());
    void *(*local_address)(void) = (void *(*)(void))dlsym(fixture, "fixture_local_address");
    uintptr_t add = (uintptr_t)dlsym(fixture, "fixture_add");
    uintptr_t local = (uintptr_t)local_address();
    loaded where[3] = {{.address = add}, {.address = add + 1}, {.address = local + 2}};
    for (size_t i = 0; i < 3; i++) {
        dl_iterate_phdr(find_loaded, &where[i]);
        CHECK(where[i].found, "address %zu in no loaded segment", i);
    }
    /* and two offsets no function holds: in the ELF header (loaded, before every function),
     * and in no segment */
    uint64_t offsets[] = {where[0].offset, where[1].offset, where[2].offset, 16, UINT64_MAX / 2};
    char *names[5];
    uint8_t build_id[HL_ELF_BUILD_ID_MAX];
    size_t build_id_size;
    int rc = hl_elf_name_offsets(fixture_path, offsets, 5, names, build_id, &build_id_size);
    CHECK(rc == 0, "hl_elf_name_offsets: %d", rc);
    static const char *const expected[] = {"fixture_add", "fixture_add", "fixture_local", NULL,
                                           NULL};
    for (size_t i = 0; i < 5; i++) {
        int same =
            expected[i] ? names[i] != NULL && strcmp(names[i], expected[i]) == 0 : names[i] == NULL;
        char got[64];
        snprintf(got, sizeof(got), "%s", names[i] ? names[i] : "(none)");
        for (size_t k = 0; k < 5; k++) {
            if (!same) free(names[k]);
        }
        CHECK(same, "offset %#llx named %s, not %s", (unsigned long long)offsets[i], got,
              expected[i] ? expected[i] : "(none)");
    }
    for (size_t k = 0; k < 5; k++) free(names[k]);
    /* the build id `make test-c` links in (--build-id=sha1: 20 bytes), as the loader maps it */
    CHECK(where[0].build_id_size == 20, "the loaded fixture's build id: %zu bytes",
          where[0].build_id_size);
    CHECK(build_id_size == where[0].build_id_size &&
              memcmp(build_id, where[0].build_id, build_id_size) == 0,
          "build id of %zu bytes read, not the loaded one's", build_id_size);
    dlclose(fixture);
}

/* The fixture's bytes, whole (size in *size), or NULL. */
static uint8_t *read_fixture(size_t *size) {
    FILE *file = fixture_path ? fopen(fixture_path, "rb") : NULL;
    if (file == NULL) return NULL;
    uint8_t *bytes = NULL;
    if (fseek(file, 0, SEEK_END) == 0) {
        long end = ftell(file);
        rewind(file);
        bytes = end > 0 ? malloc((size_t)end) : NULL;
        if (bytes != NULL && fread(bytes, 1, (size_t)end, file) != (size_t)end) {
            free(bytes);
            bytes = NULL;
        }
        *size = (size_t)end;
    }
    fclose(file);
    return bytes;
}

/* Writes size bytes to a new temporary file; its path into path (at least 32 bytes). */
static int write_temporary(char *path, const void *bytes, size_t size) {
    strcpy(path, "/tmp/heatline-elf-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    int ok = size == 0 || write(fd, bytes, size) == (ssize_t)size;
    close(fd);
    return ok ? 0 : -1;
}

/* hl_elf_symbols and hl_elf_name_offsets of size bytes written to a file: their results, and
 * whether either found anything. */
typedef struct outcome {
    int symbols_rc, names_rc, found_symbol, named, written;
} outcome;

static outcome read_bytes(const void *bytes, size_t size, uint64_t offset) {
    outcome o = {0};
    char path[64];
    if (write_temporary(path, bytes, size) != 0) return o;
    o.written = 1;
    hl_elf_symbol symbols[] = {{.name = "fixture_add"}, {.name = "fixture_local"}};
    uint64_t first_vaddr;
    o.symbols_rc = hl_elf_symbols(path, symbols, 2, &first_vaddr);
    o.found_symbol = symbols[0].found || symbols[1].found;
    char *name = NULL;
    uint8_t build_id[HL_ELF_BUILD_ID_MAX];
    size_t build_id_size;
    o.names_rc = hl_elf_name_offsets(path, &offset, 1, &name, build_id, &build_id_size);
    o.named = name != NULL;
    free(name);
    unlink(path);
    return o;
}

void test_elf_refuses_what_is_not_elf(void) {
    hl_elf_symbol symbol = {.name = "main"};
    uint64_t first_vaddr;
    int rc = hl_elf_symbols("/nonexistent/heatline-test", &symbol, 1, &first_vaddr);
    CHECK(rc == -ENOENT, "a missing file: %d", rc);
    rc = hl_elf_symbols("/", &symbol, 1, &first_vaddr);
    CHECK(rc == -ENOEXEC, "a directory: %d", rc);
    static const char text[] = "#!/bin/sh\necho this is not an ELF file\n";
    outcome o = read_bytes(text, sizeof(text), 0);
    CHECK(o.written, "temporary file");
    CHECK(o.symbols_rc == -ENOEXEC && o.names_rc == -ENOEXEC && !o.found_symbol && !o.named,
          "a text file: %d %d", o.symbols_rc, o.names_rc);
    o = read_bytes(text, 0, 0);
    CHECK(o.symbols_rc == -ENOEXEC && o.names_rc == -ENOEXEC, "an empty file: %d %d", o.symbols_rc,
          o.names_rc);

    size_t size;
    uint8_t *bytes = read_fixture(&size);
    CHECK(bytes != NULL, "reading %s", fixture_path ? fixture_path : "(no path)");
    Elf64_Ehdr *header = (Elf64_Ehdr *)(void *)bytes;
    header->e_ident[EI_CLASS] = ELFCLASS32;
    o = read_bytes(bytes, size, 0);
    header->e_ident[EI_CLASS] = ELFCLASS64;
    header->e_ident[EI_DATA] = ELFDATA2MSB;
    outcome big_endian = read_bytes(bytes, size, 0);
    header->e_ident[EI_DATA] = ELFDATA2LSB;
    header->e_machine = header->e_machine == EM_AARCH64 ? EM_X86_64 : EM_AARCH64;
    outcome machine = read_bytes(bytes, size, 0);
    free(bytes);
    CHECK(o.symbols_rc == -ENOEXEC && o.names_rc == -ENOEXEC, "32-bit class: %d %d", o.symbols_rc,
          o.names_rc);
    CHECK(big_endian.symbols_rc == -ENOEXEC && big_endian.names_rc == -ENOEXEC, "big-endian: %d %d",
          big_endian.symbols_rc, big_endian.names_rc);
    CHECK(machine.symbols_rc == -ENOEXEC && machine.names_rc == -ENOEXEC, "another machine: %d %d",
          machine.symbols_rc, machine.names_rc);
}

void test_elf_survives_truncated_and_corrupt_files(void) {
    size_t size;
    uint8_t *bytes = read_fixture(&size);
    CHECK(bytes != NULL, "reading %s", fixture_path ? fixture_path : "(no path)");
    Elf64_Ehdr header;
    memcpy(&header, bytes, sizeof(header));
    /* fixture_add's file offset, for the naming calls: its value less the text segment's
     * address, plus its file offset (found through the whole file's symbols) */
    char path[64];
    int written = write_temporary(path, bytes, size) == 0;
    hl_elf_symbol add = {.name = "fixture_add"};
    uint64_t first_vaddr = 0;
    int rc = written ? hl_elf_symbols(path, &add, 1, &first_vaddr) : -1;
    uint64_t offset = add.value - first_vaddr; /* text: offset == address in a shared object */
    if (written) unlink(path);
    outcome whole = read_bytes(bytes, size, offset);
    if (rc != 0 || !whole.found_symbol || !whole.named) free(bytes);
    CHECK(rc == 0 && add.found, "the whole file: %d", rc);
    CHECK(whole.found_symbol && whole.named, "the whole file: found %d, named %d",
          whole.found_symbol, whole.named);
    /* ld writes the section headers last: any cut loses some, and with them the tables */
    int headers_last = header.e_shoff + (uint64_t)header.e_shnum * header.e_shentsize == size;
    if (!headers_last) free(bytes);
    CHECK(headers_last, "section headers at %#llx, not at the file's end",
          (unsigned long long)header.e_shoff);

    size_t cuts[] = {1,
                     16,
                     sizeof(Elf64_Ehdr) - 1,
                     sizeof(Elf64_Ehdr),
                     100,
                     1000,
                     size / 4,
                     size / 2,
                     size - 64,
                     size - 1};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(*cuts); i++) {
        outcome o = read_bytes(bytes, cuts[i], offset);
        if (!o.written || o.symbols_rc > 0 || o.names_rc > 0 || o.found_symbol || o.named)
            free(bytes);
        CHECK(o.written, "temporary file");
        CHECK(o.symbols_rc <= 0 && o.names_rc <= 0 && !o.found_symbol && !o.named,
              "cut to %zu of %zu bytes: rc %d %d, found %d, named %d", cuts[i], size, o.symbols_rc,
              o.names_rc, o.found_symbol, o.named);
    }

    /* Corrupt headers, each alone: a section header table, symbol tables or string tables that
     * are not where the headers say, or absurdly large, read as no tables at all. */
    uint8_t *copy = malloc(size);
    if (copy == NULL) free(bytes);
    CHECK(copy != NULL, "malloc");
    Elf64_Shdr *sections = (Elf64_Shdr *)(void *)(copy + header.e_shoff);
    enum { SHOFF, SHENTSIZE, SHNUM, SH_OFFSETS, SH_SIZES, SH_LINKS, CORRUPTIONS };
    static const char *const what[] = {"e_shoff",   "e_shentsize", "e_shnum",
                                       "sh_offset", "sh_size",     "sh_link"};
    for (int c = 0; c < CORRUPTIONS; c++) {
        memcpy(copy, bytes, size);
        Elf64_Ehdr *h = (Elf64_Ehdr *)(void *)copy;
        if (c == SHOFF) h->e_shoff = size - 8;
        if (c == SHENTSIZE) h->e_shentsize = sizeof(Elf64_Shdr) + 8;
        if (c == SHNUM) h->e_shnum = 0xFFFF;
        for (unsigned i = 0; i < header.e_shnum; i++) {
            if (c == SH_OFFSETS) sections[i].sh_offset = UINT64_MAX - 16;
            if (c == SH_SIZES) sections[i].sh_size = UINT64_MAX - 16;
            if (c == SH_LINKS) sections[i].sh_link = header.e_shnum + i;
        }
        outcome o = read_bytes(copy, size, offset);
        if (o.symbols_rc > 0 || o.names_rc > 0 || o.found_symbol || o.named) {
            free(copy);
            free(bytes);
        }
        CHECK(o.symbols_rc <= 0 && o.names_rc <= 0 && !o.found_symbol && !o.named,
              "corrupt %s: rc %d %d, found %d, named %d", what[c], o.symbols_rc, o.names_rc,
              o.found_symbol, o.named);
    }
    /* program headers out of the file: no segment, so no address to put a symbol at */
    memcpy(copy, bytes, size);
    ((Elf64_Ehdr *)(void *)copy)->e_phoff = size;
    outcome o = read_bytes(copy, size, offset);
    free(copy);
    free(bytes);
    CHECK(o.symbols_rc == -ENOEXEC && o.names_rc == -ENOEXEC && !o.named,
          "program headers out of the file: rc %d %d", o.symbols_rc, o.names_rc);
}
