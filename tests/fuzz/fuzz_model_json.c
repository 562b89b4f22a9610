/*
 * fuzz_model_json.c — libFuzzer harness for the Hugging Face config.json reader
 * (model_load_json_string, the same code model_load_json runs on a file). A spec the reader
 * accepts is pushed through the parameter accounting, so a config that validates but makes the
 * arithmetic overflow is found too. Built with ASan and UBSan (tests/fuzz/meson.build).
 */
#include <stddef.h>
#include <stdint.h>

#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    model_spec m;
    char err[CM_ERRLEN];
    if (model_load_json_string((const char *)data, size, "fuzz", &m, err, sizeof err) != CM_OK)
        return 0;
    volatile double sink = model_params_total(&m) + model_params_active(&m) +
                           model_attention_params(&m) + model_embedding_params(&m) +
                           model_output_params(&m) + model_q_dim(&m) + model_kv_dim(&m) +
                           model_attn_out_dim(&m) + model_moe_layers(&m) +
                           model_mtp_params(&m) + model_params_active_published(&m) +
                           model_sliding_layers(&m);
    (void)sink;
    return 0;
}
