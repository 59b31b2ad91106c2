/* The list of inputs of a run: the FILE arguments, then the lines of --files-from. The input
 * "-" is audio on standard input (as whisper.cpp and openai-whisper take it): at most one, and
 * not beside --files-from -; a file of that name is "./-". */
#ifndef VOX_CLI_INPUTS_H
#define VOX_CLI_INPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "voxtral/status.h"

typedef struct {
    char **paths; /* owned */
    size_t n;
} vox_inputs;

/* The input that stands for audio on standard input. */
#define VOX_STDIN_INPUT "-"

/* Copies files[0..n) and appends the paths of list_path (NULL: none; "-": standard input), one a
 * line: a UTF-8 byte order mark at the start and a trailing "\r" are dropped (lists from Windows
 * editors), empty lines are skipped, nothing else is
 * changed (spaces and '#' may be part of a name). Errors name the list; the input "-" twice,
 * or with list_path "-", is VOX_ERR_INVALID_ARG. */
vox_status vox_inputs_build(const char *const *files, size_t n, const char *list_path,
                            vox_inputs *out, vox_error *err);
/* Appends the lines of an open stream (named `name` in errors). */
vox_status vox_inputs_read(vox_inputs *in, FILE *f, const char *name, vox_error *err);
/* Keeps the inputs whose position in the list (0-based) is k modulo n (0 <= k < n): the N shards
 * of a list are disjoint, cover it, and differ in size by at most one. */
void vox_inputs_shard(vox_inputs *in, int k, int n);
/* The same selection on an array of count strings (a parallel one before vox_inputs_shard):
 * the others are freed, the kept ones moved to the front; returns how many are kept. */
size_t vox_shard_paths(char **paths, size_t count, int k, int n);
void vox_inputs_free(vox_inputs *in);
#endif
