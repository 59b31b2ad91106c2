/* safetensors: the validated reader (mmap) and the writer (temp file + rename).
 *
 * Reading happens in three passes over the header, so that no tensor is handed out before the
 * whole file is known to be consistent:
 *   1. bytes: the header length, UTF-8, and a lexical scan for what cJSON would accept silently
 *      (control bytes, a byte-order mark, "\u0000" inside a name);
 *   2. structure: cJSON parses a private NUL-terminated copy of the header; each entry is checked
 *      (dtype, shape, data_offsets, sizes with overflow checks);
 *   3. layout: names sorted for bsearch (duplicates show up as neighbours), entries sorted by
 *      offset (the ranges must tile the data exactly), then numbers re-read lexically (cJSON reads
 *      "3.0" and "1e2" as integers; the reference crate does not).
 * The data itself is never read here: it stays in the page cache until a caller touches it. */
#include "format/safetensors.h"
#include "common/file_out.h"
#include "common/read_all.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The reference crate's limit: bounds the JSON a hostile file can make us parse. */
#define ST_MAX_HEADER 100000000ull
/* cJSON reads numbers as doubles, exact only below 2^53; larger values are rejected rather than
 * rounded (no real shape or offset comes near: 2^53 bytes is 9 PB). */
#define ST_MAX_EXACT 9007199254740992.0

struct vox_safetensors {
    char *path;
    int fd; /* open while st is: see vox_st_fd */
    void *map;
    size_t map_size;
    vox_st_tensor *tensors; /* file order: by data offset */
    size_t n_tensors;
    const vox_st_tensor **by_name; /* sorted by name, for vox_st_find */
    char **meta;                   /* key, value, key, value, ...; sorted by key */
    size_t n_meta;
};

/* ---- helpers shared by the reader and the writer -------------------------------------------- */

/* Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF), as Rust's
 * str::from_utf8. Returns the length of the valid prefix: len when all of it is valid. */
static size_t utf8_valid_prefix(const unsigned char *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        size_t n;
        unsigned min, cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            n = 1, min = 0x80, cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            n = 2, min = 0x800, cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            n = 3, min = 0x10000, cp = c & 0x07;
        } else {
            return i;
        }
        if (len - i <= n) return i;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return i;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
        i += n + 1;
    }
    return len;
}

/* Element count and byte size of a shape, with overflow checks. Returns 0, or what overflowed. */
static const char *shape_size(vox_dtype dtype, int ndim, const int64_t *shape, size_t *n_elements,
                              size_t *nbytes) {
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (uint64_t)shape[i] > SIZE_MAX) return "a dimension is out of range";
        if (__builtin_mul_overflow(n, (size_t)shape[i], &n)) return "the element count overflows";
    }
    *n_elements = n;
    if (__builtin_mul_overflow(n, vox_dtype_size(dtype), nbytes)) return "the byte size overflows";
    return NULL;
}

/* ---- reader -------------------------------------------------------------------------------- */

/* An entry of the header while it is checked; t.data is filled in last. */
typedef struct {
    vox_st_tensor t;
    uint64_t begin, end;
    size_t json_index; /* tie-break for equal offsets (zero-size tensors): keep JSON order */
} st_entry;

