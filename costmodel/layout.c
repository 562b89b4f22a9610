/*
 * layout.c — defaults, names, framework rules and rank placement for a layout.
 *
 * The rules are DESIGN.md's "Framework rules" (from the Megatron-FSDP and FSDP2 documentation)
 * plus the divisibility Megatron-LM asserts in megatron/training/arguments.py and
 * megatron/core/parallel_state.py. Each failure names the rule and the fix.
 */
#include "layout.h"

#include <string.h>
#include <strings.h>

training_spec training_default(void)
{
    return (training_spec){
        .seq_len = 4096,
        .global_batch = 1024,
        .attention = ATTENTION_FLASH,
        .overlap_grad_reduce = true,
        .overlap_param_gather = true,
        .grad_reduce_bf16 = false,
        .causal = true,
    };
}

layout layout_default(layout_framework fw)
{
    return (layout){
        .framework = fw,
        .tp = 1, .pp = 1, .dp = 1, .cp = 1, .ep = 1, .etp = 0, .vpp = 1, .mbs = 1,
        .sp = false,
        .sharding = fw == FRAMEWORK_FSDP2 ? SHARDING_FSDP : SHARDING_DISTOPT,
        .reshard_after_forward = true,
        .shard_size = 0,
        .recompute = RECOMPUTE_NONE,
        .recompute_layers = 0,
        .offload = false,
    };
}

static const char *const framework_names[] = {"fsdp2", "megatron"};
static const char *const sharding_names[] = {"ddp", "distopt", "fsdp"};
static const char *const recompute_names[] = {"none", "selective", "full"};

const char *layout_framework_name(layout_framework f) { return framework_names[f]; }
const char *layout_sharding_name(layout_sharding s) { return sharding_names[s]; }
const char *layout_recompute_name(layout_recompute r) { return recompute_names[r]; }

static int parse(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (s && strcasecmp(s, names[i]) == 0) return i;
    return -1;
}

int layout_parse_framework(const char *s, layout_framework *out)
{
    int i = parse(s, framework_names, 2);
    if (i >= 0) *out = (layout_framework)i;
    return i >= 0;
}

int layout_parse_sharding(const char *s, layout_sharding *out)
{
    int i = parse(s, sharding_names, 3);
    /* Accept the ZeRO names users also know these by. */
    if (i < 0 && s) {
        if (!strcasecmp(s, "zero1") || !strcasecmp(s, "optim")) i = SHARDING_DISTOPT;
        if (!strcasecmp(s, "zero3") || !strcasecmp(s, "optim_grads_params")) i = SHARDING_FSDP;
    }
    if (i >= 0) *out = (layout_sharding)i;
    return i >= 0;
}

int layout_parse_recompute(const char *s, layout_recompute *out)
{
    int i = parse(s, recompute_names, 3);
    if (i >= 0) *out = (layout_recompute)i;
    return i >= 0;
}

int layout_gpus(const layout *l) { return l->tp * l->pp * l->dp * l->cp; }
int layout_etp(const layout *l) { return l->etp > 0 ? l->etp : l->tp; }

int layout_microbatches(const layout *l, const training_spec *t)
{
    return t->global_batch / (l->dp * l->mbs);
}

int layout_shard_group(const layout *l)
{
    return l->shard_size > 0 ? l->shard_size : l->dp * l->cp;
}

int layout_expert_dp(const layout *l)
{
    return l->dp * l->cp * l->tp / (l->ep * layout_etp(l));
}

int layout_stage_layers(const model_spec *m, const layout *l, int stage)
{
    int base = m->layers / l->pp, rem = m->layers % l->pp;
    if (rem == 0) return base;
    /* Stage 0 holds the embedding and the most in-flight activations, the last stage the
     * logits: the extra layers go to stages 1..rem (Megatron's --decoder-first-pipeline-num-
     * layers lets users do the same). With rem == pp-1 every stage but the first gets one. */
    return base + ((stage >= 1 && stage <= rem) ? 1 : 0);
}

int layout_max_stage_layers(const model_spec *m, const layout *l)
{
    return m->layers / l->pp + (m->layers % l->pp ? 1 : 0);
}

cm_status training_check(const training_spec *t, char *err, size_t errlen)
{
    if (t->seq_len <= 0 || t->seq_len > 16 * 1024 * 1024)
        return cm_fail(err, errlen, CM_EINVAL,
                       "sequence length %d is out of range: give --seq between 1 and 16777216",
                       t->seq_len);
    if (t->global_batch <= 0 || t->global_batch > 100000000)
        return cm_fail(err, errlen, CM_EINVAL,
                       "global batch %d is out of range: give --gbs between 1 and 100000000 "
                       "sequences",
                       t->global_batch);
    return CM_OK;
}

