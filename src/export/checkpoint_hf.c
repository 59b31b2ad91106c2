/* The transformers layout (VoxtralForConditionalGeneration.save_pretrained):
 *   config.json                       VoxtralConfig: audio_config (the Whisper encoder),
 *                                     text_config (Llama), audio_token_id, projector_hidden_act
 *   model.safetensors                 or model.safetensors.index.json ("weight_map": name -> shard)
 *                                     and the shards it names
 *   tekken.json                       the tokenizer (required: the special-token ids come from it)
 * Keys absent from config.json take transformers' defaults (VoxtralEncoderConfig and
 * VoxtralConfig's text defaults), as from_pretrained does. q/k rows already use the rotate-half
 * RoPE pairing: nothing is permuted. Tensor names as published (spec section 7); transformers 5
 * writes the text model's under language_model.model.model. instead, also accepted. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "export/checkpoint.h"

static const char *const hf_names[VOX_T_COUNT] = {
    [VOX_T_CONV1_W] = "audio_tower.conv1.weight",
    [VOX_T_CONV1_B] = "audio_tower.conv1.bias",
    [VOX_T_CONV2_W] = "audio_tower.conv2.weight",
    [VOX_T_CONV2_B] = "audio_tower.conv2.bias",
    [VOX_T_POSITIONS] = "audio_tower.embed_positions.weight",
    [VOX_T_ENC_ATTN_NORM_W] = "audio_tower.layers.%d.self_attn_layer_norm.weight",
    [VOX_T_ENC_ATTN_NORM_B] = "audio_tower.layers.%d.self_attn_layer_norm.bias",
    [VOX_T_ENC_Q_W] = "audio_tower.layers.%d.self_attn.q_proj.weight",
    [VOX_T_ENC_Q_B] = "audio_tower.layers.%d.self_attn.q_proj.bias",
    [VOX_T_ENC_K_W] = "audio_tower.layers.%d.self_attn.k_proj.weight",
    [VOX_T_ENC_V_W] = "audio_tower.layers.%d.self_attn.v_proj.weight",
    [VOX_T_ENC_V_B] = "audio_tower.layers.%d.self_attn.v_proj.bias",
    [VOX_T_ENC_O_W] = "audio_tower.layers.%d.self_attn.out_proj.weight",
    [VOX_T_ENC_O_B] = "audio_tower.layers.%d.self_attn.out_proj.bias",
    [VOX_T_ENC_FFN_NORM_W] = "audio_tower.layers.%d.final_layer_norm.weight",
    [VOX_T_ENC_FFN_NORM_B] = "audio_tower.layers.%d.final_layer_norm.bias",
    [VOX_T_ENC_FC1_W] = "audio_tower.layers.%d.fc1.weight",
    [VOX_T_ENC_FC1_B] = "audio_tower.layers.%d.fc1.bias",
    [VOX_T_ENC_FC2_W] = "audio_tower.layers.%d.fc2.weight",
    [VOX_T_ENC_FC2_B] = "audio_tower.layers.%d.fc2.bias",
    [VOX_T_ENC_NORM_W] = "audio_tower.layer_norm.weight",
    [VOX_T_ENC_NORM_B] = "audio_tower.layer_norm.bias",
    [VOX_T_PROJ1_W] = "multi_modal_projector.linear_1.weight",
    [VOX_T_PROJ2_W] = "multi_modal_projector.linear_2.weight",
    [VOX_T_EMBEDDING] = "language_model.model.embed_tokens.weight",
    [VOX_T_DEC_ATTN_NORM_W] = "language_model.model.layers.%d.input_layernorm.weight",
    [VOX_T_DEC_Q_W] = "language_model.model.layers.%d.self_attn.q_proj.weight",
    [VOX_T_DEC_K_W] = "language_model.model.layers.%d.self_attn.k_proj.weight",
    [VOX_T_DEC_V_W] = "language_model.model.layers.%d.self_attn.v_proj.weight",
    [VOX_T_DEC_O_W] = "language_model.model.layers.%d.self_attn.o_proj.weight",
    [VOX_T_DEC_FFN_NORM_W] = "language_model.model.layers.%d.post_attention_layernorm.weight",
    [VOX_T_DEC_GATE_W] = "language_model.model.layers.%d.mlp.gate_proj.weight",
    [VOX_T_DEC_UP_W] = "language_model.model.layers.%d.mlp.up_proj.weight",
    [VOX_T_DEC_DOWN_W] = "language_model.model.layers.%d.mlp.down_proj.weight",
    [VOX_T_DEC_NORM_W] = "language_model.model.norm.weight",
    [VOX_T_LM_HEAD] = "language_model.lm_head.weight",
};

#define CONFIG_MAX_BYTES (16u << 20)
#define INDEX_MAX_BYTES (64u << 20)

static void require_string(vox_json_reader *r, const cJSON *obj, const char *where,
                           const char *key, const char *def, const char *want) {
    const char *s = vox_json_string(r, obj, where, key, def);
    if (r->st == VOX_OK && strcmp(s, want) != 0)
        vox_json_fail(r, VOX_ERR_UNSUPPORTED, "%s%s%s is \"%s\"; Voxtral uses \"%s\"", where,
                      *where ? "." : "", key, s, want);
}

static void require_not_true(vox_json_reader *r, const cJSON *obj, const char *where,
                             const char *key) {
    if (r->st == VOX_OK && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, key)))
        vox_json_fail(r, VOX_ERR_UNSUPPORTED, "%s.%s is true: not supported", where, key);
}

static void require_default_rope(vox_json_reader *r, const cJSON *rope, const char *where) {
    if (!rope) return;
    const char *type = vox_json_string(r, rope, where, "rope_type", NULL);
    if (!type) type = vox_json_string(r, rope, where, "type", "default");
    if (r->st == VOX_OK && strcmp(type, "default") != 0)
        vox_json_fail(r, VOX_ERR_UNSUPPORTED, "%s: RoPE type \"%s\" is not supported", where,
                      type);
}

static void parse_audio_config(vox_json_reader *r, const cJSON *a, vox_encoder_config *e) {
    const char *w = "audio_config";
    e->d_model = vox_json_int(r, a, w, "hidden_size", "d_model", 1280);
    e->ffn_dim = vox_json_int(r, a, w, "intermediate_size", "encoder_ffn_dim", 5120);
    e->layers = vox_json_int(r, a, w, "num_hidden_layers", "encoder_layers", 32);
    e->heads = vox_json_int(r, a, w, "num_attention_heads", "encoder_attention_heads", 20);
    e->num_mel_bins = vox_json_int(r, a, w, "num_mel_bins", NULL, 128);
    e->max_source_positions = vox_json_int(r, a, w, "max_source_positions", NULL, 1500);
    e->head_dim = vox_json_int(r, a, w, "head_dim", NULL, e->heads > 0 ? e->d_model / e->heads : 0);
    int kv_heads = vox_json_int(r, a, w, "num_key_value_heads", NULL, e->heads);
    if (r->st == VOX_OK && kv_heads != e->heads)
        vox_json_fail(r, VOX_ERR_UNSUPPORTED,
                      "audio_config.num_key_value_heads (%d) differs from num_attention_heads "
                      "(%d): the Whisper encoder has no grouped-query attention",
                      kv_heads, e->heads);
    require_string(r, a, w, "activation_function", "gelu", "gelu");
    require_not_true(r, a, w, "scale_embedding");
    /* VoxtralEncoder's LayerNorms keep torch's default eps; config.json does not carry it. */
    e->layer_norm_eps = 1e-5;
    /* transformers groups the encoder output into rows of audio_config.intermediate_size before
     * the projector (spec section 7): the downsample factor is intermediate_size / hidden_size. */
    if (r->st == VOX_OK && (e->d_model <= 0 || e->ffn_dim % e->d_model != 0))
        vox_json_fail(r, VOX_ERR_FORMAT,
                      "audio_config.intermediate_size (%d) is not a multiple of hidden_size (%d): "
                      "the projector input cannot be formed", e->ffn_dim, e->d_model);
    if (r->st == VOX_OK) e->downsample_factor = e->ffn_dim / e->d_model;
}

