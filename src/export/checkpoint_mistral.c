/* Mistral's consolidated layout (mistralai/Voxtral-Mini-3B-2507 as published for vLLM and
 * mistral-common):
 *   params.json                 the text model at the root (dim, n_layers, n_heads, n_kv_heads,
 *                               head_dim, hidden_dim, vocab_size, rope_theta, norm_eps,
 *                               max_seq_len) and multimodal.whisper_model_args: encoder_args
 *                               (dim, n_layers, n_heads, head_dim, hidden_dim,
 *                               audio_encoding_args.num_mel_bins, ...) and
 *                               downsample_args.downsample_factor
 *   consolidated.safetensors    every tensor (names below)
 *   tekken.json                 the tokenizer
 * Names and keys as read by vLLM (models/voxtral.py: VoxtralEncoderModel.mistral_remapping and
 * load_weights; transformers_utils/configs/mistral.py: _remap_mistral_audio_args) and by
 * transformers' convert_voxtral_weights_to_hf.py. The text decoder's wq/wk pair RoPE dims
 * interleaved, (2i, 2i+1): the exporter permutes their rows to the rotate-half pairing. The
 * Whisper encoder has no RoPE and is taken as stored (neither converter permutes it). The
 * sinusoidal positions are not stored. */
#include <stdio.h>
#include <string.h>

#include "export/checkpoint.h"

#define ENC "mm_whisper_embeddings.whisper_encoder."
#define ENC_LAYER ENC "transformer.layers.%d."

static const char *const mistral_names[VOX_T_COUNT] = {
    [VOX_T_CONV1_W] = ENC "conv_layers.0.weight",
    [VOX_T_CONV1_B] = ENC "conv_layers.0.bias",
    [VOX_T_CONV2_W] = ENC "conv_layers.1.weight",
    [VOX_T_CONV2_B] = ENC "conv_layers.1.bias",
    [VOX_T_POSITIONS] = NULL,
    [VOX_T_ENC_ATTN_NORM_W] = ENC_LAYER "attention_norm.weight",
    [VOX_T_ENC_ATTN_NORM_B] = ENC_LAYER "attention_norm.bias",
    [VOX_T_ENC_Q_W] = ENC_LAYER "attention.wq.weight",
    [VOX_T_ENC_Q_B] = ENC_LAYER "attention.wq.bias",
    [VOX_T_ENC_K_W] = ENC_LAYER "attention.wk.weight",
    [VOX_T_ENC_V_W] = ENC_LAYER "attention.wv.weight",
    [VOX_T_ENC_V_B] = ENC_LAYER "attention.wv.bias",
    [VOX_T_ENC_O_W] = ENC_LAYER "attention.wo.weight",
    [VOX_T_ENC_O_B] = ENC_LAYER "attention.wo.bias",
    [VOX_T_ENC_FFN_NORM_W] = ENC_LAYER "ffn_norm.weight",
    [VOX_T_ENC_FFN_NORM_B] = ENC_LAYER "ffn_norm.bias",
    [VOX_T_ENC_FC1_W] = ENC_LAYER "feed_forward.w1.weight",
    [VOX_T_ENC_FC1_B] = ENC_LAYER "feed_forward.w1.bias",
    [VOX_T_ENC_FC2_W] = ENC_LAYER "feed_forward.w2.weight",
    [VOX_T_ENC_FC2_B] = ENC_LAYER "feed_forward.w2.bias",
    [VOX_T_ENC_NORM_W] = ENC "transformer.norm.weight",
    [VOX_T_ENC_NORM_B] = ENC "transformer.norm.bias",
    [VOX_T_PROJ1_W] = "mm_whisper_embeddings.audio_language_projection.0.weight",
    [VOX_T_PROJ2_W] = "mm_whisper_embeddings.audio_language_projection.2.weight",
    [VOX_T_EMBEDDING] = "mm_whisper_embeddings.tok_embeddings.weight",
    [VOX_T_DEC_ATTN_NORM_W] = "layers.%d.attention_norm.weight",
    [VOX_T_DEC_Q_W] = "layers.%d.attention.wq.weight",
    [VOX_T_DEC_K_W] = "layers.%d.attention.wk.weight",
    [VOX_T_DEC_V_W] = "layers.%d.attention.wv.weight",
    [VOX_T_DEC_O_W] = "layers.%d.attention.wo.weight",
    [VOX_T_DEC_FFN_NORM_W] = "layers.%d.ffn_norm.weight",
    [VOX_T_DEC_GATE_W] = "layers.%d.feed_forward.w1.weight",
    [VOX_T_DEC_UP_W] = "layers.%d.feed_forward.w3.weight",
    [VOX_T_DEC_DOWN_W] = "layers.%d.feed_forward.w2.weight",
    [VOX_T_DEC_NORM_W] = "norm.weight",
    [VOX_T_LM_HEAD] = "output.weight",
};

