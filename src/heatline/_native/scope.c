/* scope.c: see scope.h (the rule and why it lives here). */
#include "scope.h"

#include <stdlib.h>
#include <string.h>

static int any_substring(char *const *needles, size_t n, const char *path) {
    for (size_t i = 0; i < n; i++)
        if (strstr(path, needles[i]) != NULL) return 1;
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
        for (size_t i = 0; i < scope->nexclude_prefixes; i++) {
            const char *prefix = scope->exclude_prefixes[i];
            size_t length = strlen(prefix);
            /* A directory ends with a separator; an entry that does not is one file. */
            int whole = length > 0 && prefix[length - 1] != '/';
            if (strncmp(path, prefix, length) == 0 && (!whole || path[length] == '\0')) return 0;
        }
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