static void parse_text_config(vox_json_reader *r, const cJSON *t, vox_decoder_config *d) {
    const char *w = "text_config";
    const char *type = vox_json_string(r, t, w, "model_type", "llama");
    if (r->st == VOX_OK && strcmp(type, "llama") != 0 && strcmp(type, "mistral") != 0)
        vox_json_fail(r, VOX_ERR_UNSUPPORTED, "text_config.model_type is \"%s\", not \"llama\"",
                      type);
    /* VoxtralConfig's defaults for a text_config without the key. */
    d->vocab_size = vox_json_int(r, t, w, "vocab_size", NULL, 131072);
    d->hidden = vox_json_int(r, t, w, "hidden_size", NULL, 3072);
    d->ffn_dim = vox_json_int(r, t, w, "intermediate_size", NULL, 8192);
    d->layers = vox_json_int(r, t, w, "num_hidden_layers", NULL, 30);
    d->heads = vox_json_int(r, t, w, "num_attention_heads", NULL, 32);
    d->kv_heads = vox_json_int(r, t, w, "num_key_value_heads", NULL, 8);
    d->head_dim = vox_json_int(r, t, w, "head_dim", NULL, 128);
    d->max_position_embeddings = vox_json_int(r, t, w, "max_position_embeddings", NULL, 131072);
    d->rms_norm_eps = vox_json_number(r, t, w, "rms_norm_eps", 1e-5);
    require_string(r, t, w, "hidden_act", "silu", "silu");
    require_not_true(r, t, w, "attention_bias");
    require_not_true(r, t, w, "mlp_bias");
    require_not_true(r, t, w, "tie_word_embeddings");
    if (r->st == VOX_OK && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(t, "sliding_window")))
        vox_json_fail(r, VOX_ERR_UNSUPPORTED, "text_config.sliding_window is set: not supported");

    /* transformers 5 writes rope_parameters {rope_theta, rope_type}; older versions a top-level
     * rope_theta and rope_scaling. Only unscaled RoPE is supported. */
    const cJSON *params = vox_json_object(r, t, w, "rope_parameters", 0);
    require_default_rope(r, params, "text_config.rope_parameters");
    require_default_rope(r, vox_json_object(r, t, w, "rope_scaling", 0), "text_config.rope_scaling");
    d->rope_theta = vox_json_number(r, t, w, "rope_theta", 1e8);
    d->rope_theta = vox_json_number(r, params, "text_config.rope_parameters", "rope_theta",
                                    d->rope_theta);
}

