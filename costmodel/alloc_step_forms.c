/*
 * alloc_step_forms.c — the allocator replay's (alloc_step.h) layer forms beyond Llama's, as
 * transformers 5.17.0 allocates them (its models/<type>/modeling_<type>.py as installed on the
 * device, read through bench/results/arch24_2026-11-29's copy; line numbers below are that
 * version's): nn.LayerNorm with and without bias, CohereLayerNorm's fp32 ops, OLMo 2's RMSNorm
 * (the weight times the fp32 normalised input, then the cast), parallel attention + MLP blocks
 * (Cohere, StableLM's parallel residual), norms after the sublayers (OLMo 2, EXAONE 4.0), q/k
 * norms over the whole projection (OLMo 2, OLMoE), biased projections, StarCoder2's plain MLP,
 * residual and embedding dropout (StarCoder2, Seed-OSS), Cohere's fp32 RoPE and logit scale,
 * StableLM's partial RoPE; and every layer's parameter list. Its own file because each family
 * adds a form here, not to the Llama list in alloc_step.c (bench/results/replay25_2026-11-29).
 */
#include "alloc_step_internal.h"

#include <string.h>

/* One layer's parameters in registration order (nn.Module registers them as __init__ assigns
 * its submodules; a Linear's weight before its bias): transformers' LlamaDecoderLayer (q, k, v,
 * o with Qwen2's q/k/v biases; Qwen3's q_norm, k_norm after o_proj; mlp gate, up, down; the
 * norms) and the forms' (the same order: self_attn, mlp, then the norms, modeling_cohere.py
 * 299-301, modeling_olmo2.py 289-293, modeling_stablelm.py 335-340, modeling_starcoder2.py
 * 209-212), or native_llama.py's TransformerBlock (wq, wk, wv, wo, q/k norms; w1, w2, w3; the
 * two norms). */
