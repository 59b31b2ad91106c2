// The FP8 instantiation of the decode-shaped projections (matvec.cuh): F8_E4M3 weights with
// row scales, converted in registers, the input rows quantized by the scheme in the prologue.
#include "matvec.cuh"

extern "C" int vox_k_fp8_matvec_variant(int variant, const vox_k_matvec_args *a,
                                        cudaStream_t stream) {
    return launch_variant<true>(variant, a, stream);
}
