/* Fuzzes the manifest reader (src/format/manifest.c) and the JSON reader under it (json.c).
 * The input is a model directory's voxtral.json. It is either refused with a format error that
 * names the file, or read into a manifest that passes vox_manifest_validate, is written back by
 * vox_manifest_write and reads back identical. Then the typed readers of json.c are run over
 * every member of every object of the same file: each either fails with a message naming the
 * file, or returns what the JSON holds. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format/json.h"
#include "format/manifest.h"
#include "fuzz.h"

static void check_manifest(const char *dir, const char *path) {
    vox_manifest m;
    vox_error err = {0};
    vox_status s = vox_manifest_read(dir, &m, &err);
    if (s != VOX_OK) {
        FUZZ_CHECK(s == VOX_ERR_FORMAT, "status %d for a malformed manifest: %s", (int)s,
                   err.msg);
        FUZZ_CHECK(strstr(err.msg, path) != NULL, "the message does not name the file: %s",
                   err.msg);
        return;
    }
    s = vox_manifest_validate(&m, 1, &err);
    FUZZ_CHECK(s == VOX_OK, "a manifest that was read does not validate: %s", err.msg);

    char copy_dir[1024];
    snprintf(copy_dir, sizeof copy_dir, "%s/copy", dir);
    mkdir(copy_dir, 0700);
    s = vox_manifest_write(copy_dir, &m, &err);
    FUZZ_CHECK(s == VOX_OK, "cannot write back a manifest that was read: %s", err.msg);
    vox_manifest again;
    s = vox_manifest_read(copy_dir, &again, &err);
    FUZZ_CHECK(s == VOX_OK, "the written manifest does not read back: %s", err.msg);
    /* both were zeroed by the reader before it filled them: padding compares equal too */
    FUZZ_CHECK(memcmp(&m, &again, sizeof m) == 0, "the manifest changed through a write");
}

/* Every typed read of every member, through a fresh sticky reader each time. */
static void check_json_readers(const cJSON *obj, const char *where, const char *path, int depth) {
    if (depth > 8) return;
    for (const cJSON *v = obj->child; v; v = v->next) {
        const char *key = v->string;
        if (cJSON_GetObjectItemCaseSensitive(obj, key) != v) continue; /* a repeated key */
        vox_error err = {0};
        vox_json_reader r = {path, &err, VOX_OK};

        int i = vox_json_int(&r, obj, where, key, NULL, VOX_JSON_REQUIRED);
        int is_int = cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
                     v->valuedouble >= -2147483648.0 && v->valuedouble <= 2147483647.0;
        FUZZ_CHECK((r.st == VOX_OK) == is_int, "vox_json_int on '%s': status %d", key, r.st);
        FUZZ_CHECK(r.st != VOX_OK || i == (int)v->valuedouble, "vox_json_int on '%s'", key);

        r.st = VOX_OK;
        double d = vox_json_number(&r, obj, where, key, (double)VOX_JSON_REQUIRED);
        FUZZ_CHECK((r.st == VOX_OK) == (cJSON_IsNumber(v) != 0), "vox_json_number on '%s'", key);
        FUZZ_CHECK(r.st != VOX_OK || d == v->valuedouble, "vox_json_number on '%s'", key);

        r.st = VOX_OK;
        const char *s = vox_json_string(&r, obj, where, key, NULL);
        FUZZ_CHECK((r.st == VOX_OK) == (cJSON_IsString(v) || cJSON_IsNull(v)),
                   "vox_json_string on '%s'", key);
        FUZZ_CHECK(!cJSON_IsString(v) || s == v->valuestring, "vox_json_string on '%s'", key);

        r.st = VOX_OK;
        const cJSON *o = vox_json_object(&r, obj, where, key, 1);
        FUZZ_CHECK((o != NULL) == (cJSON_IsObject(v) != 0), "vox_json_object on '%s'", key);
        if (r.st != VOX_OK)
            FUZZ_CHECK(strstr(err.msg, path) == err.msg, "the message does not start with the "
                       "file: %s", err.msg);
        if (o) check_json_readers(o, key, path, depth + 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_write_file(VOX_MANIFEST_FILE, data, size);
    char file[1024];
    snprintf(file, sizeof file, "%s", path);
    check_manifest(fuzz_temp_dir(), file);

    cJSON *root = NULL;
    vox_error err = {0};
    vox_status s = vox_json_load(file, 1 << 20, &root, &err);
    if (s != VOX_OK) {
        FUZZ_CHECK(root == NULL && strstr(err.msg, file) != NULL, "vox_json_load: %s", err.msg);
        return 0;
    }
    if (cJSON_IsObject(root)) check_json_readers(root, "", file, 0);
    cJSON_Delete(root);
    return 0;
}