static vox_status tensor_fail(vox_error *err, const char *path, const char *name, const char *fmt,
                              ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static vox_status tensor_fail(vox_error *err, const char *path, const char *name, const char *fmt,
                              ...) {
    char problem[VOX_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    return vox_fail(err, VOX_ERR_FORMAT, "%s: tensor '%s': %s", path, name, problem);
}

/* Reads a JSON number that must be a non-negative integer. Returns NULL, or what is wrong. */
static const char *json_uint(const cJSON *v, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return "is not a number";
    double d = v->valuedouble;
    if (d < 0) return "is negative";
    if (!(d < ST_MAX_EXACT)) return "is too large (the limit is 2^53)";
    if ((double)(uint64_t)d != d) return "is not an integer";
    *out = (uint64_t)d;
    return NULL;
}

static const char *json_type_name(const cJSON *v) {
    if (cJSON_IsObject(v)) return "an object";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsNull(v)) return "null";
    return "an invalid value";
}

/* Pass 1, lexical: JSON forbids raw control bytes anywhere and non-ASCII outside strings, but
 * cJSON skips any byte <= 0x20 as whitespace and a leading byte-order mark. A "\u0000" escape
 * would cut a C string short (two names could then collide unseen), so it is refused too. */
static vox_status scan_bytes(const char *path, const unsigned char *h, size_t n, vox_error *err) {
    int in_string = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned c = h[i];
        if (c < 0x20 && (in_string || (c != '\t' && c != '\n' && c != '\r')))
            return vox_fail(err, VOX_ERR_FORMAT,
                            "%s: header has a control byte 0x%02x at byte %zu", path, c, i);
        if (!in_string && c >= 0x80)
            return vox_fail(err, VOX_ERR_FORMAT,
                            "%s: header has a non-ASCII byte outside strings at byte %zu", path,
                            i);
        if (c == '"') {
            in_string = !in_string;
        } else if (in_string && c == '\\' && i + 1 < n) {
            if (h[i + 1] == 'u' && i + 5 < n && memcmp(h + i + 2, "0000", 4) == 0)
                return vox_fail(err, VOX_ERR_FORMAT,
                                "%s: header has an escaped NUL (\\u0000) at byte %zu", path, i);
            i++; /* the escaped character cannot end the string */
        }
    }
    return VOX_OK;
}

/* Pass 3, lexical: every number must be written as a plain integer ("12", not "12.0", "1.2e1",
 * "-0" or "012"), as the reference crate reads them into u64/usize. */
static vox_status scan_numbers(const char *path, const char *h, size_t n, vox_error *err) {
    int in_string = 0;
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        if (in_string) {
            if (c == '\\') i++;
            else if (c == '"') in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t j = i, plain = 1;
            while (j < n && h[j] && strchr("0123456789+-.eE", h[j])) {
                if (h[j] < '0' || h[j] > '9') plain = 0;
                j++;
            }
            if (h[i] == '0' && j - i > 1) plain = 0;
            if (!plain)
                return vox_fail(err, VOX_ERR_FORMAT,
                                "%s: header number '%.*s' is not a plain non-negative integer",
                                path, (int)(j - i > 40 ? 40 : j - i), h + i);
            i = j - 1;
        }
    }
    return VOX_OK;
}

static vox_status parse_metadata(vox_safetensors *st, const cJSON *m, vox_error *err) {
    if (!cJSON_IsObject(m))
        return vox_fail(err, VOX_ERR_FORMAT, "%s: __metadata__ is %s, not an object", st->path,
                        json_type_name(m));
    size_t n = (size_t)cJSON_GetArraySize(m);
    st->meta = calloc(2 * n + 1, sizeof *st->meta);
    if (!st->meta) return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", st->path);
    for (const cJSON *e = m->child; e; e = e->next) {
        if (!cJSON_IsString(e))
            return vox_fail(err, VOX_ERR_FORMAT, "%s: __metadata__ '%s' is %s, not a string",
                            st->path, e->string, json_type_name(e));
        char *k = strdup(e->string), *v = strdup(e->valuestring);
        st->meta[2 * st->n_meta] = k;
        st->meta[2 * st->n_meta + 1] = v;
        st->n_meta++;
        if (!k || !v) return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", st->path);
    }
    return VOX_OK;
}

