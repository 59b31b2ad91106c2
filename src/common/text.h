/* Small string helpers shared by the library and the tools. */
#ifndef VOX_COMMON_TEXT_H
#define VOX_COMMON_TEXT_H

#include <stddef.h>

/* s without leading and trailing white space (isspace), as a new string (NULL: out of memory). */
char *vox_trim_dup(const char *s);

/* The first byte of s[at..len) that is not JSON white space (space, tab, line feed, carriage
 * return), or len: where a parsed JSON value's text must end for nothing to follow it. */
size_t vox_json_space_end(const char *s, size_t len, size_t at);

#endif
