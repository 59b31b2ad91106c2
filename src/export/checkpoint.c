/* What the two checkpoint readers share: the list of opened safetensors files and the tensor
 * lookup, typed reads of JSON config fields, the special-token ids of tekken.json, and the
 * completion and validation of the hyper-parameters. */
#include "export/checkpoint.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tekken.h"

/* The mel front end is fixed (spec section 1): hop 160 samples, and conv2 halves the frames. */
#define MEL_HOP 160
#define CONV_STRIDE 2

vox_status vox_checkpoint_add_file(vox_checkpoint *ck, const char *path, vox_error *err) {
    vox_safetensors **files = realloc(ck->files, (ck->n_files + 1) * sizeof *files);
    if (!files) return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path);
    ck->files = files;
    vox_status st = vox_st_open(path, &ck->files[ck->n_files], err);
    if (st != VOX_OK) return st;
    ck->n_files++;
    return VOX_OK;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static const vox_st_tensor *find_exact(const vox_checkpoint *ck, const char *name,
                                       const char **file) {
    if (ck->weight_map) {
        const cJSON *shard = cJSON_GetObjectItemCaseSensitive(ck->weight_map, name);
        *file = ck->index_path;
        if (!cJSON_IsString(shard)) return NULL;
        for (size_t i = 0; i < ck->n_files; i++) {
            if (strcmp(base_name(vox_st_path(ck->files[i])), shard->valuestring) == 0) {
                *file = vox_st_path(ck->files[i]);
                return vox_st_find(ck->files[i], name);
            }
        }
        return NULL; /* not reached: every shard of the map is opened */
    }
    *file = ck->n_files ? vox_st_path(ck->files[0]) : ck->dir;
    for (size_t i = 0; i < ck->n_files; i++) {
        const vox_st_tensor *t = vox_st_find(ck->files[i], name);
        if (t) {
            *file = vox_st_path(ck->files[i]);
            return t;
        }
    }
    return NULL;
}

const vox_st_tensor *vox_checkpoint_find(const vox_checkpoint *ck, const char *name,
                                         const char **file, const char **found) {
    static _Thread_local char alias[256];
    const vox_st_tensor *t = find_exact(ck, name, file);
    if (found) *found = name;
    size_t n = ck->alias_from ? strlen(ck->alias_from) : 0;
    if (t || !n || strncmp(name, ck->alias_from, n) != 0) return t;
    if (snprintf(alias, sizeof alias, "%s%s", ck->alias_to, name + n) >= (int)sizeof alias)
        return NULL;
    const char *alias_file;
    t = find_exact(ck, alias, &alias_file);
    if (t) {
        *file = alias_file;
        if (found) *found = alias;
    }
    return t;
}

void vox_checkpoint_close(vox_checkpoint *ck) {
    for (size_t i = 0; i < ck->n_files; i++) vox_st_close(ck->files[i]);
    free(ck->files);
    cJSON_Delete(ck->weight_map);
    memset(ck, 0, sizeof *ck);
}

/* ---- tekken.json ----------------------------------------------------------------------------- */

vox_status vox_tekken_read_ids(const char *path, vox_manifest *hp, vox_error *err) {
    cJSON *root = NULL;
    vox_status st = vox_json_load(path, VOX_TEKKEN_MAX_BYTES, &root, err);
    if (st != VOX_OK) return st;

    vox_json_reader r = {path, err, VOX_OK};
    const cJSON *specials = cJSON_IsObject(root)
                                ? cJSON_GetObjectItemCaseSensitive(root, "special_tokens")
                                : NULL;
    if (!cJSON_IsArray(specials))
        vox_json_fail(&r, VOX_ERR_FORMAT, "special_tokens: missing or not a list");

    for (int w = 0; w < VOX_SPECIAL_TOKEN_COUNT && r.st == VOX_OK; w++) {
        const char *name = vox_special_tokens[w].token;
        int found = 0;
        const cJSON *tok;
        cJSON_ArrayForEach(tok, specials) {
            const char *s = vox_json_string(&r, tok, "special_tokens[]", "token_str", NULL);
            if (s == NULL || strcmp(s, name) != 0) continue;
            *vox_manifest_special_ref(hp, w) = vox_json_int(&r, tok, name, "rank", NULL, VOX_JSON_REQUIRED);
            found = 1;
            break;
        }
        if (!found) vox_json_fail(&r, VOX_ERR_FORMAT, "special_tokens: no %s token", name);
    }

    const cJSON *audio = vox_json_object(&r, root, "", "audio", 0);
    hp->sample_rate = vox_json_int(&r, audio, "audio", "sampling_rate", NULL,
                                   hp->sample_rate > 0 ? hp->sample_rate : 16000);
    cJSON_Delete(root);
    return r.st;
}

/* tekken.json is copied verbatim, and the runner loads it whole: it must load here as it will
 * there (vocab, config, pattern, ...; not only the special tokens read above), with no id the
 * decoder cannot embed, or the export would write a model the runner refuses. */
static vox_status check_tokenizer(const vox_checkpoint *ck, vox_error *err) {
    vox_tokenizer *tok = NULL;
    vox_status st = vox_tokenizer_load(ck->tekken_path, &tok, err);
    if (st != VOX_OK) return st;
    int32_t n = vox_tokenizer_vocab_size(tok);
    vox_tokenizer_free(tok);
    if (n > ck->hp.decoder.vocab_size)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "%s: the tokenizer has %d ids but %s's vocab_size is only %d",
                        ck->tekken_path, (int)n, ck->config_path, ck->hp.decoder.vocab_size);
    return VOX_OK;
}

/* ---- completing the hyper-parameters --------------------------------------------------------- */

vox_status vox_checkpoint_finish(vox_checkpoint *ck, vox_error *err) {
    vox_manifest *hp = &ck->hp;
    hp->format_version = VOX_FORMAT_VERSION;
    snprintf(hp->source_layout, sizeof hp->source_layout, "%s", ck->layout);
    snprintf(hp->tokenizer.file, sizeof hp->tokenizer.file, "tekken.json");
    /* One encoder chunk is max_source_positions frames after conv2, i.e. twice as many mel
     * frames of MEL_HOP samples; each projector row groups downsample_factor frames. For the
     * release: 1500 * 2 * 160 / 16000 = 30 s, and 16000 / (160 * 2 * 4) = 12.5 per second. */
    if (hp->sample_rate > 0 && hp->encoder.downsample_factor > 0) {
        hp->chunk_seconds =
            (double)hp->encoder.max_source_positions * CONV_STRIDE * MEL_HOP / hp->sample_rate;
        hp->frame_rate =
            (double)hp->sample_rate / (MEL_HOP * CONV_STRIDE * hp->encoder.downsample_factor);
    }
    vox_status st = vox_manifest_validate(hp, 0, err);
    if (st != VOX_OK) {
        vox_error_prefix(err, "%s", ck->config_path);
        return st;
    }
    return check_tokenizer(ck, err);
}