static int cmp_meta(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Pass 2 for one entry: everything that can be said about a tensor on its own. */
static vox_status parse_entry(const char *path, const cJSON *e, size_t data_size, st_entry *out,
                              vox_error *err) {
    const char *name = e->string;
    if (name[0] == '\0')
        return vox_fail(err, VOX_ERR_FORMAT, "%s: a tensor has an empty name", path);
    if (!cJSON_IsObject(e))
        return tensor_fail(err, path, name, "entry is %s, not an object", json_type_name(e));

    const cJSON *dtype = NULL, *shape = NULL, *offsets = NULL;
    for (const cJSON *f = e->child; f; f = f->next) {
        const cJSON **slot = strcmp(f->string, "dtype") == 0          ? &dtype
                             : strcmp(f->string, "shape") == 0        ? &shape
                             : strcmp(f->string, "data_offsets") == 0 ? &offsets
                                                                      : NULL;
        if (!slot) return tensor_fail(err, path, name, "unknown field '%s'", f->string);
        if (*slot) return tensor_fail(err, path, name, "field '%s' appears twice", f->string);
        *slot = f;
    }
    if (!dtype || !shape || !offsets)
        return tensor_fail(err, path, name, "missing field '%s'",
                           !dtype ? "dtype" : !shape ? "shape" : "data_offsets");

    if (!cJSON_IsString(dtype))
        return tensor_fail(err, path, name, "dtype is %s, not a string", json_type_name(dtype));
    if (!vox_dtype_from_name(dtype->valuestring, &out->t.dtype))
        return tensor_fail(err, path, name, "unknown dtype '%s'", dtype->valuestring);

    if (!cJSON_IsArray(shape))
        return tensor_fail(err, path, name, "shape is %s, not an array", json_type_name(shape));
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > VOX_ST_MAX_DIMS)
        return tensor_fail(err, path, name, "shape has %d dimensions; at most %d are supported",
                           ndim, VOX_ST_MAX_DIMS);
    out->t.ndim = ndim;
    int i = 0;
    for (const cJSON *d = shape->child; d; d = d->next, i++) {
        uint64_t v = 0;
        const char *problem = json_uint(d, &v);
        if (problem) {
            if (cJSON_IsNumber(d))
                return tensor_fail(err, path, name, "shape[%d] = %.17g %s", i, d->valuedouble,
                                   problem);
            return tensor_fail(err, path, name, "shape[%d] %s", i, problem);
        }
        out->t.shape[i] = (int64_t)v;
    }

    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2)
        return tensor_fail(err, path, name, "data_offsets must be an array of two integers");
    uint64_t be[2] = {0, 0};
    i = 0;
    for (const cJSON *d = offsets->child; d; d = d->next, i++) {
        const char *problem = json_uint(d, &be[i]);
        if (problem) {
            if (cJSON_IsNumber(d))
                return tensor_fail(err, path, name, "data_offsets[%d] = %.17g %s", i,
                                   d->valuedouble, problem);
            return tensor_fail(err, path, name, "data_offsets[%d] %s", i, problem);
        }
    }
    out->begin = be[0];
    out->end = be[1];

    char shape_text[VOX_ST_MAX_DIMS * 21 + 3] = "[", *p = shape_text + 1;
    for (int k = 0; k < ndim; k++)
        p += sprintf(p, "%s%lld", k ? ", " : "", (long long)out->t.shape[k]);
    strcpy(p, "]");
    const char *dname = vox_dtype_name(out->t.dtype);

    const char *overflow =
        shape_size(out->t.dtype, ndim, out->t.shape, &out->t.n_elements, &out->t.nbytes);
    if (overflow) return tensor_fail(err, path, name, "%s %s: %s", dname, shape_text, overflow);
    if (out->begin > out->end)
        return tensor_fail(err, path, name, "data_offsets [%llu, %llu]: begin is after end",
                           (unsigned long long)out->begin, (unsigned long long)out->end);
    if (out->end - out->begin != out->t.nbytes)
        return tensor_fail(err, path, name,
                           "data_offsets [%llu, %llu] hold %llu bytes but %s %s needs %zu",
                           (unsigned long long)out->begin, (unsigned long long)out->end,
                           (unsigned long long)(out->end - out->begin), dname, shape_text,
                           out->t.nbytes);
    if (out->end > data_size)
        return tensor_fail(err, path, name,
                           "data_offsets [%llu, %llu] go past the end of the data (%zu bytes)",
                           (unsigned long long)out->begin, (unsigned long long)out->end,
                           data_size);
    out->t.name = strdup(name);
    if (!out->t.name) return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path);
    return VOX_OK;
}

