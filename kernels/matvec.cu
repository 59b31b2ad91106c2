// The bf16 instantiation of the decode-shaped projections (matvec.cuh) and their C entries;
// F8_E4M3 weights go to fp8_matvec.cu's instantiation.
#include "matvec.cuh"

extern "C" {

int vox_k_matvec_variant_count(void) { return kNumConfigs; }
const char *vox_k_matvec_variant_name(int variant) {
    return variant >= 0 && variant < kNumConfigs ? kConfigs[variant].name : "auto";
}

/* variant < 0: the configuration the launcher picks (VOX_MATVEC_VARIANT=i in the environment
 * picks i instead, for comparisons); else that one. 0 when the arguments are not taken. */
int vox_k_matvec_variant(int variant, const vox_k_matvec_args *a, cudaStream_t stream) {
    return a->w_scale ? vox_k_fp8_matvec_variant(variant, a, stream)
                      : launch_variant<false>(variant, a, stream);
}

int vox_k_matvec(const vox_k_matvec_args *a, cudaStream_t stream) {
    return vox_k_matvec_variant(-1, a, stream);
}

} // extern "C"