static vox_status read_config(vox_checkpoint *ck, int *audio_token_id, vox_error *err) {
    cJSON *root = NULL;
    vox_status st = vox_json_load(ck->config_path, CONFIG_MAX_BYTES, &root, err);
    if (st != VOX_OK) return st;
    vox_json_reader r = {ck->config_path, err, VOX_OK};
    if (!cJSON_IsObject(root)) vox_json_fail(&r, VOX_ERR_FORMAT, "not a JSON object");
    const char *type = vox_json_string(&r, root, "", "model_type", NULL);
    if (r.st == VOX_OK && (!type || strcmp(type, "voxtral") != 0))
        vox_json_fail(&r, VOX_ERR_UNSUPPORTED, "model_type is %s%s%s, not \"voxtral\"",
                      type ? "\"" : "", type ? type : "missing", type ? "\"" : "");
    require_string(&r, root, "", "projector_hidden_act", "gelu", "gelu");
    *audio_token_id = vox_json_int(&r, root, "", "audio_token_id", NULL, -1);
    parse_audio_config(&r, vox_json_object(&r, root, "", "audio_config", 1), &ck->hp.encoder);
    parse_text_config(&r, vox_json_object(&r, root, "", "text_config", 1), &ck->hp.decoder);
    ck->hp.encoder.projector_dim = ck->hp.decoder.hidden;
    cJSON_Delete(root);
    return r.st;
}