static int cmp_by_name(const void *a, const void *b) {
    const vox_st_tensor *x = *(const vox_st_tensor *const *)a;
    const vox_st_tensor *y = *(const vox_st_tensor *const *)b;
    return strcmp(x->name, y->name);
}

static int cmp_by_offset(const void *a, const void *b) {
    const st_entry *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x->json_index < y->json_index ? -1 : x->json_index > y->json_index;
}

/* Checks the mapped file and builds st's tables. On failure st holds what was built so far,
 * which vox_st_close frees. */
static vox_status parse(vox_safetensors *st, vox_error *err) {
    const char *path = st->path;
    const unsigned char *base = st->map;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | base[i];
    if (n > ST_MAX_HEADER)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "%s: header length %llu is over the limit of %llu bytes", path,
                        (unsigned long long)n, ST_MAX_HEADER);
    if (n > st->map_size - 8)
        return vox_fail(err, VOX_ERR_FORMAT,
                        "%s: header length %llu goes past the end of the file (%zu bytes)", path,
                        (unsigned long long)n, st->map_size);
    const unsigned char *h = base + 8;
    size_t data_size = st->map_size - 8 - (size_t)n;

    size_t valid = utf8_valid_prefix(h, (size_t)n);
    if (valid != n)
        return vox_fail(err, VOX_ERR_FORMAT, "%s: header is not valid UTF-8 (at byte %zu)",
                        path, valid);
    vox_status s = scan_bytes(path, h, (size_t)n, err);
    if (s) return s;

    /* A private NUL-terminated copy: cJSON then cannot read past the header, whatever it does. */
    char *text = malloc((size_t)n + 1);
    if (!text) return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory for the header", path);
    memcpy(text, h, (size_t)n);
    text[n] = '\0';
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, (size_t)n, &end, 0);
    st_entry *entries = NULL;
    if (!root) {
        s = vox_fail(err, VOX_ERR_FORMAT, "%s: header is not valid JSON (error near byte %zu)",
                     path, end ? (size_t)(end - text) : (size_t)0);
        goto done;
    }
    while (end < text + n && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
    if (end != text + n) {
        s = vox_fail(err, VOX_ERR_FORMAT, "%s: header has data after the JSON value (at byte %zu)",
                     path, (size_t)(end - text));
        goto done;
    }
    if (!cJSON_IsObject(root)) {
        s = vox_fail(err, VOX_ERR_FORMAT, "%s: header is %s, not a JSON object", path,
                     json_type_name(root));
        goto done;
    }

    size_t count = 0;
    const cJSON *meta = NULL;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (strcmp(e->string, "__metadata__") != 0) {
            count++;
        } else if (meta) {
            s = vox_fail(err, VOX_ERR_FORMAT, "%s: __metadata__ appears twice", path);
            goto done;
        } else {
            meta = e;
        }
    }
    if (meta) {
        s = parse_metadata(st, meta, err);
        if (s) goto done;
        qsort(st->meta, st->n_meta, 2 * sizeof *st->meta, cmp_meta);
        for (size_t i = 1; i < st->n_meta; i++) {
            if (strcmp(st->meta[2 * i - 2], st->meta[2 * i]) == 0) {
                s = vox_fail(err, VOX_ERR_FORMAT, "%s: __metadata__ '%s' appears twice", path,
                             st->meta[2 * i]);
                goto done;
            }
        }
    }

    entries = calloc(count ? count : 1, sizeof *entries);
    st->tensors = calloc(count ? count : 1, sizeof *st->tensors);
    st->by_name = calloc(count ? count : 1, sizeof *st->by_name);
    if (!entries || !st->tensors || !st->by_name) {
        s = vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory for %zu tensors", path, count);
        goto done;
    }
    size_t k = 0;
    for (const cJSON *e = root->child; e; e = e->next) {
        if (e == meta) continue;
        entries[k].json_index = k;
        s = parse_entry(path, e, data_size, &entries[k], err);
        /* the names parsed so far move to st now, so that vox_st_close frees them */
        st->tensors[k] = entries[k].t;
        st->n_tensors = ++k;
        if (s) goto done;
    }

    for (size_t i = 0; i < count; i++) st->by_name[i] = &st->tensors[i];
    qsort(st->by_name, count, sizeof *st->by_name, cmp_by_name);
    for (size_t i = 1; i < count; i++) {
        if (strcmp(st->by_name[i - 1]->name, st->by_name[i]->name) == 0) {
            s = vox_fail(err, VOX_ERR_FORMAT, "%s: tensor '%s' appears twice", path,
                         st->by_name[i]->name);
            goto done;
        }
    }

    qsort(entries, count, sizeof *entries, cmp_by_offset);
    uint64_t expect = 0;
    for (size_t i = 0; i < count; i++) {
        const st_entry *x = &entries[i];
        if (x->begin != expect) {
            if (x->begin > expect)
                s = tensor_fail(err, path, x->t.name,
                                "data_offsets [%llu, %llu] leave a hole: bytes [%llu, %llu) of "
                                "the data belong to no tensor",
                                (unsigned long long)x->begin, (unsigned long long)x->end,
                                (unsigned long long)expect, (unsigned long long)x->begin);
            else
                s = tensor_fail(err, path, x->t.name,
                                "data_offsets [%llu, %llu] overlap the tensor before, which ends "
                                "at %llu",
                                (unsigned long long)x->begin, (unsigned long long)x->end,
                                (unsigned long long)expect);
            goto done;
        }
        expect = x->end;
    }
    if (expect != data_size) {
        s = vox_fail(err, VOX_ERR_FORMAT,
                     "%s: %llu trailing bytes after the last tensor (the tensors hold %llu bytes "
                     "of data, the file has %zu)",
                     path, (unsigned long long)(data_size - expect), (unsigned long long)expect,
                     data_size);
        goto done;
    }
    s = scan_numbers(path, text, (size_t)n, err);
    if (s) goto done;

    /* All checks passed: the tensor table in file order, pointing into the mapping. */
    for (size_t i = 0; i < count; i++) {
        st->tensors[i] = entries[i].t;
        st->tensors[i].data = h + n + entries[i].begin;
    }
    for (size_t i = 0; i < count; i++) st->by_name[i] = &st->tensors[i];
    qsort(st->by_name, count, sizeof *st->by_name, cmp_by_name);