void alloc_step_layer_params(dims *d)
{
    int n = 0;
    if (d->mla) { /* DeepSeek-V2/V3: dense first layers and MoE ones (alloc_step_mla.c) */
        alloc_step_mla_params(d);
        return;
    }
    if (d->gptoss) {
        alloc_step_gptoss_params(d);
        return;
    }
    if (d->neox) { /* GPTNeoXLayer (modeling_gpt_neox.py 243-248): the two LayerNorms, then
                    * query_key_value and dense (192-193), dense_h_to_4h and dense_4h_to_h (41-42) */
        for (int i = 0; i < 2; i++) {
            d->lp[n++] = d->h;
            d->lp[n++] = d->h;
        }
        d->lp[n++] = 3.0 * d->q * d->h;
        d->lp[n++] = 3.0 * d->q;
        d->lp[n++] = d->h * d->q;
        d->lp[n++] = d->h;
        d->lp[n++] = d->f * d->h;
        d->lp[n++] = d->f;
        d->lp[n++] = d->h * d->f;
        d->lp[n++] = d->h;
        d->nlp = n;
        return;
    }
    if (d->falcon || d->falcon_nda) { /* FalconDecoderLayer: self_attention (query_key_value,
                      * dense), mlp (dense_h_to_4h, dense_4h_to_h), input_layernorm or ln_attn
                      * and ln_mlp (modeling_falcon.py 555-573, 245-250, 531-533) */
        d->lp[n++] = (d->q + 2.0 * d->kv) * d->h;
        d->lp[n++] = d->h * d->q;
        d->lp[n++] = d->f * d->h;
        d->lp[n++] = d->h * d->f;
        for (int i = 0; i < d->norms; i++) {
            d->lp[n++] = d->h;
            d->lp[n++] = d->h;
        }
        d->nlp = n;
        return;
    }
    if (d->fused) { /* Phi3DecoderLayer: self_attn (o_proj, then qkv_proj), mlp (gate_up_proj,
                     * down_proj), the two norms (modeling_phi3.py Phi3Attention.__init__) */
        d->lp[n++] = d->h * d->q;
        d->lp[n++] = d->h * (d->q + 2.0 * d->kv);
        d->lp[n++] = 2.0 * d->f * d->h;
        d->lp[n++] = d->h * d->f;
        d->lp[n++] = d->h;
        d->lp[n++] = d->h;
        d->nlp = n;
        return;
    }
    if ((d->glm || d->ernie) && d->dense_first > 0) { /* dense first layers: an MLP of f */
        dims dd = *d;
        dd.moe = dd.glm = dd.ernie = false;
        dd.dense_first = 0;
        alloc_step_layer_params(&dd);
        for (int i = 0; i < dd.nlp; i++) d->lpd[i] = dd.lp[i];
        d->nlpd = dd.nlp;
    }
    d->lp[n++] = d->q * d->h;
    if (!d->native && d->qkv_bias) d->lp[n++] = d->q;
    d->lp[n++] = d->kv * d->h;
    if (!d->native && d->qkv_bias) d->lp[n++] = d->kv;
    d->lp[n++] = d->kv * d->h;
    if (!d->native && d->qkv_bias) d->lp[n++] = d->kv;
    d->lp[n++] = d->h * d->q;
    if (d->o_bias) d->lp[n++] = d->h;
    if (d->qk_norm) {
        d->lp[n++] = d->qk_wfull ? d->q : d->hd;
        d->lp[n++] = d->qk_wfull ? d->kv : d->hd;
    }
    if (d->moe && (d->ernie || d->phimoe)) { /* Ernie4_5_MoeSparseMoeBlock.__init__ (379-384):
                               * the router's weight (moe_statics' bias, E, frozen: not listed),
                               * the experts', the shared experts' gate, up, down; PhiMoE's
                               * router and experts (modeling_phimoe.py 507-508) */
        d->lp[n++] = d->E * d->h;
        d->lp[n++] = d->E * 2.0 * d->ef * d->h;
        d->lp[n++] = d->E * d->h * d->ef;
        for (int i = 0; i < 3 && d->ernie; i++) d->lp[n++] = d->sf * d->h;
    } else if (d->moe) { /* the experts' gate_up_proj [E, 2f, h] and down_proj [E, h, f], the router */
        d->lp[n++] = d->E * 2.0 * d->ef * d->h;
        d->lp[n++] = d->E * d->h * d->ef;
        d->lp[n++] = d->E * d->h;
        if (d->shared_gate || d->glm) { /* Qwen2-MoE: shared_expert's gate, up, down;
                                          * shared_expert_gate. GLM-4.5 (Glm4MoeMoE.__init__,
                                          * modeling_glm4_moe.py 389-393): experts, gate,
                                          * shared_experts, no gate of its own */
            for (int i = 0; i < 3; i++) d->lp[n++] = d->sf * d->h;
            if (d->shared_gate) d->lp[n++] = d->h;
        }
    } else if (d->plain) { /* c_fc, c_proj (modeling_starcoder2.py 54-55) */
        d->lp[n++] = d->f * d->h;
        if (d->mlp_bias) d->lp[n++] = d->f;
        d->lp[n++] = d->h * d->f;
        if (d->mlp_bias) d->lp[n++] = d->h;
    } else {
        for (int i = 0; i < 3; i++) {
            d->lp[n++] = d->f * d->h;
            if (d->mlp_bias) d->lp[n++] = i < 2 ? d->f : d->h;
        }
    }
    int norms = d->norms > 0 ? d->norms : 2;
    for (int i = 0; i < norms; i++) {
        d->lp[n++] = d->h;
        if (d->ln_bias) d->lp[n++] = d->h;
    }
    if (d->gemma) { /* Gemma's pre-feedforward and post-feedforward norms */
        d->lp[n++] = d->h;
        d->lp[n++] = d->h;
    }
    d->nlp = n;
}

/* The form of m's Hugging Face layers: sets d's form fields; 0, or -1 where the model type has
 * a form (arch24's flags) this file does not list. Types outside this list keep Llama's rules
 * (alloc_step_cover.c). */
