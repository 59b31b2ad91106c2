#include "common/text.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

char *vox_trim_dup(const char *s) {
    while (*s && isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) n--;
    char *t = malloc(n + 1);
    if (t) {
        memcpy(t, s, n);
        t[n] = 0;
    }
    return t;
}

size_t vox_json_space_end(const char *s, size_t len, size_t at) {
    while (at < len && (s[at] == ' ' || s[at] == '\t' || s[at] == '\n' || s[at] == '\r')) at++;
    return at;
}
