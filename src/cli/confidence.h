/* --print-confidence: low-confidence words in txt output (like whisper-cli's --print-colors).
 *
 * A word is a run of non-space bytes of the transcript; it is low-confidence when the least
 * probable of the tokens it is made of had a probability under the threshold (0.5 by default:
 * the model gave another continuation at least as much weight). Low-confidence words are shown
 * in red when the output is a terminal (VOX_MARK_COLOUR) and as [[word]] otherwise
 * (VOX_MARK_PLAIN: greppable, survives files and pipes). Nothing else in the text changes. */
#ifndef VOX_CLI_CONFIDENCE_H
#define VOX_CLI_CONFIDENCE_H

#include <stddef.h>

#include "voxtral/voxtral.h"

typedef enum { VOX_MARK_PLAIN, VOX_MARK_COLOUR } vox_mark_style;

#define VOX_MARK_PLAIN_OPEN "[["
#define VOX_MARK_PLAIN_CLOSE "]]"
#define VOX_MARK_COLOUR_OPEN "\033[31m"
#define VOX_MARK_COLOUR_CLOSE "\033[0m"

/* text: the decoded transcript; token i has the bytes pieces[i] (lens[i] long) and the
 * probability prob[i]. The text is rebuilt from the pieces as the decoder builds it (control
 * tokens, whose pieces read <...> or [...], dropped; invalid UTF-8 replaced by U+FFFD) to know
 * which tokens made each word. Returns a new string: the marked text, or the text unmarked when
 * the rebuilt text differs from it. NULL: out of memory. */
char *vox_mark_words(const char *text, const char *const *pieces, const size_t *lens,
                     const float *prob, size_t n, double threshold, vox_mark_style style);

/* The same for a result; without per-token log-probabilities (r->tokens) the text unmarked. */
char *vox_mark_result(const voxtral_context *ctx, const voxtral_result *r, double threshold,
                      vox_mark_style style);

#endif
