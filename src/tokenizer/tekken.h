/* The tekken tokenizer (tekken.json): byte-level BPE with rank-ordered merges after splitting the
 * text with the file's own pre-tokenizer regex (PCRE2, UTF + Unicode properties), giving the ids
 * mistral-common's Tekkenizer (tiktoken) gives.
 * Ids 0..num_special-1 are special tokens; text token id = num_special + rank; only the first
 * (default_vocab_size - num_special) vocab entries are used.
 * A loaded tokenizer is read-only: every function below may be called from several threads. */
#ifndef VOX_TOKENIZER_TEKKEN_H
#define VOX_TOKENIZER_TEKKEN_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vox_tokenizer vox_tokenizer;

/* The largest tekken.json read (the runner's loader and the exporter's): the release's is ~15 MB
 * (150,000 vocabulary entries), so a file 16 times that is not a tokenizer. */
#define VOX_TEKKEN_MAX_BYTES ((size_t)256 << 20)

/* Loads and validates PATH as mistral-common does (rank equals position, the first 256 entries
 * are the 256 single bytes, unique tokens, sizes consistent) and checks every field's presence
 * and type. A missing file is VOX_ERR_IO, a bad one VOX_ERR_FORMAT; messages name the path.
 * Files without special_tokens (allowed up to version v7) get mistral-common's deprecated list;
 * special ids not listed are named "<SPECIAL_i>". */
vox_status vox_tokenizer_load(const char *path, vox_tokenizer **out, vox_error *err);
void vox_tokenizer_free(vox_tokenizer *tok);

/* Total ids the model's vocabulary covers: num_special + used text tokens. */
int32_t vox_tokenizer_vocab_size(const vox_tokenizer *tok);
int32_t vox_tokenizer_num_special(const vox_tokenizer *tok);
/* Id of a special token by its string ("<s>", "[AUDIO]", ...), or -1. */
int32_t vox_tokenizer_special_id(const vox_tokenizer *tok, const char *name);

/* Encodes UTF-8 text to ids (never produces special tokens: "<s>" in the text is plain text).
 * *ids is malloc'ed (NULL when *n_ids is 0). Text that is not valid UTF-8 is
 * VOX_ERR_INVALID_ARG. */
vox_status vox_tokenizer_encode(const vox_tokenizer *tok, const char *text, size_t len,
                                int32_t **ids, size_t *n_ids, vox_error *err);

/* Decodes ids to UTF-8 text: special ids (< num_special) are skipped, the bytes of the rest are
 * joined and each maximal ill-formed subsequence becomes U+FFFD, as Python's
 * bytes.decode("utf-8", "replace"). *text is malloc'ed and NUL-terminated, so a NUL byte (the
 * byte-0 token) becomes U+FFFD too instead of cutting it short (vox_tokenizer_piece gives exact
 * bytes). Ids outside the vocabulary are
 * VOX_ERR_INVALID_ARG.
 * mistral-common decodes the runs between special ids separately; joining them differs only for
 * a character whose bytes are split by a special id, which comes out whole here. */
vox_status vox_tokenizer_decode(const vox_tokenizer *tok, const int32_t *ids, size_t n_ids,
                                char **text, vox_error *err);

/* The raw bytes of one id (special: its token string), or NULL for an id out of range. The bytes
 * are followed by a NUL; len may be NULL. */
const char *vox_tokenizer_piece(const vox_tokenizer *tok, int32_t id, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
