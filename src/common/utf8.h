/* UTF-8 as the reference tokenizer decodes it (Python's bytes.decode("utf-8", "replace")):
 * well-formed follows Unicode table 3-7 (no overlongs, no surrogates, nothing above U+10FFFF),
 * and each maximal subpart of an ill-formed sequence becomes one U+FFFD. The tokenizer checks
 * input text and repairs decoded token bytes with it; the CLI lines token pieces (which can be
 * parts of characters) up with the text and keeps its outputs (JSON above all) valid UTF-8. */
#ifndef VOX_COMMON_UTF8_H
#define VOX_COMMON_UTF8_H

#include <stddef.h>
#include <stdint.h>

#define VOX_UTF8_REPLACEMENT "\xEF\xBF\xBD"

/* The length of the well-formed character at s (*valid = 1), or of the maximal subpart that is
 * replaced by one U+FFFD (*valid = 0). n >= 1. */
size_t vox_utf8_unit(const uint8_t *s, size_t n, int *valid);

/* Length of the well-formed sequence that starts at s[0] (1..4), or 0 when s[0..n) does not
 * start with one. */
size_t vox_utf8_seq_len(const uint8_t *s, size_t n);

/* Returns n when s[0..n) is well-formed UTF-8, else the offset of the first bad byte. */
size_t vox_utf8_check(const uint8_t *s, size_t n);

/* Writes s[0..n) to dst with each maximal subpart of an ill-formed sequence replaced by U+FFFD,
 * and each NUL byte too (the text becomes a C string, which a NUL would end). dst must hold
 * 3 * n bytes; returns the bytes written. */
size_t vox_utf8_repair(const uint8_t *s, size_t n, uint8_t *dst);

/* vox_utf8_repair into a malloc'ed, NUL-terminated string (NULL: out of memory). */
char *vox_utf8_repair_dup(const char *s, size_t n);

#endif
