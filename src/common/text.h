/* Small string helpers shared by the library and the tools. */
#ifndef VOX_COMMON_TEXT_H
#define VOX_COMMON_TEXT_H

/* s without leading and trailing white space (isspace), as a new string (NULL: out of memory). */
char *vox_trim_dup(const char *s);

#endif