int alloc_step_form_of(const model_spec *m, dims *d)
{
    const char *ty = m->hf_model_type;
    bool nobias = !m->qkv_bias && !m->out_bias && !m->attn_out_bias && !m->mlp_bias;
    bool common = m->norm_fp32_scale == 0 && !m->sandwich_norm && !m->hf_fused_qkv &&
                  !m->lm_head_bias && m->act_params == 0 && !m->learned_positions &&
                  !m->attention_sinks && !m->mla;
    bool cohere2 = !strcmp(ty, "cohere2");
    if (!cohere2) common = common && m->nope_layers == 0;
    bool swiglu = m->activation == MODEL_ACT_SWIGLU;
    d->norms = 2;
    if (!strcmp(ty, "olmoe")) { /* Llama's block and norm; q_norm(q_proj(x)) over the whole
                                 * projection (modeling_olmoe.py 233-236, 249-250) */
        if (!common || m->norm != MODEL_NORM_RMS || !m->qk_norm || !m->qk_norm_full ||
            m->post_norm || m->parallel_block || !nobias || m->dropout || !swiglu)
            return -1;
        d->qk_full = d->qk_wfull = true;
        return 0;
    }
    if (!strcmp(ty, "olmo2") || !strcmp(ty, "exaone4")) {
        /* no input norms; post_attention_layernorm(self_attn(x)) + x, then the MLP's
         * (modeling_olmo2.py 315-322, modeling_exaone4.py 314-321); OLMo 2's norm returns
         * (weight * x_fp32).to(bf16) (modeling_olmo2.py 65), EXAONE's Llama's (line 64);
         * OLMo 2's q/k norms span the projection (221-222, 235-236), EXAONE's each head */
        bool olmo2 = ty[1] == 'l';
        if (!common || m->norm != MODEL_NORM_RMS || !m->post_norm || m->parallel_block ||
            !nobias || m->dropout || !swiglu || m->sliding_window > 0 || !m->qk_norm ||
            m->qk_norm_full != olmo2)
            return -1;
        d->block = ALLOC_BLOCK_POST;
        d->norm_form = olmo2 ? ALLOC_NORM_FP32W : ALLOC_NORM_LLAMA;
        d->qk_full = d->qk_wfull = olmo2;
        return 0;
    }
    if (cohere2) { /* Cohere's layer; RoPE only in the sliding layers (modeling_cohere2.py 198,
                    * 229-230), whose window mask masking_utils builds (395) */
        if (m->nope_layers != m->layers - model_sliding_layers(m) || m->sliding_window <= 0)
            return -1;
        d->nope2 = m->nope_layers > 0;
    }
    if (!strcmp(ty, "cohere") || cohere2) {
        /* one CohereLayerNorm (fp32 ops, weight only: modeling_cohere.py 51-65) feeding
         * attention and MLP, x + attn + mlp (330-344); per-head q/k norms of the same code with
         * weights [heads, head_dim] (238-244, 261-263); RoPE in fp32 on interleaved pairs
         * (175-208); logits * logit_scale (503) */
        if (!common || m->norm != MODEL_NORM_LAYER || !m->norm_no_bias || !m->parallel_block ||
            !m->shared_block_norm || m->post_norm || !nobias || m->dropout || !swiglu ||
            (m->sliding_window > 0) != cohere2 || (m->qk_norm && (!m->qk_norm_full || cohere2)))
            return -1;
        d->block = ALLOC_BLOCK_PARALLEL;
        d->norm_form = ALLOC_NORM_COHERE;
        d->qk_wfull = m->qk_norm;
        d->rope32 = d->logit_scale = true;
        d->norms = 1;
        return 0;
    }
    if (!strcmp(ty, "stablelm")) {
        /* nn.LayerNorm (weight, bias); use_parallel_residual: one norm, x + attn + mlp, else
         * Llama's order (modeling_stablelm.py 335-340, 353-383); q/k/v biases (250-252); RoPE
         * on the first partial_rotary_factor of each head, then a cat (290-303); qk_layernorm's
         * per-head ModuleList is not listed */
        if (!common || m->norm != MODEL_NORM_LAYER || m->norm_no_bias || m->post_norm ||
            m->qk_norm || m->out_bias || m->attn_out_bias || m->mlp_bias || m->dropout ||
            !swiglu || m->sliding_window > 0 || (m->parallel_block && !m->shared_block_norm))
            return -1;
        d->block = m->parallel_block ? ALLOC_BLOCK_PARALLEL : ALLOC_BLOCK_SEQ;
        d->norms = m->parallel_block ? 1 : 2;
        d->norm_form = ALLOC_NORM_LN;
        d->ln_bias = true;
        d->rope_part = d->rf < 1;
        return 0;
    }
    if (!strcmp(ty, "starcoder2") || !strcmp(ty, "seed_oss")) {
        /* StarCoder2: nn.LayerNorm (modeling_starcoder2.py 211-212), biased q, k, v, o, c_fc,
         * c_proj (57-58, 153-156), c_fc -> gelu_pytorch_tanh -> c_proj (62-67); dropout on o_proj's
         * and c_proj's outputs (66, 198) and on the embeddings (377).
         * Seed-OSS: Llama's norm and MLP, dropout on o_proj's and down_proj's outputs
         * (modeling_seed_oss.py 83, 223) */
        bool sc2 = ty[1] == 't';
        if (!common || m->post_norm || m->parallel_block || m->qk_norm ||
            m->norm != (sc2 ? MODEL_NORM_LAYER : MODEL_NORM_RMS) || m->norm_no_bias ||
            swiglu == sc2 || (sc2 && strncmp(m->hidden_act, "gelu", 4) != 0) ||
            (sc2 && (!m->qkv_bias || !m->attn_out_bias || !m->mlp_bias)) ||
            (!sc2 && m->mlp_bias) || m->rotary_fraction < 1)
            return -1;
        d->block = ALLOC_BLOCK_SEQ;
        d->norm_form = sc2 ? ALLOC_NORM_LN : ALLOC_NORM_LLAMA;
        d->ln_bias = d->plain = d->mlp_bias = sc2;
        d->drop = m->dropout;
        d->drop_emb = m->dropout && sc2;
        return 0;
    }
    if (!strcmp(ty, "gpt_neox")) {
        /* two nn.LayerNorms; use_parallel_residual: x + attn(ln1(x)) + mlp(ln2(x)), else
         * Llama's order (modeling_gpt_neox.py 271-281); one biased query_key_value whose
         * [b, heads, s, 3 d] view is chunked into q, k, v (206-207); RoPE on rotary_pct of
         * each head, then cats (118-151); dense_h_to_4h, GELU, dense_4h_to_h, biased */
        if (!common || m->norm != MODEL_NORM_LAYER || m->norm_no_bias || m->post_norm ||
            m->qk_norm || m->shared_block_norm || !m->qkv_bias || !m->attn_out_bias ||
            !m->mlp_bias || m->dropout || swiglu || strncmp(m->hidden_act, "gelu", 4) != 0 ||
            m->sliding_window > 0 || m->kv_heads != m->heads)
            return -1;
        d->block = m->parallel_block ? ALLOC_BLOCK_PARALLEL : ALLOC_BLOCK_SEQ;
        d->norm_form = ALLOC_NORM_LN;
        d->ln_bias = d->plain = d->mlp_bias = d->neox = true;
        d->rope_part = true;
        return 0;
    }
    if (!strcmp(ty, "glm4_moe")) {
        /* Llama's block and norm, biased q, k, v (modeling_glm4_moe.py 199-207); RoPE on the
         * first partial_rotary_factor of each head, then a cat (167-182), as StableLM's;
         * use_qk_norm: per-head RMSNorms before the transpose (209-212, 226-228), Qwen3's */
        if (!common || m->norm != MODEL_NORM_RMS || m->parallel_block || m->post_norm ||
            m->qk_norm_full || m->attn_out_bias || m->mlp_bias || m->dropout || !swiglu ||
            m->sliding_window > 0)
            return -1;
        d->rope_part = d->rf < 1;
        return 0;
    }
    if (!strcmp(ty, "falcon")) {
        /* Falcon-7B: parallel_attn with one nn.LayerNorm (input_layernorm, modeling_falcon.py
         * 563-573), x + (mlp(n) += attn(n)) (dropout_add with p 0 returns its input); the
         * multi_query attention under SDPA's math backend (alloc_step_falcon.c); FalconMLP's
         * dense_h_to_4h, GELU, dense_4h_to_h (526-539); no biases (bias false). Falcon-40B's
         * new_decoder_architecture (replay27): ln_attn and ln_mlp, both of x before the
         * attention (falcon40b_source.txt's decoder layer), the grouped split and the masked
         * cuDNN attention (alloc_step_falcon.c). ALiBi is not listed */
        if (!common || m->norm != MODEL_NORM_LAYER || m->norm_no_bias || !m->parallel_block ||
            m->shared_block_norm == m->hf_split_broadcast || m->post_norm || m->qk_norm ||
            !nobias || m->dropout ||
            swiglu || strncmp(m->hidden_act, "gelu", 4) != 0 || m->sliding_window > 0 ||
            m->rotary_fraction < 1)
            return -1;
        d->block = ALLOC_BLOCK_PARALLEL;
        d->norm_form = ALLOC_NORM_LN;
        d->norms = m->shared_block_norm ? 1 : 2;
        d->ln_bias = d->plain = true;
        d->falcon = m->sdpa_kv_broadcast && m->kv_heads == 1; /* else not listed (the cover) */
        d->falcon_nda = m->hf_split_broadcast;
        return 0;
    }
    if (!strcmp(ty, "phimoe")) {
        /* nn.LayerNorms (weight, bias) in Llama's order (modeling_phimoe.py 538-541, 552-566),
         * attention_bias's q, k, v, o biases (193-204), the MoE block of alloc_step_phimoe.c;
         * lm_head's bias (756) is a small-pool parameter of V, not listed; sliding_window is
         * HF's window mask, which alloc_step.c's mask flag reads */
        if (m->act_params > 0 || m->norm_fp32_scale != 0 || m->sandwich_norm ||
            m->hf_fused_qkv || m->learned_positions || m->attention_sinks || m->mla ||
            m->nope_layers != 0 || m->norm != MODEL_NORM_LAYER || m->norm_no_bias ||
            m->parallel_block || m->post_norm || m->qk_norm || m->mlp_bias || m->dropout ||
            !swiglu || m->rotary_fraction < 1)
            return -1;
        d->block = ALLOC_BLOCK_SEQ;
        d->norm_form = ALLOC_NORM_LN;
        d->ln_bias = true;
        d->phimoe = model_is_moe(m);
        d->jitter = m->input_jitter;
        return 0;
    }
    if (!strcmp(ty, "ernie4_5_moe")) {
        /* Llama's block, norm and MLP, no biases (use_bias); RoPE in fp32 on interleaved pairs
         * with fp32 tables (modeling_ernie4_5_moe.py 125-137, 166-178) */
        if (!common || m->norm != MODEL_NORM_RMS || m->parallel_block || m->post_norm ||
            m->qk_norm || !nobias || m->dropout || !swiglu || m->sliding_window > 0 ||
            m->rotary_fraction < 1)
            return -1;
        d->rope32 = true;
        return 0;
    }
    /* any other type with a form arch24 read: not listed */
    if (m->norm != MODEL_NORM_RMS || m->parallel_block || m->post_norm || m->qk_norm_full ||
        m->mlp_bias || m->lm_head_bias || m->act_params > 0 || m->dropout ||
        m->activation != MODEL_ACT_SWIGLU)
        return -1;
    return 0;
}

/* ---- norms ---- */

/* nn.LayerNorm's F.layer_norm (aten native_layer_norm: Y, then fp32 mean and rstd [rows],
 * saved with the input, which the caller keeps); CohereLayerNorm's ops (modeling_cohere.py
 * 59-65: x.float(); mean; (x - mean), saved by pow; pow, mean; (x - mean) again and
 * rsqrt(var + eps), both saved by their product; weight.float() * that, which saves it; the
 * cast); OLMo 2's RMSNorm (modeling_olmo2.py 61-65: x.float(), saved; pow, mean, + eps, rsqrt,
 * saved; x * rstd, saved by the weight's product, in fp32; the product; its cast). */
int alloc_step_form_norm_fwd(ctx *c, const dims *d, double rows, double width, saved *sv)
{
    double n = rows * width;
    if (d->norm_form == ALLOC_NORM_LN) {
        int y = A(c, 2.0 * n);
        keep(c, sv, A(c, 4.0 * rows));
        keep(c, sv, A(c, 4.0 * rows));
        return y;
    }
    if (d->norm_form == ALLOC_NORM_COHERE) {
        int x32 = A(c, 4.0 * n), mean = A(c, 4.0 * rows);
        int d1 = A(c, 4.0 * n), p = A(c, 4.0 * n), var = A(c, 4.0 * rows);
        F(c, p);
        int d2 = A(c, 4.0 * n), ve = A(c, 4.0 * rows), r = A(c, 4.0 * rows);
        F(c, ve);
        int nrm = A(c, 4.0 * n);
        F(c, x32);
        int w32 = A(c, 4.0 * width);
        int o32 = A(c, 4.0 * n);
        int out = A(c, 2.0 * n);
        F(c, o32);
        F(c, mean);
        F(c, var);
        keep(c, sv, d1);
        keep(c, sv, d2);
        keep(c, sv, r);
        keep(c, sv, nrm);
        keep(c, sv, w32);
        return out;
    }
    /* ALLOC_NORM_FP32W */
    int x32 = A(c, 4.0 * n), p = A(c, 4.0 * n), v = A(c, 4.0 * rows);
    F(c, p);
    int ve = A(c, 4.0 * rows);
    F(c, v);
    int r = A(c, 4.0 * rows);
    F(c, ve);
    int n32 = A(c, 4.0 * n);
    int o32 = A(c, 4.0 * n);
    int out = A(c, 2.0 * n);
    F(c, o32);
    keep(c, sv, x32);
    keep(c, sv, r);
    keep(c, sv, n32);
    return out;
}

/* Their backward from the output's gradient g (freed when consumed: g >= 0) to the input's:
 * native_layer_norm_backward's dX (the weight's and bias's [width] gradients are the small
 * pool's); the fp32 ops' derivatives one by one (tools/autograd/derivatives.yaml: mul's two
 * products, rsqrt's, mean's expand, pow's, sub's, the casts'). */
int alloc_step_form_norm_bwd(ctx *c, const dims *d, double rows, double width, int g)
{
    double n = rows * width;
    if (d->norm_form == ALLOC_NORM_LN) {
        int gi = A(c, 2.0 * n);
        F(c, g);
        return gi;
    }
    int g32 = A(c, 4.0 * n); /* the cast's backward */
    F(c, g);
    int gn = A(c, 4.0 * n);  /* weight * grad: the normalised input's */
    int gw = A(c, 4.0 * n);  /* grad * normalised, summed to the weight's shape */
    F(c, gw);
    F(c, g32);
    int gxa = A(c, 4.0 * n); /* (x or x - mean) * rstd: grad * rstd */
    int tmp = A(c, 4.0 * n); /* grad * (x or x - mean), summed for rstd */
    int gr = A(c, 4.0 * rows);
    F(c, tmp);
    F(c, gn);
    int gve = A(c, 4.0 * rows); /* rsqrt's backward */
    F(c, gr);
    int gp = A(c, 4.0 * n);     /* mean's backward (expand) */
    F(c, gve);
    int gxb = A(c, 4.0 * n);    /* pow's backward */
    F(c, gp);
    F(c, gxb);                  /* accumulated into gxa */
    if (d->norm_form == ALLOC_NORM_COHERE) { /* the subtracted mean's: sum, expand, accumulate */
        int gm = A(c, 4.0 * rows), ge = A(c, 4.0 * n);
        F(c, gm);
        F(c, ge);
    }
    int gi = A(c, 2.0 * n);     /* x.float()'s backward */
    F(c, gxa);
    return gi;
}

/* ---- RoPE ----
 * Cohere (modeling_cohere.py 175-208): q.float(), q * cos, rotate_half's strided halves, -x2,
 * stack, rotate_half(q) * sin, the sum, .to(bf16), all fp32 but the last. StableLM and GPT-NeoX
 * (modeling_stablelm.py 290-303, modeling_gpt_neox.py 118-151): Llama's rotate_half RoPE on the
 * first rf of each head (a view), then torch.cat((rotated, pass)): a full-width copy, as
 * Phi-3's. */
int alloc_step_form_rope_fwd(ctx *c, const dims *d, double w)
{
    double t = d->T;
    if (d->ernie) { /* ERNIE (modeling_ernie4_5_moe.py 166-178): q.float() * cos (cos, a
                     * repeat_interleave'd copy of the fp32 table's half, is what the product
                     * saves: [1, s, hd], not listed); rotate_half(q) in bf16 (-x2 half wide,
                     * stack), .float(), * sin, the sum, .to(bf16) */
        int xf = A(c, 4.0 * t * w), xc = A(c, 4.0 * t * w);
        F(c, xf);
        int neg = A(c, 1.0 * t * w), st = A(c, 2.0 * t * w);
        F(c, neg);
        int sf = A(c, 4.0 * t * w);
        F(c, st);
        int xs = A(c, 4.0 * t * w);
        F(c, sf);
        int sum = A(c, 4.0 * t * w);
        F(c, xc);
        F(c, xs);
        int out = A(c, 2.0 * t * w);
        F(c, sum);
        return out;
    }
    if (d->rope32) {
        int xf = A(c, 4.0 * t * w), xc = A(c, 4.0 * t * w), neg = A(c, 2.0 * t * w);
        int st = A(c, 4.0 * t * w);
        F(c, neg);
        int xs = A(c, 4.0 * t * w);
        F(c, st);
        int sum = A(c, 4.0 * t * w);
        F(c, xc);
        F(c, xs);
        int out = A(c, 2.0 * t * w);
        F(c, sum);
        F(c, xf);
        return out;
    }
    return alloc_step_partial_rope_fwd(c, d, w); /* Phi-3's (alloc_step_phi3.c) */
}

/* ---- blocks ---- */

/* GPT-NeoX's attention from n1 (kept) to dense's output: query_key_value's [T, 3q] output (v, a
 * chunk view of it, is saved by SDPA and keeps it), q and k rotated and cat'ed (fresh [b, heads,
 * s, d] tensors, saved), SDPA's output and log-sum-exp, the transpose's contiguous copy (SDPA's
 * output follows q's layout; dense saves the copy), dense's output. Backward as Phi-3's fused
 * projection (alloc_step_phi3.c): SDPA's gradients, v's chunk backward (a full-size gradient),
 * each RoPE's and slice's backward summed into it, query_key_value's. */
static int neox_attn_fwd(ctx *c, const dims *d, int n1, saved *sv)
{
    double t = d->T, q = d->q;
    int qkv = A(c, 6.0 * t * q);
    int qe = alloc_step_form_rope_fwd(c, d, q), ke = alloc_step_form_rope_fwd(c, d, q);
    int out = A(c, 2.0 * t * q), lse = A(c, 4.0 * t * d->a), cc = A(c, 2.0 * t * q);
    int o = A(c, 2.0 * t * d->h);
    keep(c, sv, n1);
    keep(c, sv, qkv);
    keep(c, sv, qe);
    keep(c, sv, ke);
    keep(c, sv, out);
    keep(c, sv, lse);
    keep(c, sv, cc);
    return o;
}

static int neox_attn_bwd(ctx *c, const dims *d, int go, int *wg, int *nwg)
{
    double t = d->T, q = d->q, wr = q * d->rf;
    int gq = A(c, 2.0 * t * q), gk = A(c, 2.0 * t * q), gv = A(c, 2.0 * t * q);
    F(c, go);
    int gqkv = A(c, 6.0 * t * q);
    F(c, gv);
    int gr[2] = {gk, gq};
    for (int i = 0; i < 2; i++) {
        int a1 = A(c, 2.0 * t * wr), a2 = A(c, 2.0 * t * wr);
        int grot = A(c, 2.0 * t * wr); /* the cat's backward: the rotated part */
        F(c, a1);
        F(c, a2);
        int gfull = A(c, 6.0 * t * q); /* the slices' and chunk's backward, summed */
        F(c, grot);
        F(c, gr[i]);
        F(c, gfull);
    }
    int gn1 = A(c, 2.0 * t * d->h);
    wg[(*nwg)++] = A(c, 6.0 * d->h * q); /* query_key_value */
    F(c, gqkv);
    return gn1;
}

