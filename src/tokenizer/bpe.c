/* Byte-level BPE (see bpe.h).
 *
 * The merge keeps the parts of a piece as a linked list and the candidate pairs in a min-heap
 * keyed by (rank, start byte), so the pair chosen at each step is the one tiktoken's
 * _byte_pair_merge chooses (lowest rank, then leftmost) but a piece of n bytes costs
 * O(n log n) instead of O(n^2): a long run of spaces or digits-free symbols stays fast. */
#include "tokenizer/bpe.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a: tokens are short (a few bytes on average), so a byte-at-a-time hash is enough. */
static uint64_t hash_bytes(const uint8_t *p, size_t len) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h ^ (h >> 29);
}

vox_status vox_tok_vocab_init(vox_tok_vocab *v, int32_t cap) {
    memset(v, 0, sizeof *v);
    if (cap < 1) cap = 1;
    size_t slots = 16;
    while (slots < 2 * (size_t)cap) slots *= 2;
    v->cap = cap;
    v->mask = slots - 1;
    v->slots = calloc(slots, sizeof *v->slots);
    v->off = malloc(((size_t)cap + 1) * sizeof *v->off);
    v->bytes_cap = 8 * (size_t)cap;
    v->bytes = malloc(v->bytes_cap);
    if (!v->slots || !v->off || !v->bytes) {
        vox_tok_vocab_free(v);
        return VOX_ERR_NOMEM;
    }
    v->off[0] = 0;
    return VOX_OK;
}

void vox_tok_vocab_free(vox_tok_vocab *v) {
    free(v->bytes);
    free(v->off);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

int32_t vox_tok_vocab_find(const vox_tok_vocab *v, const uint8_t *p, size_t len) {
    for (size_t i = hash_bytes(p, len) & v->mask;; i = (i + 1) & v->mask) {
        uint32_t s = v->slots[i];
        if (s == 0) return -1;
        int32_t r = (int32_t)(s - 1);
        size_t rlen;
        const uint8_t *rp = vox_tok_vocab_bytes(v, r, &rlen);
        if (rlen == len && memcmp(rp, p, len) == 0) return r;
    }
}

vox_status vox_tok_vocab_add(vox_tok_vocab *v, const uint8_t *p, size_t len, int32_t *dup) {
    VOX_ASSERT(v->n < v->cap);
    if (len > UINT32_MAX - 1 - v->bytes_len) return VOX_ERR_NOMEM;
    size_t i = hash_bytes(p, len) & v->mask;
    for (;; i = (i + 1) & v->mask) {
        uint32_t s = v->slots[i];
        if (s == 0) break;
        size_t rlen;
        const uint8_t *rp = vox_tok_vocab_bytes(v, (int32_t)(s - 1), &rlen);
        if (rlen == len && memcmp(rp, p, len) == 0) {
            *dup = (int32_t)(s - 1);
            return VOX_ERR_FORMAT;
        }
    }
    if (v->bytes_len + len + 1 > v->bytes_cap) {
        size_t cap = v->bytes_cap * 2;
        while (cap < v->bytes_len + len + 1) cap *= 2;
        uint8_t *b = realloc(v->bytes, cap);
        if (!b) return VOX_ERR_NOMEM;
        v->bytes = b;
        v->bytes_cap = cap;
    }
    if (len) memcpy(v->bytes + v->bytes_len, p, len);
    v->bytes_len += len;
    v->bytes[v->bytes_len++] = 0;
    v->slots[i] = (uint32_t)v->n + 1;
    v->n++;
    v->off[v->n] = (uint32_t)v->bytes_len;
    return VOX_OK;
}

void vox_tok_bpe_scratch_free(vox_tok_bpe_scratch *s) {
    free(s->next);
    free(s->prev);
    free(s->rank);
    free(s->heap);
    memset(s, 0, sizeof *s);
}

static vox_status scratch_reserve(vox_tok_bpe_scratch *s, size_t n) {
    if (n <= s->cap) return VOX_OK;
    size_t cap = s->cap ? s->cap : 64;
    while (cap < n) cap *= 2;
    vox_tok_bpe_scratch t = {
        .next = malloc(cap * sizeof *t.next),
        .prev = malloc(cap * sizeof *t.prev),
        .rank = malloc(cap * sizeof *t.rank),
        /* n initial pairs, then at most two new pairs per merge */
        .heap = malloc(3 * cap * sizeof *t.heap),
        .cap = cap,
    };
    if (!t.next || !t.prev || !t.rank || !t.heap) {
        vox_tok_bpe_scratch_free(&t);
        return VOX_ERR_NOMEM;
    }
    vox_tok_bpe_scratch_free(s);
    *s = t;
    return VOX_OK;
}

static vox_status ranks_push(vox_tok_ranks *out, int32_t r) {
    if (out->n == out->cap) {
        size_t cap = out->cap ? 2 * out->cap : 256;
        int32_t *v = realloc(out->v, cap * sizeof *v);
        if (!v) return VOX_ERR_NOMEM;
        out->v = v;
        out->cap = cap;
    }
    out->v[out->n++] = r;
    return VOX_OK;
}

/* Min-heap of (rank << 32 | start): pops the lowest rank, then the leftmost pair. */
static void heap_push(uint64_t *h, size_t *n, uint64_t key) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h[p] <= key) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = key;
}

