/* Byte-level BPE as tiktoken does it: a table from token bytes to rank (the rank is also the merge
 * priority), and the merge of one pre-tokenized piece. Internal to src/tokenizer. */
#ifndef VOX_TOKENIZER_BPE_H
#define VOX_TOKENIZER_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"

/* Token bytes by rank, and an open-addressing hash table over them. */
typedef struct {
    uint8_t *bytes;  /* token r is bytes[off[r] .. off[r+1] - 1), then a NUL */
    size_t bytes_len, bytes_cap;
    uint32_t *off;   /* n + 1 entries */
    int32_t n, cap;  /* tokens added, tokens the table was sized for */
    uint32_t *slots; /* rank + 1 of the token hashed there, 0 when empty */
    size_t mask;     /* slots has mask + 1 entries, a power of two >= 2 * cap */
} vox_tok_vocab;

vox_status vox_tok_vocab_init(vox_tok_vocab *v, int32_t cap);
void vox_tok_vocab_free(vox_tok_vocab *v);

/* Adds p[0..len) with rank v->n. Returns VOX_OK, VOX_ERR_NOMEM, or VOX_ERR_FORMAT when the same
 * bytes are already present, with *dup set to their rank. */
vox_status vox_tok_vocab_add(vox_tok_vocab *v, const uint8_t *p, size_t len, int32_t *dup);

/* Rank of the token p[0..len), or -1. */
int32_t vox_tok_vocab_find(const vox_tok_vocab *v, const uint8_t *p, size_t len);

static inline const uint8_t *vox_tok_vocab_bytes(const vox_tok_vocab *v, int32_t r, size_t *len) {
    *len = v->off[r + 1] - v->off[r] - 1;
    return v->bytes + v->off[r];
}

/* A growing list of ranks. */
typedef struct {
    int32_t *v;
    size_t n, cap;
} vox_tok_ranks;

/* Scratch memory of the merge, reused from piece to piece. */
typedef struct {
    int32_t *next, *prev, *rank;
    uint64_t *heap;
    size_t cap;
} vox_tok_bpe_scratch;

void vox_tok_bpe_scratch_free(vox_tok_bpe_scratch *s);

/* Appends the ranks of piece[0..n) to out, as tiktoken's byte_pair_encode does: the whole piece
 * when it is a token, else the result of merging, starting from single bytes, the adjacent pair
 * whose concatenation has the lowest rank (the leftmost on a tie) until no pair is a token.
 * Needs every single byte in the vocabulary. n must be below 2^31. */
vox_status vox_tok_bpe_encode(const vox_tok_vocab *v, const uint8_t *piece, size_t n,
                              vox_tok_bpe_scratch *s, vox_tok_ranks *out);

#endif
