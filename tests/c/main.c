/* main.c: runs every test of the C tier (tests/c), printing `ok N name` or `FAIL name: why`,
 * then the number of checks passed; exits 1 if any test failed. Its argument: the path of the
 * fixture shared object (fixture.c). Built and run by `make test-c`, plain and under ASan+UBSan.
 */
#include <stdio.h>

#include "check.h"

unsigned checks_passed;
const char *fixture_path;
int test_failed;
char failure[512];

static const struct {
    const char *name;
    void (*run)(void);
} tests[] = {
    {"elf_symbols_match_dlsym", test_elf_symbols_match_dlsym},
    {"elf_symbols_of_libc_match_dlsym", test_elf_symbols_of_libc_match_dlsym},
    {"elf_names_offsets", test_elf_names_offsets},
    {"elf_refuses_what_is_not_elf", test_elf_refuses_what_is_not_elf},
    {"elf_survives_truncated_and_corrupt_files", test_elf_survives_truncated_and_corrupt_files},
    {"linetable_answers_every_offset", test_linetable_answers_every_offset},
    {"linetable_edges", test_linetable_edges},
    {"compat_remote_tables", test_compat_remote_tables},
    {"compat_debug_offsets_match_the_tables", test_compat_debug_offsets_match_the_tables},
    {"compat_debug_offsets_refused", test_compat_debug_offsets_refused},
};

int main(int argc, char **argv) {
    fixture_path = argc > 1 ? argv[1] : NULL;
    size_t count = sizeof(tests) / sizeof(*tests);
    unsigned failed = 0;
    for (size_t i = 0; i < count; i++) {
        test_failed = 0;
        tests[i].run();
        if (test_failed) {
            printf("FAIL %s: %s\n", tests[i].name, failure);
            failed++;
        } else {
            printf("ok %zu %s\n", i + 1, tests[i].name);
        }
    }
    printf("heatline C tests: %zu tests, %u checks passed, %u tests failed\n", count, checks_passed,
           failed);
    return failed ? 1 : 0;
}