static int attn_fwd(ctx *c, const dims *d, int n1, saved *sv)
{
    if (d->falcon) return alloc_step_falcon_attn_fwd(c, d, n1, sv);
    if (d->falcon_nda) return alloc_step_falcon_nda_attn_fwd(c, d, n1, sv);
    return d->neox ? neox_attn_fwd(c, d, n1, sv) : alloc_step_attn_fwd(c, d, n1, sv);
}

static int attn_bwd(ctx *c, const dims *d, int go, int *wg, int *nwg)
{
    if (d->falcon) return alloc_step_falcon_attn_bwd(c, d, go, wg, nwg);
    if (d->falcon_nda) return alloc_step_falcon_nda_attn_bwd(c, d, go, wg, nwg);
    return d->neox ? neox_attn_bwd(c, d, go, wg, nwg) : alloc_step_attn_bwd(c, d, go, wg, nwg);
}

/* native_dropout on a [T, h] bf16 tensor (p > 0): its output and its bool mask, saved; the
 * input freed. Backward: grad * mask * scale, a new tensor; g consumed. */
static int dropout_fwd(ctx *c, const dims *d, int x, saved *sv)
{
    int y = A(c, 2.0 * d->T * d->h);
    keep(c, sv, A(c, 1.0 * d->T * d->h));
    F(c, x);
    return y;
}

static int dropout_bwd(ctx *c, const dims *d, int g, bool consume)
{
    int gi = A(c, 2.0 * d->T * d->h);
    if (consume) F(c, g);
    return gi;
}

/* StarCoder2's MLP: c_fc (saved by the GELU), the GELU's output (saved by c_proj), c_proj */
static int plain_mlp_fwd(ctx *c, const dims *d, saved *sv)
{
    int fc = A(c, 2.0 * d->T * d->f), g = A(c, 2.0 * d->T * d->f);
    keep(c, sv, fc);
    keep(c, sv, g);
    return A(c, 2.0 * d->T * d->h);
}

static int plain_mlp_bwd(ctx *c, const dims *d, int g, bool consume, int *wg, int *nwg)
{
    double t = d->T, h = d->h, f = d->f;
    int ga = A(c, 2.0 * t * f);
    wg[(*nwg)++] = A(c, 2.0 * h * f); /* c_proj */
    if (consume) F(c, g);
    int gfc = A(c, 2.0 * t * f);      /* the GELU's backward */
    F(c, ga);
    int gin = A(c, 2.0 * t * h);
    wg[(*nwg)++] = A(c, 2.0 * h * f); /* c_fc */
    F(c, gfc);
    return gin;
}

static int mlp_fwd(ctx *c, const dims *d, saved *sv)
{
    if (d->moe) return alloc_step_moe_fwd(c, d, sv);
    return d->plain ? plain_mlp_fwd(c, d, sv) : alloc_step_mlp_fwd(c, d, sv);
}

static int mlp_bwd(ctx *c, const dims *d, int g, bool consume, int *wg, int *nwg)
{
    if (d->moe) {
        int gi = alloc_step_moe_bwd(c, d, g, wg, nwg);
        if (consume) F(c, g);
        return gi;
    }
    return d->plain ? plain_mlp_bwd(c, d, g, consume, wg, nwg)
                    : alloc_step_mlp_bwd(c, d, g, consume, wg, nwg);
}

/* One layer's forward on input x (which nn.LayerNorm and a post-norm layer's attention save:
 * kept here, except under a checkpoint, whose caller holds x); returns the output. */
