/* scope.c: see scope.h (the rule and why it lives here). */
#include "scope.h"

#include <stdlib.h>
#include <string.h>

static int any_substring(char *const *needles, size_t n, const char *path) {
    for (size_t i = 0; i < n; i++)
        if (strstr(path, needles[i]) != NULL) return 1;
    return 0;
}

static int ends_with(const char *path, size_t length, const char *end) {
    size_t n = strlen(end);
    return length >= n && memcmp(path + length - n, end, n) == 0;
}

/* The lexical normal form of an absolute path, os.path.abspath's (no "." or ".." component,
 * no repeated separator), which is how the prefixes are spelled; malloc'ed, or NULL when
 * `path` is relative, already in that form, or memory ran out (then it is compared as
 * spelled). Python names a script run by a relative path cwd + "/" + the path as given
 * (`/home/me/./venv/bin/pytest`, `/home/me/w/../venv/bin/pytest`), and a sys.path entry with
 * ".." gives every module under it such a name. */
static char *normal_form(const char *path) {
    size_t length = strlen(path);
    if (path[0] != '/' || !(strstr(path, "/./") || strstr(path, "/../") || strstr(path, "//") ||
                            ends_with(path, length, "/.") || ends_with(path, length, "/..")))
        return NULL;
    char *out = malloc(length + 1);
    if (out == NULL) return NULL;
    size_t used = 0; /* out[0, used) is "/a/b": no trailing separator; the root is "" */
    const char *at = path;
    while (*at != '\0') {
        while (*at == '/') at++;
        const char *component = at;
        while (*at != '\0' && *at != '/') at++;
        size_t n = (size_t)(at - component);
        if (n == 0 || (n == 1 && component[0] == '.')) continue;
        if (n == 2 && component[0] == '.' && component[1] == '.') {
            while (used > 0 && out[used - 1] != '/') used--;
            if (used > 0) used--; /* and the separator before it; ".." of the root is the root */
            continue;
        }
        out[used++] = '/';
        memcpy(out + used, component, n);
        used += n;
    }
    if (used == 0) out[used++] = '/';
    out[used] = '\0';
    return out;
}

static int under_prefix(const hl_scope *scope, const char *path) {
    for (size_t i = 0; i < scope->nexclude_prefixes; i++) {
        const char *prefix = scope->exclude_prefixes[i];
        size_t length = strlen(prefix);
        /* A directory ends with a separator; an entry that does not is one file. */
        int whole = length > 0 && prefix[length - 1] != '/';
        if (strncmp(path, prefix, length) == 0 && (!whole || path[length] == '\0')) return 1;
    }
    return 0;
}

int hl_scope_is_user(const hl_scope *scope, const char *path) {
    /* 1. pseudo-files; terminal IPython's cells are the user's */
    if (path[0] == '\0' || (path[0] == '<' && strncmp(path, "<ipython-input-", 15) != 0)) return 0;
    /* 2. --profile-exclude */
    if (any_substring(scope->exclude, scope->nexclude, path)) return 0;
    /* 3. --profile-only */
    if (scope->nonly && !any_substring(scope->only, scope->nonly, path)) return 0;
    /* 4. the library directories, unless --profile-all */
    if (!scope->profile_all) {
        char *normal = normal_form(path);
        int library = under_prefix(scope, normal != NULL ? normal : path);
        free(normal);
        if (library) return 0;
    }
    return 1;
}

static void free_strings(char **strings, size_t n) {
    for (size_t i = 0; i < n; i++) free(strings[i]);
    free(strings);
}

void hl_scope_clear(hl_scope *scope) {
    free_strings(scope->exclude_prefixes, scope->nexclude_prefixes);
    free_strings(scope->only, scope->nonly);
    free_strings(scope->exclude, scope->nexclude);
    memset(scope, 0, sizeof(*scope));
}
