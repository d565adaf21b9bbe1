/* scope.h: the scope rule, in one place: which files count as the user's code.
 *
 * Time and memory are charged to the innermost frame that is user code; the rest of a stack
 * (the standard library, installed packages, heatline itself) is only walked through. A file
 * (a code object's co_filename) is user code when all of these hold, checked in this order:
 *
 *   1. it is not a pseudo-file: not empty and not "<...>" (<string>, <frozen ...>, <stdin>),
 *      except terminal IPython's cells, "<ipython-input-N-HASH>", which are the user's;
 *   2. no `exclude` entry (--profile-exclude) is a substring of its path;
 *   3. when `only` (--profile-only) is non-empty, some entry is a substring of its path (a
 *      library file named there counts: --profile-only needs no --profile-all);
 *   4. unless `profile_all` (--profile-all), no `exclude_prefixes` entry is a prefix of it (an
 *      entry that ends with a separator is a directory; one that does not is a single file,
 *      a console-script launcher such as venv/bin/pytest, and must be the whole path); an
 *      absolute path is compared in its lexical normal form (no "." or ".." component, no
 *      repeated separator), as the entries are spelled, since Python names a script run by a
 *      relative path `/cwd/./venv/bin/pytest` or `/cwd/../venv/bin/pytest`.
 *
 * The engine holds no list of directories: the shell (heatline/engine/scope.py) passes the prefixes
 * that mean "not the user's" (the standard library, site-packages, heatline's own package,
 * each as spelled and with symlinks resolved, and the console-script launchers, which only
 * call into an installed package) and the options pass `only`, `exclude` and
 * `profile_all`; this file applies them. The walker (frames.c) asks once per file, when it
 * first interns it, and keeps the answer in the file table (stats.h, hl_file.user).
 */
#ifndef HEATLINE_SCOPE_H
#define HEATLINE_SCOPE_H

#include <stddef.h>

typedef struct hl_scope {
    char **exclude_prefixes; /* malloc'ed strings, owned */
    size_t nexclude_prefixes;
    char **only;
    size_t nonly;
    char **exclude;
    size_t nexclude;
    int profile_all;
} hl_scope;

/* 1 when `path` is user code under the rule above, else 0. */
int hl_scope_is_user(const hl_scope *scope, const char *path);
/* Frees the scope's strings and zeroes it. */
void hl_scope_clear(hl_scope *scope);

#endif
