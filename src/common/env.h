/* Settings from the environment (VOX_* switches for A/B runs, tests and tools), read the same way
 * everywhere: a switch is on when set, non-empty and not "0"; a number is used only when it is
 * all digits and within its range, else the default stands. */
#ifndef VOX_COMMON_ENV_H
#define VOX_COMMON_ENV_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

bool vox_env_flag(const char *var);
size_t vox_env_size(const char *var, size_t fallback, size_t lo, size_t hi);

#ifdef __cplusplus
}
#endif
#endif