done:
    free(entries);
    cJSON_Delete(root);
    free(text);
    return s;
}

vox_status vox_st_open(const char *path, vox_safetensors **out, vox_error *err) {
    *out = NULL;
    vox_safetensors *st = calloc(1, sizeof *st);
    if (!st || !(st->path = strdup(path))) {
        free(st);
        return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory", path);
    }
    size_t size = 0;
    vox_status s = vox_open_regular(path, &st->fd, &size, err); /* a FIFO: refused, no wait */
    if (s == VOX_OK && size < 8) {
        s = vox_fail(err, VOX_ERR_FORMAT,
                     "%s: file has %zu bytes, too short for the 8-byte header length", path, size);
    } else if (s == VOX_OK) {
        void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, st->fd, 0);
        if (map == MAP_FAILED) {
            s = vox_fail(err, VOX_ERR_IO, "%s: cannot map: %s", path, strerror(errno));
        } else {
            st->map = map;
            st->map_size = size;
        }
    }
    if (s == VOX_OK) s = parse(st, err);
    if (s != VOX_OK) {
        vox_st_close(st);
        return s;
    }
    *out = st;
    return VOX_OK;
}

void vox_st_close(vox_safetensors *st) {
    if (!st) return;
    if (st->map) munmap(st->map, st->map_size);
    if (st->fd >= 0) close(st->fd);
    for (size_t i = 0; i < st->n_tensors; i++) free(st->tensors[i].name);
    for (size_t i = 0; i < 2 * st->n_meta; i++) free(st->meta[i]);
    free(st->meta);
    free(st->tensors);
    free(st->by_name);
    free(st->path);
    free(st);
}

