/* Settings from the environment (env.h). */
#include "common/env.h"

#include <stdlib.h>
#include <string.h>

bool vox_env_flag(const char *var) {
    const char *v = getenv(var);
    return v && *v && strcmp(v, "0") != 0;
}

size_t vox_env_size(const char *var, size_t fallback, size_t lo, size_t hi) {
    const char *v = getenv(var);
    if (!v || !*v) return fallback;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (*end || n < lo || n > hi) return fallback;
    return (size_t)n;
}
