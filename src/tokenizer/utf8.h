/* UTF-8 helpers of the tokenizer: strict validation of input text (what a Python str can hold,
 * minus lone surrogates), and the lossy decoding Python's bytes.decode("utf-8", "replace") does,
 * which is what the reference tokenizer returns for token bytes that are not valid UTF-8. */
#ifndef VOX_TOKENIZER_UTF8_H
#define VOX_TOKENIZER_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length of the well-formed sequence that starts at s[0] (1..4), or 0 when s[0..n) does not
 * start with one. Well-formed follows Unicode table 3-7: no overlongs, no surrogates, nothing
 * above U+10FFFF. */
size_t vox_tok_utf8_seq_len(const uint8_t *s, size_t n);

/* Returns n when s[0..n) is well-formed UTF-8, else the offset of the first bad byte. */
size_t vox_tok_utf8_check(const uint8_t *s, size_t n);

/* Writes s[0..n) to dst with each maximal subpart of an ill-formed sequence replaced by U+FFFD
 * (EF BF BD), as Python's decoder does, and each NUL byte too (the text becomes a C string,
 * which a NUL would end). dst must hold 3 * n bytes; returns the bytes written. */
size_t vox_tok_utf8_repair(const uint8_t *s, size_t n, uint8_t *dst);

#endif