size_t vox_st_count(const vox_safetensors *st) { return st->n_tensors; }
int vox_st_fd(const vox_safetensors *st) { return st->fd; }
const void *vox_st_base(const vox_safetensors *st) { return st->map; }
size_t vox_st_size(const vox_safetensors *st) { return st->map_size; }

const vox_st_tensor *vox_st_at(const vox_safetensors *st, size_t i) {
    return i < st->n_tensors ? &st->tensors[i] : NULL;
}

const vox_st_tensor *vox_st_find(const vox_safetensors *st, const char *name) {
    vox_st_tensor key = {.name = (char *)name};
    const vox_st_tensor *pkey = &key;
    const vox_st_tensor **hit =
        bsearch(&pkey, st->by_name, st->n_tensors, sizeof *st->by_name, cmp_by_name);
    return hit ? *hit : NULL;
}

const char *vox_st_path(const vox_safetensors *st) { return st->path; }

const char *vox_st_metadata(const vox_safetensors *st, const char *key) {
    if (st->n_meta == 0) return NULL; /* st->meta is NULL: not a valid bsearch base */
    const char *k = key;
    char **hit = bsearch(&k, st->meta, st->n_meta, 2 * sizeof *st->meta, cmp_meta);
    return hit ? hit[1] : NULL;
}

/* ---- writer -------------------------------------------------------------------------------- */

typedef struct {
    char *name;
    vox_dtype dtype;
    int ndim;
    int64_t shape[VOX_ST_MAX_DIMS];
    size_t nbytes;
    const void *data;
} wr_tensor;

struct vox_st_writer {
    wr_tensor *t;
    size_t n, cap;
    char **meta; /* key, value, ... in insertion order */
    size_t n_meta, cap_meta;
};

vox_st_writer *vox_st_writer_new(void) { return calloc(1, sizeof(vox_st_writer)); }

void vox_st_writer_free(vox_st_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) free(w->t[i].name);
    for (size_t i = 0; i < 2 * w->n_meta; i++) free(w->meta[i]);
    free(w->t);
    free(w->meta);
    free(w);
}

/* p (of *cap elements of size elem) grown to hold need elements, or NULL (p is then kept). */
static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return p;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need) c *= 2;
    void *q = realloc(p, c * elem);
    if (q) *cap = c;
    return q;
}

static int name_is_utf8(const char *s) {
    size_t len = strlen(s);
    return utf8_valid_prefix((const unsigned char *)s, len) == len;
}