cm_status layout_check(const model_spec *m, const system_spec *sys, const training_spec *t,
                       const layout *l, int gpus, char *err, size_t errlen)
{
    (void)sys;
    const int big = 1 << 20;
    if (l->tp < 1 || l->pp < 1 || l->dp < 1 || l->cp < 1 || l->ep < 1 || l->vpp < 1 ||
        l->mbs < 1 || l->etp < 0 || l->shard_size < 0 || l->recompute_layers < 0)
        return cm_fail(err, errlen, CM_EINVAL,
                       "layout sizes must be positive integers (tp %d, pp %d, dp %d, cp %d, ep "
                       "%d, vpp %d, mbs %d): fix the flag",
                       l->tp, l->pp, l->dp, l->cp, l->ep, l->vpp, l->mbs);
    if (l->tp > big || l->pp > big || l->dp > big || l->cp > big || l->ep > big ||
        l->vpp > big || l->mbs > big)
        return cm_fail(err, errlen, CM_EINVAL, "layout sizes above %d are absurd: fix the flag",
                       big);
    if (gpus > 0 && layout_gpus(l) != gpus)
        return cm_fail(err, errlen, CM_EINVAL,
                       "tp*pp*dp*cp = %d*%d*%d*%d = %d does not equal --gpus %d: choose sizes "
                       "whose product is the GPU count",
                       l->tp, l->pp, l->dp, l->cp, layout_gpus(l), gpus);
    if (m->heads % l->tp || m->kv_heads % l->tp)
        return cm_fail(err, errlen, CM_ERULE,
                       "tensor parallel size %d must divide the attention heads (%d) and KV "
                       "groups (%d): pick a tp that divides both",
                       l->tp, m->heads, m->kv_heads);
    if (l->pp > m->layers)
        return cm_fail(err, errlen, CM_ERULE,
                       "pipeline size %d exceeds the %d layers: use pp <= %d", l->pp, m->layers,
                       m->layers);
    if (l->vpp > 1) {
        if (l->pp < 2)
            return cm_fail(err, errlen, CM_ERULE,
                           "virtual pipeline stages (vpp %d) need pp >= 2: set --vpp 1 or raise "
                           "--pp",
                           l->vpp);
        if (m->layers % (l->pp * l->vpp))
            return cm_fail(err, errlen, CM_ERULE,
                           "the interleaved schedule needs layers (%d) divisible by pp*vpp = %d "
                           "(Megatron-LM arguments.py): change --vpp or --pp",
                           m->layers, l->pp * l->vpp);
    }
    if (t->global_batch % (l->dp * l->mbs))
        return cm_fail(err, errlen, CM_EINVAL,
                       "global batch %d is not divisible by dp*mbs = %d*%d: change --gbs, --dp "
                       "or --mbs",
                       t->global_batch, l->dp, l->mbs);
    int micro = layout_microbatches(l, t);
    if (l->vpp > 1 && micro % l->pp)
        return cm_fail(err, errlen, CM_ERULE,
                       "the interleaved schedule needs the micro-batch count (%d) divisible by "
                       "pp (%d) (Megatron-LM schedules.py): change --gbs or --mbs",
                       micro, l->pp);
    if (l->sp && l->tp == 1)
        return cm_fail(err, errlen, CM_ERULE,
                       "sequence parallel shards activations across the TP group and needs tp > "
                       "1: drop --sp or raise --tp");
    if (l->cp > 1 && t->seq_len % (2 * l->cp))
        return cm_fail(err, errlen, CM_ERULE,
                       "context parallel %d needs the sequence length (%d) divisible by 2*cp "
                       "(load-balanced causal split): change --seq or --cp",
                       l->cp, t->seq_len);
    if (l->ep > 1 && !model_is_moe(m))
        return cm_fail(err, errlen, CM_ERULE,
                       "expert parallel size %d needs an MoE model; '%s' is dense: use --ep 1",
                       l->ep, m->name);
    if (model_is_moe(m) && l->tp > 1 && !l->sp && l->framework == FRAMEWORK_MEGATRON)
        return cm_fail(err, errlen, CM_ERULE,
                       "Megatron requires sequence parallel when an MoE model uses tensor "
                       "parallelism (arguments.py): add --sp");
    if (model_is_moe(m) && m->experts % l->ep)
        return cm_fail(err, errlen, CM_ERULE,
                       "expert parallel size %d must divide the %d experts: pick a divisor",
                       l->ep, m->experts);
    if ((l->dp * l->cp * l->tp) % (l->ep * layout_etp(l)))
        return cm_fail(err, errlen, CM_ERULE,
                       "ep*etp = %d*%d must divide tp*cp*dp = %d (in Megatron the expert-"
                       "parallel group is carved out of the data-parallel ranks): lower --ep",
                       l->ep, layout_etp(l), l->dp * l->cp * l->tp);
    if (l->shard_size > 0) {
        if (l->sharding == SHARDING_DDP)
            return cm_fail(err, errlen, CM_ERULE,
                           "a shard group (HSDP) needs --sharding distopt or fsdp, not ddp");
        if ((l->dp * l->cp) % l->shard_size)
            return cm_fail(err, errlen, CM_ERULE,
                           "HSDP shard size %d must divide dp*cp = %d: pick a divisor",
                           l->shard_size, l->dp * l->cp);
    }
    if (l->offload) {
        if (l->pp != 1 || l->recompute != RECOMPUTE_NONE)
            return cm_fail(err, errlen, CM_ERULE,
                           "CPU offload is valid only with pipeline size 1 and no activation "
                           "recompute: set --pp 1 and --recompute none, or drop --offload");
        if (l->sharding != SHARDING_FSDP)
            return cm_fail(err, errlen, CM_ERULE,
                           "CPU offload moves FSDP shards to the host: use --sharding fsdp");
    }
    if (l->framework == FRAMEWORK_FSDP2) {
        if (l->tp != 1 || l->pp != 1 || l->ep != 1 || l->vpp != 1)
            return cm_fail(err, errlen, CM_ERULE,
                           "the FSDP2 trainer path has no TP/PP/EP (tp %d, pp %d, ep %d): use "
                           "--framework megatron for model parallelism, or set them to 1",
                           l->tp, l->pp, l->ep);
        if (l->sp)
            return cm_fail(err, errlen, CM_ERULE,
                           "FSDP2's sequence parallelism is Ulysses, given as --cp; Megatron "
                           "--sp does not apply: drop --sp");
        if (l->sharding != SHARDING_FSDP)
            return cm_fail(err, errlen, CM_ERULE,
                           "the FSDP2 trainer path shards with FSDP: use --sharding fsdp");
        if (l->recompute == RECOMPUTE_SELECTIVE)
            return cm_fail(err, errlen, CM_ERULE,
                           "FSDP2 gradient checkpointing recomputes whole layers: use "
                           "--recompute full or none");
        if (l->cp > 1 && (m->heads % l->cp || m->kv_heads % l->cp))
            return cm_fail(err, errlen, CM_ERULE,
                           "Ulysses sequence parallel %d must divide the heads (%d) and KV "
                           "groups (%d): pick a divisor",
                           l->cp, m->heads, m->kv_heads);
    } else {
        if (l->sharding == SHARDING_FSDP && l->pp > 1)
            return cm_fail(err, errlen, CM_ERULE,
                           "Megatron-FSDP (--use-megatron-fsdp) does not combine with pipeline "
                           "parallelism: use --pp 1, or --sharding distopt with pp");
        if (l->sharding != SHARDING_FSDP && l->offload)
            return cm_fail(err, errlen, CM_ERULE, "offload needs --sharding fsdp");
    }
    return CM_OK;
}

