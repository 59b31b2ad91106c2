/* A projection with what surrounds it (vox_projection): fused where the backend takes it,
 * otherwise the same operations one by one. Shared by the encoder and the decoder. */
#include "pipeline/pipeline.h"

void vox_project(vox_backend *be, const vox_projection *p, vox_tensor *h, vox_tensor *out) {
    if (be->projection) {
        vox_projection with_scratch = *p;
        with_scratch.h = h;
        with_scratch.tmp = out;
        if (be->projection(be, &with_scratch)) return;
    }
    VOX_ASSERT(!p->bias || p->out == VOX_PROJ_STORE || p->out == VOX_PROJ_ADD);
    const vox_tensor *in = p->x;
    if (p->norm_w) {
        be->rms_norm(be, h, p->x, p->norm_w, p->eps);
        in = h;
    }
    switch (p->out) {
    case VOX_PROJ_STORE: be->matmul(be, p->y, in, p->w, p->bias); break;
    case VOX_PROJ_ADD:
        be->matmul(be, out, in, p->w, p->bias);
        be->add(be, p->y, p->y, out);
        break;
    case VOX_PROJ_SWIGLU:
        be->matmul(be, out, in, p->w, NULL);
        be->swiglu(be, p->y, out);
        break;
    case VOX_PROJ_ROPE_CACHE:
        be->matmul(be, out, in, p->w, NULL);
        be->rope_cache(be, p->y, p->k_pool, p->v_pool, out, p->n_heads, p->n_kv_heads, p->head_dim,
                       p->theta);
        break;
    }
}