static uint64_t heap_pop(uint64_t *h, size_t *n) {
    uint64_t top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (last <= h[c]) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = last;
    return top;
}

#define PAIR_KEY(rank, start) (((uint64_t)(uint32_t)(rank) << 32) | (uint32_t)(start))

vox_status vox_tok_bpe_encode(const vox_tok_vocab *v, const uint8_t *piece, size_t n,
                              vox_tok_bpe_scratch *s, vox_tok_ranks *out) {
    if (n == 0) return VOX_OK;
    VOX_ASSERT(n < (size_t)INT32_MAX);
    int32_t whole = vox_tok_vocab_find(v, piece, n);
    if (whole >= 0) return ranks_push(out, whole);
    if (scratch_reserve(s, n + 1) != VOX_OK) return VOX_ERR_NOMEM;

    /* A part is named by its first byte; part i spans piece[i .. next[i]). rank[i] is the rank of
     * part i joined with the part after it, or -1 (also for parts merged away). */
    int32_t *next = s->next, *prev = s->prev, *rank = s->rank;
    uint64_t *heap = s->heap;
    size_t heap_n = 0;
    int32_t len = (int32_t)n;
    for (int32_t i = 0; i < len; i++) {
        next[i] = i + 1;
        prev[i] = i - 1;
        rank[i] = i + 1 < len ? vox_tok_vocab_find(v, piece + i, 2) : -1;
        if (rank[i] >= 0) heap_push(heap, &heap_n, PAIR_KEY(rank[i], i));
    }
    while (heap_n > 0) {
        uint64_t key = heap_pop(heap, &heap_n);
        int32_t r = (int32_t)(key >> 32), i = (int32_t)(uint32_t)key;
        /* A pair's bytes only grow as its parts merge, so an entry whose rank differs from the
         * current one is outdated. */
        if (rank[i] != r) continue;
        int32_t j = next[i], k = next[j];
        next[i] = k;
        if (k < len) prev[k] = i;
        rank[j] = -1;
        rank[i] = k < len ? vox_tok_vocab_find(v, piece + i, (size_t)(next[k] - i)) : -1;
        if (rank[i] >= 0) heap_push(heap, &heap_n, PAIR_KEY(rank[i], i));
        if (i > 0) {
            int32_t h = prev[i];
            rank[h] = vox_tok_vocab_find(v, piece + h, (size_t)(k - h));
            if (rank[h] >= 0) heap_push(heap, &heap_n, PAIR_KEY(rank[h], h));
        }
    }
    for (int32_t i = 0; i < len; i = next[i]) {
        int32_t r = vox_tok_vocab_find(v, piece + i, (size_t)(next[i] - i));
        VOX_ASSERT(r >= 0);
        if (ranks_push(out, r) != VOX_OK) return VOX_ERR_NOMEM;
    }
    return VOX_OK;
}
