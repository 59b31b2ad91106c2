/* Reading JSON files (the manifest, config.json, params.json, tekken.json) with errors that
 * name the file and the field. */
#ifndef VOX_FORMAT_JSON_H
#define VOX_FORMAT_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads and parses a JSON file of at most max_bytes. */
vox_status vox_json_load(const char *path, size_t max_bytes, cJSON **out, vox_error *err);

/* Typed reads of config fields with a sticky error: after the first failure every call does
 * nothing, so that a reader reads as a list of fields and reports the first problem, as
 * "PATH: audio_config.num_attention_heads: must be an integer". `where` names the object for
 * messages ("" for the root). Keys may have an alternative spelling (alt, or NULL). A missing
 * (or null) key takes `def`; VOX_JSON_REQUIRED makes it an error. */
typedef struct {
    const char *path;
    vox_error *err;
    vox_status st;
} vox_json_reader;

#define VOX_JSON_REQUIRED (-2147483647 - 1)
const cJSON *vox_json_object(vox_json_reader *r, const cJSON *obj, const char *where,
                             const char *key, int required);
int vox_json_int(vox_json_reader *r, const cJSON *obj, const char *where, const char *key,
                 const char *alt, int def);
double vox_json_number(vox_json_reader *r, const cJSON *obj, const char *where, const char *key,
                       double def);
/* The string value, or def when absent; a non-string value is an error. */
const char *vox_json_string(vox_json_reader *r, const cJSON *obj, const char *where,
                            const char *key, const char *def);
void vox_json_fail(vox_json_reader *r, vox_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif
