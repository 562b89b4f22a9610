/*
 * golden.c — published runs against the cost model (see golden.h and
 * ../shared/data/README.md for the columns and FLOP definitions).
 *
 * Each row becomes a GPT-style model (LayerNorm, GeLU, learned positions, biases, dropout, as
 * Megatron-LM trained them in 2021-22), the a100-80g system, and the row's layout. Those runs
 * used Megatron's unfused attention (fused scale-mask-softmax, s^2 scores stored) and did not
 * overlap the data-parallel gradient all-reduce (SC'21 local DDP; Korthikanti Sec. 6.3 says so
 * for the 530B run), so overlap is off. The 2021 code summed weight gradients across
 * micro-batches outside the GEMM (costmodel/grad_accum.h), set for the SC'21 and README rows. Where the source says "interleaved" without the chunk
 * count, the smallest interleaving Megatron allows for the row (v = 2 when the layers and
 * micro-batches divide) is used; README of the row says "chunks not stated".
 */
#include "golden.h"

#include "csv_table.h"
#include "flops.h"

#include <csv.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *cell(const csv_table *t, int r, const char *name)
{
    return csv_table_cell(t, r, name);
}

/* First number in a cell ("51200 padded", "1 (no ...)"); 0 if none. */
static double num(const char *s)
{
    while (*s && !isdigit((unsigned char)*s)) s++;
    return *s ? atof(s) : 0;
}

static bool has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

int golden_run(const char *csv_path, const char *data_dir, golden_row *rows, int max, char *err,
               size_t errlen)
{
    csv_table *t = csv_table_read(csv_path, err, errlen);
    if (!t) return -1;

    system_spec sys;
    if (system_load("a100-80g", data_dir, &sys, err, errlen) != CM_OK) {
        csv_table_free(t);
        return -1;
    }
    int out = 0;
    for (int r = 1; r <= csv_table_rows(t) && out < max; r++) {
        golden_row *g = &rows[out];
        memset(g, 0, sizeof *g);
        snprintf(g->run_id, sizeof g->run_id, "%s", cell(t, r, "run_id"));
        model_spec m;
        memset(&m, 0, sizeof m);
        snprintf(m.name, sizeof m.name, "%.63s", g->run_id);
        snprintf(m.display, sizeof m.display, "%s", cell(t, r, "model"));
        m.layers = (int)num(cell(t, r, "num_layers"));
        m.hidden = (int)num(cell(t, r, "hidden_size"));
        m.heads = (int)num(cell(t, r, "num_attention_heads"));
        m.kv_heads = (int)num(cell(t, r, "num_kv_heads"));
        m.head_dim = (int)num(cell(t, r, "head_dim"));
        m.ffn = (long)num(cell(t, r, "ffn_hidden_size"));
        m.vocab = (long)num(cell(t, r, "vocab_size"));
        training_spec tr = training_default();
        tr.seq_len = (int)num(cell(t, r, "seq_len"));
        tr.global_batch = (int)num(cell(t, r, "global_batch_seqs"));
        tr.attention = ATTENTION_UNFUSED;
        /* the 2021 code (SC'21 scripts at 6985e58, the README's GPT-3 script) sums weight
         * gradients across micro-batches outside the GEMM (costmodel/grad_accum.h); the 2022
         * runs (Korthikanti) had gradient accumulation fusion for bf16 main grads (Megatron-LM
         * 83b1e42f30, 2022-02-13) and their 16-bit type is not stated: left fused */
        tr.grad_accum_unfused = !has(cell(t, r, "source_group"), "Korthikanti");
        /* and all-reduces the column-parallel Linear's input gradient synchronously (the
         * asynchronous one came with Megatron-LM 16c90445e7, 2021-09-02: recipe_tp.c) */
        tr.tp_dgrad_allreduce_sync = tr.grad_accum_unfused;
        /* the 2022 code's local DDP divides its gradient buffer by DP, 1 included (grad_accum.h) */
        tr.grad_buffer_divide = !tr.grad_accum_unfused;
        m.max_positions = tr.seq_len;
        m.tied_embeddings = true;
        m.learned_positions = true;
        m.activation = MODEL_ACT_GELU;
        m.norm = MODEL_NORM_LAYER;
        m.qkv_bias = m.out_bias = true;
        m.dropout = true;
        if (model_validate(&m, err, errlen) != CM_OK) continue;

        layout l = layout_default(FRAMEWORK_MEGATRON);
        l.tp = (int)num(cell(t, r, "tp"));
        l.pp = (int)num(cell(t, r, "pp"));
        l.dp = (int)num(cell(t, r, "dp"));
        l.cp = 1;
        l.mbs = (int)num(cell(t, r, "micro_batch_size"));
        l.sp = has(cell(t, r, "sequence_parallel"), "yes");
        l.overlap_grad_reduce = l.overlap_param_gather = l.tp_comm_overlap = false;
        const char *sh = cell(t, r, "sharding");
        l.sharding = has(sh, "ZeRO-3") ? SHARDING_FSDP : SHARDING_DDP;
        g->zero3 = l.sharding == SHARDING_FSDP;
        const char *rc = cell(t, r, "activation_recompute");
        l.recompute = has(rc, "selective") ? RECOMPUTE_SELECTIVE
                      : has(rc, "full")    ? RECOMPUTE_FULL
                                           : RECOMPUTE_NONE;
        const char *vp = cell(t, r, "vp");
        l.vpp = isdigit((unsigned char)vp[0]) ? atoi(vp) : 1; /* "not stated ..." -> 1 */
        if (l.vpp < 1) l.vpp = 1;
        if (has(vp, "interleaved") && l.pp > 1) {
            int micro = tr.global_batch / (l.dp * l.mbs);
            l.vpp = (m.layers % (l.pp * 2) == 0 && micro % l.pp == 0) ? 2 : 1;
        }
        if (l.pp == 1) l.vpp = 1;

        if (estimate_layout(&m, &sys, &tr, &l, &g->est, err, errlen) != CM_OK) {
            fprintf(stderr, "golden: %s: %s\n", g->run_id, err);
            continue;
        }
        double step = g->est.time.step_s;
        double gpus = g->est.gpus;
        const char *def = cell(t, r, "tflops_definition");
        double tflops = num(cell(t, r, "tflops_per_gpu_reported"));
        double mfu = num(cell(t, r, "mfu_pct_reported"));
        double step_rep = num(cell(t, r, "step_time_s"));
        const char *derived = cell(t, r, "derived_fields");
        if (tflops > 0 && (has(def, "eq.(3)") || has(def, "eq.3") || has(def, "recompute"))) {
            snprintf(g->metric, sizeof g->metric, "tflops");
            g->reported = tflops;
            g->predicted = flops_narayanan_eq3(tr.global_batch, tr.seq_len, m.layers, m.hidden,
                                               m.vocab) / (step * gpus) / 1e12;
        } else if (mfu > 0) {
            snprintf(g->metric, sizeof g->metric, "mfu");
            g->reported = mfu / 100.0;
            g->predicted = flops_korthikanti_model(tr.global_batch, tr.seq_len, m.layers,
                                                   m.hidden, m.vocab) /
                           (step * gpus * sys.peak_bf16_flops_per_s);
        } else if (step_rep > 0 && !has(derived, "step_time_s")) {
            snprintf(g->metric, sizeof g->metric, "step_s");
            g->reported = step_rep;
            g->predicted = step;
        } else {
            continue;
        }
        g->error = (g->predicted - g->reported) / g->reported;
        out++;
    }
    csv_table_free(t);
    return out;
}
