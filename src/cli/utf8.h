/* UTF-8 as the tokenizer's decoder repairs it: each maximal subpart of an ill-formed sequence
 * (Unicode table 3-7) becomes one U+FFFD. Token pieces can be parts of characters; the CLI uses
 * this to line pieces up with decoded text and to write pieces into JSON, which must be UTF-8. */
#ifndef VOX_CLI_UTF8_H
#define VOX_CLI_UTF8_H

#include <stddef.h>

#define VOX_UTF8_REPLACEMENT "\xEF\xBF\xBD"

/* The length of the well-formed character at s (*valid = 1), or of the maximal subpart that is
 * replaced by one U+FFFD (*valid = 0). n >= 1. */
size_t vox_utf8_unit(const unsigned char *s, size_t n, int *valid);

/* s[0..n) repaired (ill-formed sequences and NUL bytes as U+FFFD), NUL-terminated, malloc'ed
 * (NULL: out of memory). */
char *vox_utf8_repair_dup(const char *s, size_t n);

#endif