vox_status vox_st_writer_add(vox_st_writer *w, const char *name, vox_dtype dtype, int ndim,
                             const int64_t *shape, const void *data, vox_error *err) {
    if (!name || !name[0])
        return vox_fail(err, VOX_ERR_INVALID_ARG, "safetensors writer: empty tensor name");
    if (!name_is_utf8(name))
        return vox_fail(err, VOX_ERR_INVALID_ARG,
                        "safetensors writer: tensor name is not valid UTF-8");
    if (strcmp(name, "__metadata__") == 0)
        return vox_fail(err, VOX_ERR_INVALID_ARG,
                        "safetensors writer: '__metadata__' is reserved, not a tensor name");
    if ((unsigned)dtype >= VOX_DTYPE_COUNT)
        return vox_fail(err, VOX_ERR_INVALID_ARG, "safetensors writer: tensor '%s': bad dtype %d",
                        name, (int)dtype);
    if (ndim < 0 || ndim > VOX_ST_MAX_DIMS || (ndim > 0 && !shape))
        return vox_fail(err, VOX_ERR_INVALID_ARG,
                        "safetensors writer: tensor '%s': %d dimensions (0 to %d allowed)", name,
                        ndim, VOX_ST_MAX_DIMS);
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0 || (double)shape[i] >= ST_MAX_EXACT)
            return vox_fail(err, VOX_ERR_INVALID_ARG,
                            "safetensors writer: tensor '%s': shape[%d] = %lld is out of range",
                            name, i, (long long)shape[i]);
    size_t n_elements, nbytes;
    const char *overflow = shape_size(dtype, ndim, shape, &n_elements, &nbytes);
    if (overflow)
        return vox_fail(err, VOX_ERR_INVALID_ARG, "safetensors writer: tensor '%s': %s", name,
                        overflow);
    if (nbytes && !data)
        return vox_fail(err, VOX_ERR_INVALID_ARG, "safetensors writer: tensor '%s': no data",
                        name);
    /* A linear scan: a blob has hundreds of tensors, not millions. */
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->t[i].name, name) == 0)
            return vox_fail(err, VOX_ERR_INVALID_ARG,
                            "safetensors writer: tensor '%s' added twice", name);
    wr_tensor *grown = grow(w->t, &w->cap, w->n + 1, sizeof *w->t);
    if (!grown) return vox_fail(err, VOX_ERR_NOMEM, "safetensors writer: out of memory");
    w->t = grown;
    wr_tensor *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    if (!(t->name = strdup(name)))
        return vox_fail(err, VOX_ERR_NOMEM, "safetensors writer: out of memory");
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->nbytes = nbytes;
    t->data = data;
    w->n++;
    return VOX_OK;
}

vox_status vox_st_writer_set_metadata(vox_st_writer *w, const char *key, const char *value,
                                      vox_error *err) {
    if (!key || !value || !name_is_utf8(key) || !name_is_utf8(value))
        return vox_fail(err, VOX_ERR_INVALID_ARG,
                        "safetensors writer: metadata key and value must be UTF-8 strings");
    char *v = strdup(value);
    if (!v) return vox_fail(err, VOX_ERR_NOMEM, "safetensors writer: out of memory");
    for (size_t i = 0; i < w->n_meta; i++) {
        if (strcmp(w->meta[2 * i], key) == 0) {
            free(w->meta[2 * i + 1]);
            w->meta[2 * i + 1] = v;
            return VOX_OK;
        }
    }
    char *k = strdup(key);
    char **grown = k ? grow(w->meta, &w->cap_meta, 2 * w->n_meta + 2, sizeof *w->meta) : NULL;
    if (!grown) {
        free(k);
        free(v);
        return vox_fail(err, VOX_ERR_NOMEM, "safetensors writer: out of memory");
    }
    w->meta = grown;
    w->meta[2 * w->n_meta] = k;
    w->meta[2 * w->n_meta + 1] = v;
    w->n_meta++;
    return VOX_OK;
}

/* A growing string; a failed allocation sticks, and is checked once at the end. */
typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    char *grown = grow(b->p, &b->cap, b->len + n + 1, 1);
    if (!grown) {
        b->oom = 1;
        return;
    }
    b->p = grown;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_printf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void sb_printf(sbuf *b, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    VOX_ASSERT(n >= 0 && (size_t)n < sizeof tmp); /* only used for numbers */
    sb_put(b, tmp, (size_t)n);
}

/* A JSON string: UTF-8 passes through; quote, backslash and control bytes are escaped. */
static void sb_json_string(sbuf *b, const char *s) {
    sb_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_put(b, e, 2);
        } else if (c < 0x20) {
            sb_printf(b, "\\u%04x", c);
        } else {
            sb_put(b, (const char *)&c, 1);
        }
    }
    sb_put(b, "\"", 1);
}