static int is_file(const char *path) {
    struct stat s;
    return stat(path, &s) == 0 && S_ISREG(s.st_mode);
}

/* Opens model.safetensors, or every shard named by model.safetensors.index.json (each once). */
static vox_status open_weights(vox_checkpoint *ck, vox_error *err) {
    char path[VOX_PATH_MAX + 64];
    snprintf(ck->index_path, sizeof ck->index_path, "%s/model.safetensors.index.json", ck->dir);
    if (!is_file(ck->index_path)) {
        snprintf(path, sizeof path, "%s/model.safetensors", ck->dir);
        if (!is_file(path))
            return vox_fail(err, VOX_ERR_IO,
                            "%s: neither model.safetensors nor model.safetensors.index.json",
                            ck->dir);
        return vox_checkpoint_add_file(ck, path, err);
    }

    cJSON *index = NULL;
    vox_status st = vox_json_load(ck->index_path, INDEX_MAX_BYTES, &index, err);
    if (st != VOX_OK) return st;
    cJSON *map = cJSON_DetachItemFromObjectCaseSensitive(index, "weight_map");
    cJSON_Delete(index);
    if (!cJSON_IsObject(map)) {
        cJSON_Delete(map);
        return vox_fail(err, VOX_ERR_FORMAT, "%s: weight_map: missing or not an object",
                        ck->index_path);
    }
    ck->weight_map = map;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, map) {
        const char *shard = cJSON_IsString(entry) ? entry->valuestring : NULL;
        if (!shard || !shard[0] || strchr(shard, '/') || strcmp(shard, "..") == 0)
            return vox_fail(err, VOX_ERR_FORMAT,
                            "%s: weight_map[\"%s\"] must be a shard file name", ck->index_path,
                            entry->string);
        int opened = 0;
        for (size_t i = 0; i < ck->n_files && !opened; i++) {
            const char *p = vox_st_path(ck->files[i]);
            const char *base = strrchr(p, '/');
            opened = strcmp(base ? base + 1 : p, shard) == 0;
        }
        if (opened) continue;
        snprintf(path, sizeof path, "%s/%s", ck->dir, shard);
        if ((st = vox_checkpoint_add_file(ck, path, err)) != VOX_OK) return st;
    }
    return VOX_OK;
}

vox_status vox_checkpoint_open_hf(const char *dir, vox_checkpoint *ck, vox_error *err) {
    memset(ck, 0, sizeof *ck);
    ck->layout = "transformers";
    ck->names = hf_names;
    /* transformers 5's save_pretrained writes the text model one level deeper than the published
     * checkpoint (language_model.model.model.layers...); from_pretrained reads both. */
    ck->alias_from = "language_model.model.";
    ck->alias_to = "language_model.model.model.";
    ck->interleaved_rope = 0;
    snprintf(ck->dir, sizeof ck->dir, "%s", dir);
    snprintf(ck->config_path, sizeof ck->config_path, "%s/config.json", dir);
    snprintf(ck->tekken_path, sizeof ck->tekken_path, "%s/tekken.json", dir);

    int audio_token_id = -1;
    vox_status st = read_config(ck, &audio_token_id, err);
    if (st == VOX_OK) st = vox_tekken_read_ids(ck->tekken_path, &ck->hp, err);
    if (st == VOX_OK && audio_token_id >= 0 && audio_token_id != ck->hp.tokenizer.audio)
        st = vox_fail(err, VOX_ERR_FORMAT, "%s: audio_token_id %d differs from %s's [AUDIO] id %d",
                      ck->config_path, audio_token_id, ck->tekken_path, ck->hp.tokenizer.audio);
    if (st == VOX_OK) st = vox_checkpoint_finish(ck, err);
    if (st == VOX_OK) st = open_weights(ck, err);
    if (st != VOX_OK) vox_checkpoint_close(ck);
    return st;
}