int alloc_step_form_layer_fwd(ctx *c, const dims *d, int x, saved *sv)
{
    double t = d->T, h = d->h;
    bool hold_x = sv && !d->ckpt;
    if (d->block == ALLOC_BLOCK_POST) {
        int o = attn_fwd(c, d, hold_x ? x : -1, sv);
        int p1 = alloc_step_norm_fwd(c, d, t, h, sv);
        F(c, o);
        int hs = A(c, 2.0 * t * h);
        F(c, p1);
        int dn = mlp_fwd(c, d, sv);
        int p2 = alloc_step_norm_fwd(c, d, t, h, sv);
        F(c, dn);
        keep(c, sv, hs); /* the MLP's input */
        int y = A(c, 2.0 * t * h);
        F(c, p2);
        return y;
    }
    int n1 = alloc_step_norm_fwd(c, d, t, h, sv);
    if (d->norm_form == ALLOC_NORM_LN && hold_x) keep(c, sv, x);
    /* Falcon-40B's ln_mlp runs before the attention */
    int n2 = d->falcon_nda ? alloc_step_norm_fwd(c, d, t, h, sv) : -1;
    int o = attn_fwd(c, d, n1, sv);
    if (d->drop) o = dropout_fwd(c, d, o, sv);
    if (d->block == ALLOC_BLOCK_PARALLEL) { /* x + attn + mlp, the MLP on the same n1 or
                                             * (GPT-NeoX) on its own norm's output of x */
        if (n2 < 0) n2 = d->norms > 1 ? alloc_step_norm_fwd(c, d, t, h, sv) : -1;
        int dn = mlp_fwd(c, d, sv);
        if (n2 >= 0) keep(c, sv, n2);
        int s1 = A(c, 2.0 * t * h);
        F(c, o);
        int y = A(c, 2.0 * t * h);
        F(c, s1);
        F(c, dn);
        return y;
    }
    int hs = A(c, 2.0 * t * h);
    F(c, o);
    n2 = alloc_step_norm_fwd(c, d, t, h, sv);
    int dn = mlp_fwd(c, d, sv);
    if (d->drop) dn = dropout_fwd(c, d, dn, sv);
    keep(c, sv, n2);
    int y = A(c, 2.0 * t * h);
    F(c, dn);
    if (d->norm_form == ALLOC_NORM_LN) keep(c, sv, hs); /* saved by the second LayerNorm */
    else F(c, hs);
    return y;
}

/* Its backward from the output's gradient dy (consumed); returns the input's. */
int alloc_step_form_layer_bwd(ctx *c, const dims *d, int dy, int *wg, int *nwg)
{
    double t = d->T, h = d->h, q = d->q;
    if (d->block == ALLOC_BLOCK_POST) { /* dy also flows to the residual */
        int gp2 = alloc_step_norm_bwd(c, d, t, h, -1);
        int gm = mlp_bwd(c, d, gp2, true, wg, nwg);
        int gsum = A(c, 2.0 * t * h);
        F(c, gm);
        F(c, dy);
        int gp1 = alloc_step_norm_bwd(c, d, t, h, -1);
        int go = A(c, 2.0 * t * q);
        wg[(*nwg)++] = A(c, 2.0 * h * q); /* o */
        F(c, gp1);
        int ga = attn_bwd(c, d, go, wg, nwg);
        int gin = A(c, 2.0 * t * h);
        F(c, ga);
        F(c, gsum);
        return gin;
    }
    if (d->block == ALLOC_BLOCK_PARALLEL) { /* the MLP's nodes run first (made last) */
        int gm = mlp_bwd(c, d, dy, false, wg, nwg);
        /* Falcon-40B's ln_mlp, made before the attention, runs after it */
        int gx2 = d->norms > 1 && !d->falcon_nda ? alloc_step_norm_bwd(c, d, t, h, gm) : -1;
        int go = A(c, 2.0 * t * q);
        wg[(*nwg)++] = A(c, 2.0 * h * q); /* o */
        int ga = attn_bwd(c, d, go, wg, nwg);
        if (d->falcon_nda) gx2 = alloc_step_norm_bwd(c, d, t, h, gm);
        if (gx2 < 0) { /* the two gradients of the shared norm's output summed */
            int gn = A(c, 2.0 * t * h);
            F(c, gm);
            F(c, ga);
            ga = gn;
        }
        int gx = alloc_step_norm_bwd(c, d, t, h, ga);
        int gin = A(c, 2.0 * t * h);
        F(c, gx);
        F(c, gx2);
        F(c, dy);
        return gin;
    }
    int gd = d->drop ? dropout_bwd(c, d, dy, false) : dy;
    int gn2 = mlp_bwd(c, d, gd, d->drop, wg, nwg);
    int gh = alloc_step_norm_bwd(c, d, t, h, gn2);
    int gsum = A(c, 2.0 * t * h); /* the residual's sum of gradients */
    F(c, gh);
    F(c, dy);
    int gdo = d->drop ? dropout_bwd(c, d, gsum, false) : -1;
    int go = A(c, 2.0 * t * q);
    wg[(*nwg)++] = A(c, 2.0 * h * q); /* o */
    F(c, gdo);
    int gn1 = attn_bwd(c, d, go, wg, nwg);
    int gx = alloc_step_norm_bwd(c, d, t, h, gn1);
    int gin = A(c, 2.0 * t * h);
    F(c, gx);
    F(c, gsum);
    return gin;
}