/* Orders the tensors by element size, largest first, keeping the order of addition among
 * equals. With the data starting at a multiple of 8 and no gaps allowed between tensors, this
 * is what makes every tensor aligned to its element size, so readers can use it in place. */
static void order_for_alignment(vox_st_writer *w) {
    for (size_t i = 1; i < w->n; i++) {
        wr_tensor t = w->t[i];
        size_t j = i;
        while (j > 0 && vox_dtype_size(w->t[j - 1].dtype) < vox_dtype_size(t.dtype)) {
            w->t[j] = w->t[j - 1];
            j--;
        }
        w->t[j] = t;
    }
}

vox_status vox_st_writer_save(vox_st_writer *w, const char *path, vox_error *err) {
    return vox_st_writer_save_stoppable(w, path, NULL, NULL, err);
}

/* Appends a tensor's bytes in pieces, asking stop before each. */
static vox_status write_stoppable(vox_file_out *f, const void *data, size_t n, bool (*stop)(void *),
                                  void *stop_arg, vox_error *err) {
    const size_t piece = (size_t)64 << 20;
    const char *p = data;
    vox_status st = VOX_OK;
    do {
        if (stop && stop(stop_arg)) {
            st = vox_fail(err, VOX_ERR_INTERRUPTED, "%s: interrupted", f->path);
            vox_file_out_abort(f);
            break;
        }
        size_t k = n < piece ? n : piece;
        if (k) st = vox_file_out_write(f, p, k, err);
        p += k;
        n -= k;
    } while (!st && n > 0);
    return st;
}

vox_status vox_st_writer_save_stoppable(vox_st_writer *w, const char *path, bool (*stop)(void *),
                                        void *stop_arg, vox_error *err) {
    order_for_alignment(w);
    sbuf h = {0};
    sb_put(&h, "{", 1);
    if (w->n_meta) {
        sb_put(&h, "\"__metadata__\":{", 16);
        for (size_t i = 0; i < w->n_meta; i++) {
            if (i) sb_put(&h, ",", 1);
            sb_json_string(&h, w->meta[2 * i]);
            sb_put(&h, ":", 1);
            sb_json_string(&h, w->meta[2 * i + 1]);
        }
        sb_put(&h, "}", 1);
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < w->n; i++) {
        const wr_tensor *t = &w->t[i];
        if (i || w->n_meta) sb_put(&h, ",", 1);
        sb_json_string(&h, t->name);
        sb_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", vox_dtype_name(t->dtype));
        for (int d = 0; d < t->ndim; d++)
            sb_printf(&h, "%s%lld", d ? "," : "", (long long)t->shape[d]);
        uint64_t end;
        if (__builtin_add_overflow(offset, (uint64_t)t->nbytes, &end) ||
            (double)end >= ST_MAX_EXACT) {
            free(h.p);
            return vox_fail(err, VOX_ERR_INVALID_ARG, "%s: the tensors' total size overflows",
                            path);
        }
        sb_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)offset,
                  (unsigned long long)end);
        offset = end;
    }
    sb_put(&h, "}", 1);
    while (!h.oom && (8 + h.len) % 8 != 0) sb_put(&h, " ", 1); /* data starts 8-byte aligned */
    if (h.oom) {
        free(h.p);
        return vox_fail(err, VOX_ERR_NOMEM, "%s: out of memory for the header", path);
    }

    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
    vox_file_out f;
    vox_status s = vox_file_out_open(&f, path, err);
    if (!s) s = vox_file_out_write(&f, len8, 8, err);
    if (!s) s = vox_file_out_write(&f, h.p, h.len, err);
    for (size_t i = 0; !s && i < w->n; i++)
        s = write_stoppable(&f, w->t[i].data, w->t[i].nbytes, stop, stop_arg, err);
    if (!s) s = vox_file_out_commit(&f, err);
    free(h.p);
    return s;
}