#define PARAMS_MAX_BYTES (16u << 20)

/* An optional key that, when present, must hold the one value this exporter supports. */
static void expect_int(vox_json_reader *r, const cJSON *obj, const char *where, const char *key,
                       int want, const char *why) {
    int v = vox_json_int(r, obj, where, key, NULL, want);
    if (r->st == VOX_OK && v != want)
        vox_json_fail(r, VOX_ERR_UNSUPPORTED, "%s.%s is %d; %s", where, key, v, why);
}

/* A key whose value `bad` marks a variant this exporter does not support. */
static void reject_string(vox_json_reader *r, const cJSON *obj, const char *where,
                          const char *key, const char *bad) {
    const char *v = vox_json_string(r, obj, where, key, "");
    if (r->st == VOX_OK && strcmp(v, bad) == 0)
        vox_json_fail(r, VOX_ERR_UNSUPPORTED, "%s.%s is \"%s\": not supported", where, key, v);
}

static void parse_encoder_args(vox_json_reader *r, const cJSON *mm, vox_manifest *hp) {
    const char *w = "multimodal.whisper_model_args";
    const cJSON *wm = vox_json_object(r, mm, "multimodal", "whisper_model_args", 1);
    const cJSON *ea = vox_json_object(r, wm, w, "encoder_args", 1);
    const cJSON *ds = vox_json_object(r, wm, w, "downsample_args", 1);
    const char *ew = "multimodal.whisper_model_args.encoder_args";
    const char *aw = "multimodal.whisper_model_args.encoder_args.audio_encoding_args";
    const cJSON *aa = vox_json_object(r, ea, ew, "audio_encoding_args", 1);

    vox_encoder_config *e = &hp->encoder;
    e->d_model = vox_json_int(r, ea, ew, "dim", NULL, VOX_JSON_REQUIRED);
    e->layers = vox_json_int(r, ea, ew, "n_layers", NULL, VOX_JSON_REQUIRED);
    e->heads = vox_json_int(r, ea, ew, "n_heads", NULL, VOX_JSON_REQUIRED);
    e->head_dim = vox_json_int(r, ea, ew, "head_dim", NULL, e->heads > 0 ? e->d_model / e->heads : 0);
    e->ffn_dim = vox_json_int(r, ea, ew, "hidden_dim", NULL, VOX_JSON_REQUIRED);
    e->max_source_positions = vox_json_int(r, ea, ew, "max_source_positions", NULL, 1500);
    e->layer_norm_eps = vox_json_number(r, ea, ew, "norm_eps", 1e-5);
    e->num_mel_bins = vox_json_int(r, aa, aw, "num_mel_bins", NULL, VOX_JSON_REQUIRED);
    e->downsample_factor = vox_json_int(r, ds, "multimodal.whisper_model_args.downsample_args",
                                        "downsample_factor", NULL, VOX_JSON_REQUIRED);

    /* Voxtral Realtime's causal RoPE/SwiGLU/RMSNorm encoder shares this layout; refuse it. */
    expect_int(r, ea, ew, "n_kv_heads", e->heads,
               "the Whisper encoder has no grouped-query attention");
    if (r->st == VOX_OK && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ea, "causal")))
        vox_json_fail(r, VOX_ERR_UNSUPPORTED,
                      "%s.causal is true: a causal (Realtime) encoder is not supported", ew);
    reject_string(r, ea, ew, "pos_embed", "rope");
    reject_string(r, ea, ew, "norm_type", "rms_norm");
    reject_string(r, ea, ew, "ffn_type", "swiglu");
    /* The mel front end is fixed (spec section 1). */
    expect_int(r, aa, aw, "hop_length", 160, "the mel front end uses 160");
    expect_int(r, aa, aw, "window_size", 400, "the mel front end uses 400");
    hp->sample_rate = vox_json_int(r, aa, aw, "sampling_rate", NULL, 16000);
}

