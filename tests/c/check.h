/* check.h: the C tier's runner (main.c). A test is a function of no arguments; CHECK counts a
 * passed check, or records why it failed and returns from the test, whose later checks would
 * only repeat the failure.
 */
#ifndef HEATLINE_TEST_CHECK_H
#define HEATLINE_TEST_CHECK_H

#include <stdio.h>

extern unsigned checks_passed;
extern int test_failed;
extern char failure[512];
extern const char *fixture_path; /* the fixture shared object (fixture.c), main's argument */

#define CHECK(condition, ...)                                                                      \
    do {                                                                                           \
        if (condition) {                                                                           \
            checks_passed++;                                                                       \
        } else {                                                                                   \
            int used_ =                                                                            \
                snprintf(failure, sizeof(failure), "%s:%d: %s: ", __FILE__, __LINE__, #condition); \
            if (used_ > 0 && (size_t)used_ < sizeof(failure))                                      \
                snprintf(failure + used_, sizeof(failure) - (size_t)used_, __VA_ARGS__);           \
            test_failed = 1;                                                                       \
            return;                                                                                \
        }                                                                                          \
    } while (0)

/* The tests, one file a part of the engine. */
void test_elf_symbols_match_dlsym(void);
void test_elf_symbols_of_libc_match_dlsym(void);
void test_elf_names_offsets(void);
void test_elf_refuses_what_is_not_elf(void);
void test_elf_survives_truncated_and_corrupt_files(void);
void test_linetable_answers_every_offset(void);
void test_linetable_edges(void);
void test_compat_remote_tables(void);
void test_compat_debug_offsets_match_the_tables(void);
void test_compat_debug_offsets_refused(void);

#endif
