/* Backend selection and the tensor descriptor helpers shared by all backends. */
#include "backend/backend.h"

#include <stdlib.h>
#include <string.h>

size_t vox_tensor_numel(const vox_tensor *t) {
    size_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
    return n;
}

size_t vox_tensor_nbytes(const vox_tensor *t) { return vox_tensor_numel(t) * vox_dtype_size(t->dtype); }

vox_tensor vox_tensor_rows(const vox_tensor *t, int64_t row0, int64_t n) {
    VOX_ASSERT(t->ndim >= 1 && row0 >= 0 && n >= 0 && row0 + n <= t->shape[0]);
    vox_tensor v = *t;
    size_t row_elems = vox_tensor_numel(t) / (t->shape[0] ? (size_t)t->shape[0] : 1);
    v.data = (char *)t->data + (size_t)row0 * row_elems * vox_dtype_size(t->dtype);
    if (t->scale) v.scale = t->scale + row0;
    v.shape[0] = n;
    return v;
}

vox_tensor vox_tensor_reshape2(const vox_tensor *t, int64_t rows, int64_t cols) {
    VOX_ASSERT((size_t)(rows * cols) == vox_tensor_numel(t));
    vox_tensor v = *t;
    v.ndim = 2;
    v.shape[0] = rows;
    v.shape[1] = cols;
    v.shape[2] = v.shape[3] = 0;
    return v;
}

vox_status vox_tensor_new(vox_backend *be, vox_tensor *t, vox_dtype dtype, int ndim,
                          const int64_t *shape, vox_error *err) {
    VOX_ASSERT(ndim >= 1 && ndim <= VOX_TENSOR_MAX_DIMS);
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    return be->alloc(be, t, err);
}

vox_status vox_tensor_new2(vox_backend *be, vox_tensor *t, vox_dtype dtype, int64_t rows,
                           int64_t cols, vox_error *err) {
    int64_t shape[2] = {rows, cols};
    return vox_tensor_new(be, t, dtype, 2, shape, err);
}

void vox_tensor_free(vox_backend *be, vox_tensor *t) {
    if (t && t->data) be->free(be, t);
    if (t) t->data = NULL;
}

void vox_tensors_free(vox_backend *be, vox_tensor *t, size_t n) {
    for (size_t i = 0; i < n; i++) vox_tensor_free(be, &t[i]);
}

bool vox_backend_cuda_available(void) {
#ifdef VOX_HAVE_CUDA
    extern bool vox_cuda_device_count_positive(void);
    return vox_cuda_device_count_positive();
#else
    return false;
#endif
}

int vox_backend_cuda_count(void) {
#ifdef VOX_HAVE_CUDA
    extern int vox_cuda_device_count(void);
    return vox_cuda_device_count();
#else
    return 0;
#endif
}

vox_status vox_backend_create(const char *device, vox_backend **out, vox_error *err) {
    *out = NULL;
    if (strcmp(device, "cpu") == 0) return vox_backend_cpu_create(out, err);
    if (strncmp(device, "cuda", 4) == 0) {
        int index = 0;
        if (device[4] == ':') {
            char *end;
            long v = strtol(device + 5, &end, 10);
            if (*end || end == device + 5 || v < 0 || v > 1024)
                return vox_fail(err, VOX_ERR_INVALID_ARG, "device '%s': expected cuda:N", device);
            index = (int)v;
        } else if (device[4]) {
            return vox_fail(err, VOX_ERR_INVALID_ARG, "unknown device '%s' (cpu, cuda, cuda:N)",
                            device);
        }
#ifdef VOX_HAVE_CUDA
        return vox_backend_cuda_create(index, out, err);
#else
        (void)index;
        return vox_fail(err, VOX_ERR_UNSUPPORTED,
                        "device '%s': this build has no CUDA backend (rebuild with the CUDA "
                        "Toolkit installed, or use --device cpu)", device);
#endif
    }
    return vox_fail(err, VOX_ERR_INVALID_ARG, "unknown device '%s' (cpu, cuda, cuda:N)", device);
}

void vox_backend_destroy(vox_backend *be) {
    if (be) be->destroy(be);
}
