#include "format/json.h"

#include "common/read_all.h"
#include "common/text.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_key(const void *a, const void *b) {
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* The first key that appears twice in one object of the tree at v, or NULL (*nomem when out of
 * memory). cJSON keeps both and finds the first, Python's json the last: a reader of ours and
 * the reference would disagree on such a file. */
static const char *duplicate_key(const cJSON *v, bool *nomem) {
    size_t n = 0;
    for (const cJSON *c = v->child; c; c = c->next) n++;
    if (cJSON_IsObject(v) && n > 1) {
        const cJSON **keys = malloc(n * sizeof *keys);
        if (!keys) {
            *nomem = true;
            return NULL;
        }
        size_t k = 0;
        for (const cJSON *c = v->child; c; c = c->next) keys[k++] = c;
        qsort(keys, n, sizeof *keys, by_key);
        const char *dup = NULL;
        for (size_t i = 1; i < n && !dup; i++)
            if (strcmp(keys[i - 1]->string, keys[i]->string) == 0) dup = keys[i]->string;
        free(keys);
        if (dup) return dup;
    }
    for (const cJSON *c = v->child; c; c = c->next) {
        const char *dup = duplicate_key(c, nomem);
        if (dup || *nomem) return dup;
    }
    return NULL;
}

vox_status vox_json_load(const char *path, size_t max_bytes, cJSON **out, vox_error *err) {
    char *text = NULL;
    size_t len = 0;
    vox_status st = vox_read_regular(path, max_bytes, &text, &len, err);
    if (st) return st;
    const char *end = NULL;
    *out = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    size_t at = end && end >= text ? (size_t)(end - text) : 0;
    if (*out == NULL) {
        free(text);
        return vox_fail(err, VOX_ERR_FORMAT, "%s: invalid JSON near byte %zu", path, at);
    }
    /* One value and nothing after it but whitespace: cJSON stops at the end of the first value,
     * so "{...}garbage" or "{...}{...}" (a file appended to, two files concatenated) would
     * otherwise load as the first object. */
    at = vox_json_space_end(text, len, at);
    free(text);
    if (at != len) {
        cJSON_Delete(*out);
        *out = NULL;
        return vox_fail(err, VOX_ERR_FORMAT, "%s: data after the JSON value at byte %zu", path, at);
    }
    bool nomem = false;
    const char *dup = duplicate_key(*out, &nomem);
    if (dup || nomem) {
        st = nomem ? vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path)
                              : vox_fail(err, VOX_ERR_FORMAT,
                                         "%s: the key \"%.100s\" appears twice in one object", path, dup);
        cJSON_Delete(*out);
        *out = NULL;
        return st;
    }
    return VOX_OK;
}

void vox_json_fail(vox_json_reader *r, vox_status code, const char *fmt, ...) {
    if (r->st != VOX_OK) return;
    char what[VOX_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    r->st = vox_fail(r->err, code, "%s: %s", r->path, what);
}

/* The value of key (or alt), treating JSON null as absent; *used is the spelling found. */
static const cJSON *json_get(const cJSON *obj, const char *key, const char *alt,
                             const char **used) {
    *used = key;
    if (!obj) return NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if ((!v || cJSON_IsNull(v)) && alt) {
        v = cJSON_GetObjectItemCaseSensitive(obj, alt);
        if (v && !cJSON_IsNull(v)) *used = alt;
    }
    return v && !cJSON_IsNull(v) ? v : NULL;
}

#define DOT(where) (*(where) ? "." : "")

const cJSON *vox_json_object(vox_json_reader *r, const cJSON *obj, const char *where,
                             const char *key, int required) {
    if (r->st != VOX_OK) return NULL;
    const char *used;
    const cJSON *v = json_get(obj, key, NULL, &used);
    if (!v) {
        if (required) vox_json_fail(r, VOX_ERR_FORMAT, "%s%s%s: missing", where, DOT(where), key);
        return NULL;
    }
    if (!cJSON_IsObject(v)) {
        vox_json_fail(r, VOX_ERR_FORMAT, "%s%s%s: must be an object", where, DOT(where), key);
        return NULL;
    }
    return v;
}

int vox_json_int(vox_json_reader *r, const cJSON *obj, const char *where, const char *key,
                 const char *alt, int def) {
    if (r->st != VOX_OK) return 0;
    const char *used;
    const cJSON *v = json_get(obj, key, alt, &used);
    if (!v) {
        if (def == VOX_JSON_REQUIRED)
            vox_json_fail(r, VOX_ERR_FORMAT, "%s%s%s: missing", where, DOT(where), key);
        return def;
    }
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(x >= INT_MIN && x <= INT_MAX && x == floor(x))) {
        vox_json_fail(r, VOX_ERR_FORMAT, "%s%s%s: must be an integer", where, DOT(where), used);
        return 0;
    }
    return (int)x;
}

double vox_json_number(vox_json_reader *r, const cJSON *obj, const char *where, const char *key,
                       double def) {
    if (r->st != VOX_OK) return 0;
    const char *used;
    const cJSON *v = json_get(obj, key, NULL, &used);
    if (!v) {
        if (def == (double)VOX_JSON_REQUIRED)
            vox_json_fail(r, VOX_ERR_FORMAT, "%s%s%s: missing", where, DOT(where), key);
        return def;
    }
    if (!cJSON_IsNumber(v)) {
        vox_json_fail(r, VOX_ERR_FORMAT, "%s%s%s: must be a number", where, DOT(where), key);
        return 0;
    }
    return v->valuedouble;
}

const char *vox_json_string(vox_json_reader *r, const cJSON *obj, const char *where,
                            const char *key, const char *def) {
    if (r->st != VOX_OK) return def;
    const char *used;
    const cJSON *v = json_get(obj, key, NULL, &used);
    if (!v) return def;
    if (!cJSON_IsString(v)) {
        vox_json_fail(r, VOX_ERR_FORMAT, "%s%s%s: must be a string", where, DOT(where), key);
        return def;
    }
    return v->valuestring;
}