/* ---- placement ---- */

layout_group layout_group_place(const system_spec *sys, int size, int stride)
{
    layout_group g = {.size = size, .members_per_node = size, .spans_nodes = false};
    int gpn = sys->gpus_per_node;
    if (size <= 1) return g;
    if ((long)stride * size <= gpn) return g;
    g.spans_nodes = true;
    g.members_per_node = stride >= gpn ? 1 : gpn / stride;
    if (g.members_per_node > size) g.members_per_node = size;
    if (g.members_per_node < 1) g.members_per_node = 1;
    return g;
}

layout_group layout_tp_group(const system_spec *sys, const layout *l)
{
    return layout_group_place(sys, l->tp, 1);
}
layout_group layout_cp_group(const system_spec *sys, const layout *l)
{
    return layout_group_place(sys, l->cp, l->tp);
}
layout_group layout_dp_group(const system_spec *sys, const layout *l)
{
    /* Gradients reduce over dp x cp; cp sits inside dp in the rank order, so the combined
     * group is contiguous from stride tp. */
    return layout_group_place(sys, l->dp * l->cp, l->tp);
}
layout_group layout_ep_group(const system_spec *sys, const layout *l)
{
    /* Megatron builds expert groups from the tp*cp*dp ranks with etp innermost. */
    return layout_group_place(sys, l->ep, layout_etp(l));
}
layout_group layout_pp_group(const system_spec *sys, const layout *l)
{
    return layout_group_place(sys, l->pp, l->tp * l->cp * l->dp);
}
layout_group layout_shard_place(const system_spec *sys, const layout *l)
{
    return layout_group_place(sys, layout_shard_group(l), l->tp);
}