static vox_status read_params(vox_checkpoint *ck, vox_error *err) {
    cJSON *root = NULL;
    vox_status st = vox_json_load(ck->config_path, PARAMS_MAX_BYTES, &root, err);
    if (st != VOX_OK) return st;
    vox_json_reader r = {ck->config_path, err, VOX_OK};
    if (!cJSON_IsObject(root)) vox_json_fail(&r, VOX_ERR_FORMAT, "not a JSON object");

    vox_decoder_config *d = &ck->hp.decoder;
    d->hidden = vox_json_int(&r, root, "", "dim", NULL, VOX_JSON_REQUIRED);
    d->layers = vox_json_int(&r, root, "", "n_layers", NULL, VOX_JSON_REQUIRED);
    d->heads = vox_json_int(&r, root, "", "n_heads", NULL, VOX_JSON_REQUIRED);
    d->kv_heads = vox_json_int(&r, root, "", "n_kv_heads", NULL, d->heads);
    d->head_dim = vox_json_int(&r, root, "", "head_dim", NULL,
                               d->heads > 0 ? d->hidden / d->heads : 0);
    d->ffn_dim = vox_json_int(&r, root, "", "hidden_dim", NULL, VOX_JSON_REQUIRED);
    d->vocab_size = vox_json_int(&r, root, "", "vocab_size", NULL, VOX_JSON_REQUIRED);
    d->rope_theta = vox_json_number(&r, root, "", "rope_theta", VOX_JSON_REQUIRED);
    d->rms_norm_eps = vox_json_number(&r, root, "", "norm_eps", VOX_JSON_REQUIRED);
    /* Absent from some params.json; transformers' converter then uses 131072, which is also what
     * the published config.json says. */
    d->max_position_embeddings =
        vox_json_int(&r, root, "", "max_seq_len", "max_position_embeddings", 131072);
    if (r.st == VOX_OK && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "use_biases")))
        vox_json_fail(&r, VOX_ERR_UNSUPPORTED, "use_biases is true: the decoder has no biases");
    if (r.st == VOX_OK && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "tied_embeddings")))
        vox_json_fail(&r, VOX_ERR_UNSUPPORTED, "tied_embeddings is true: not supported");
    if (r.st == VOX_OK && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(root, "sliding_window")))
        vox_json_fail(&r, VOX_ERR_UNSUPPORTED, "sliding_window is set: not supported");
    if (r.st == VOX_OK && vox_json_object(&r, root, "", "yarn", 0))
        vox_json_fail(&r, VOX_ERR_UNSUPPORTED, "yarn: scaled RoPE is not supported");

    parse_encoder_args(&r, vox_json_object(&r, root, "", "multimodal", 1), &ck->hp);
    ck->hp.encoder.projector_dim = d->hidden;
    cJSON_Delete(root);
    return r.st;
}

vox_status vox_checkpoint_open_mistral(const char *dir, vox_checkpoint *ck, vox_error *err) {
    memset(ck, 0, sizeof *ck);
    ck->layout = "mistral";
    ck->names = mistral_names;
    ck->interleaved_rope = 1;
    snprintf(ck->dir, sizeof ck->dir, "%s", dir);
    snprintf(ck->config_path, sizeof ck->config_path, "%s/params.json", dir);
    snprintf(ck->tekken_path, sizeof ck->tekken_path, "%s/tekken.json", dir);

    /* params.json and tekken.json both state the sampling rate: they must agree. */
    vox_status st = read_params(ck, err);
    int params_rate = ck->hp.sample_rate;
    if (st == VOX_OK) st = vox_tekken_read_ids(ck->tekken_path, &ck->hp, err);
    if (st == VOX_OK && ck->hp.sample_rate != params_rate)
        st = vox_fail(err, VOX_ERR_FORMAT, "%s: audio.sampling_rate %d differs from %s's %d",
                      ck->tekken_path, ck->hp.sample_rate, ck->config_path, params_rate);
    if (st == VOX_OK) st = vox_checkpoint_finish(ck, err);
    if (st == VOX_OK) {
        char path[VOX_PATH_MAX + 48];
        snprintf(path, sizeof path, "%s/consolidated.safetensors", dir);
        st = vox_checkpoint_add_file(ck, path, err);
    }
    if (st != VOX_OK) vox_checkpoint_close(ck);
    return st;
}
