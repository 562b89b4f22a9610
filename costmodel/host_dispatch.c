/*
 * host_dispatch.c — the host's issue time of an eager step as a floor under the GPU time (see
 * host_dispatch.h for the mechanism and where the constant comes from).
 *
 * The host issues a pass's launches one after another, each taking it host.eager_launch_s,
 * while the GPU drains its queue: a kernel starts when the host has issued it and the GPU has
 * finished the one before. A layer's launches go through that queue in execution order (norm,
 * q/k/v, RoPE, attention, o_proj, residual, norm, gate/up, activation, down, residual; the
 * backward in reverse, a recompute's forward first), so the host runs ahead during long GEMMs
 * and the short kernels after them catch up only as far as that lead goes. Two layers are run
 * and the second one's increment taken (the steady state of a deep stack). Its bounds, both
 * tried on bench/realruns: max(GPU, host) (a queue that never runs dry) under-predicts the
 * small runs by 15-26%; every launch at least the host's time over-predicts every GPU-bound run
 * by 10-25%. Launches the op list does not price on the GPU (the per-tensor copies of
 * FSDP2's all-gather copy-out, the separate Linear modules of a merged GEMM op, the attention
 * output's .contiguous()) count on the host side.
 */
#include "host_dispatch.h"

#include "cuda_graphs.h"
#include "dtensor_ops.h"
#include "dtensor_step_host.h"
#include "mcore_moe_host.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Parameter tensors of one decoder layer as the model code holds them (each a copy-out after
 * every all-gather at world size 1: split_with_sizes_copy per tensor; bench/realruns/results/
 * kernels-h100.json shows 21 device-to-device copies per Llama layer): q, k, v, o, two norms
 * (Gemma 2/3: four), Qwen3's q/k norms, the MLP's gate, up, down (the MoE block: router and
 * the experts' two 3D tensors, transformers 5). */
double host_dispatch_layer_tensors(const model_spec *m, bool moe)
{
    double n = 4 + model_layer_norms(m) + (m->qk_norm ? 2 : 0);
    if (moe) n += 1 + 2 + (m->shared_experts ? 3 : 0);
    else n += m->activation == MODEL_ACT_SWIGLU ? 3 : 2;
    return n + m->act_params; /* Apertus's xIELU: alpha_p and alpha_n, one-element tensors */
}

/* Linear modules behind one GEMM op of the recipe (the recipe merges q, k, v into "qkv" and
 * gate, up into "mlp_up"; Hugging Face and the native model run them as separate modules).
 * titan: torchtitan's "experts" is the routed experts' SwiGLU, three grouped GEMMs
 * (torchtitan/models/moe/moe.py at 003edbe5, _run_experts_grouped_mm: torch._grouped_mm for w1,
 * w3 and w2), each with its dgrad and wgrad in the backward. */
static double modules_of(const recipe_op *o, const model_spec *m, bool titan)
{
    if (!strcmp(o->name, "qkv")) return 3;
    if (titan && !strcmp(o->name, "experts")) return m->activation == MODEL_ACT_SWIGLU ? 3 : 2;
    if ((!strcmp(o->name, "mlp_up") || !strcmp(o->name, "shared_up")) &&
        m->activation == MODEL_ACT_SWIGLU)
        return 2;
    return 1;
}

void host_dispatch_op_launches(const recipe_op *o, const layout *l, double *fwd, double *bwd,
                               double *recompute)
{
    double of = 0, ob = 0;
    switch (o->kind) {
    case RECIPE_GEMM: of = 1, ob = 2; break;
    case RECIPE_ATTENTION: of = 1, ob = 4; break;
    case RECIPE_ELEMENTWISE:
        if (o->phase == RECIPE_FWD) of = o->launches;
        else ob = o->launches;
        break;
    case RECIPE_FSDP_GATHER:
        of = 1, ob = l->reshard_after_forward ? 1 : 0;
        break;
    case RECIPE_FSDP_REDUCE: ob = 1; break;
    default:
        of = o->fwd_s > 0 ? 1 : 0, ob = o->bwd_s > 0 ? 1 : 0;
        break;
    }
    *fwd = of;
    *bwd = ob;
    *recompute = !o->recompute ? 0 : o->kind == RECIPE_ELEMENTWISE ? o->recompute_launches : of;
}

void host_dispatch_launches(const recipe *r, const layout *l, double *fwd, double *bwd,
                            double *recompute)
{
    double f = 0, b = 0, re = 0;
    for (int i = 0; i < r->n_ops; i++) {
        double of, ob, orc;
        host_dispatch_op_launches(&r->op[i], l, &of, &ob, &orc);
        f += of;
        b += ob;
        re += orc;
    }
    *fwd = f;
    *bwd = b;
    *recompute = re;
}

/* A torch.compile'd DTensor TP step (torchtitan compile with TP > 1): its blocks' host time is
 * measured per block (compiled_layer_s); its loss head, embedding, clip and optimizer stay eager
 * (parallel_run.py and torchtitan compile the decoder blocks; torchtitan's vocab-parallel loss is
 * not compiled, layout.h layout_loss_compiled) and are priced as in an eager DTensor step. */
static bool compiled_tp_applies(const system_spec *sys, const layout *l)
{
    return l->compile && dtensor_tp_applies(l) && sys->host_compiled_dtensor_fwd_layer_s > 0 &&
           sys->host_eager_launch_s > 0;
}

bool host_dispatch_applies(const system_spec *sys, const layout *l)
{
    /* under torchtitan's CUDA graphs the forward + loss + backward is one replay: no launch
     * goes through the host's issue queue (cuda_graphs.h prices the replay) */
    if (!layout_is_pytorch(l) || sys->host_eager_launch_s <= 0 || cuda_graphs_on(l)) return false;
    return !l->compile || compiled_tp_applies(sys, l);
}


/* ---- the issue queue of one pass, in execution order ---------------------------------------- */

typedef struct {
    double host, gpu; /* when the host has issued its last launch; when the GPU finishes */
    double c;         /* host time per launch of what is pushed now */
    double *rec;      /* NULL, or where the host time of what is pushed now is added up
                       * (host_dispatch_host_of: the same charges, per op) */
} queue;

/* The host spends s of its own time (no launch). */
static void q_host(queue *q, double s)
{
    q->host += s;
    if (q->rec) *q->rec += s;
}

typedef struct {
    double plain;          /* per launch on plain tensors (host.eager_launch_s) */
    double inner;          /* per launch C++ issues inside a dispatch after its first
                            * (host.eager_inner_launch_s; plain where the preset has none) */
    double dt_fwd, dt_bwd; /* per DTensor dispatch, forward and backward */
    bool dtensor;          /* torchtitan TP: the plan's ops run on DTensors (dtensor_ops.h) */
    bool ep_sync;          /* torchtitan EP: the forward waits for the split sizes (q_sync) */
    bool titan;            /* torchtitan's model code (its grouped experts: modules_of) */
    double ring_fwd, ring_bwd; /* PyTorch's ring attention: the host time of the layer's
                                * attention call, forward and backward (0: no ring) */
    double sac_fwd, sac_replay; /* torchtitan's op-level SAC in an eager block: extra host time
                                 * per forward kernel in the forward, and per forward kernel in
                                 * the backward's replay of the forward (0: none; costs_of) */
    double ckpt_fwd, ckpt_bwd;  /* torch.utils.checkpoint around a DTensor TP block: host time
                                 * per saved tensor, forward and backward (0: none; costs_of) */
    double ckpt_detach;         /* and per DTensor detach of a saved input's unpack (costs_of) */
} host_costs;

/* The host waits for the GPU (a device-to-host copy it needs the value of): its lead is gone,
 * and the GPU idles from its last kernel until the host issues the next one. The copy's own
 * latency (a few microseconds) is left out. */
static void q_sync(queue *q)
{
    if (q->gpu > q->host) q->host = q->gpu;
    q->gpu = q->host;
}

/* n identical launches of g seconds each: the last ends at the latest of the GPU's own work
 * after what was queued, the first launch's issue plus all of them, and the last launch's
 * issue plus its own time. */
static void q_push(queue *q, double n, double g)
{
    if (n <= 0) return;
    double end = q->gpu + n * g;
    double a = q->host + q->c + n * g, b = q->host + n * q->c + g;
    if (a > end) end = a;
    if (b > end) end = b;
    q->gpu = end;
    q->host += n * q->c;
    if (q->rec) *q->rec += n * q->c;
}

static bool starts(const char *name, const char *prefix)
{
    return strncmp(name, prefix, strlen(prefix)) == 0;
}

/* The slot of the forward an op's launches run in (execution order of a Llama-style decoder
 * layer: norm, q/k/v, q/k norms and RoPE, attention, o_proj, residual, norm, gate/up,
 * activation, down, residual); -1: not a compute-stream kernel of the layer. Norms and residual
 * adds are split evenly over their two places. */
enum { S_NORM1, S_QKV, S_ROPE, S_ATTN, S_OUT, S_RES1, S_NORM2, S_UP, S_ACT, S_DOWN, S_RES2, S_N };

static int slot_gemm(const char *n)
{
    if (!strcmp(n, "attn_out")) return S_OUT;
    if (!strcmp(n, "mlp_up") || !strcmp(n, "router") || !strcmp(n, "experts") ||
        !strcmp(n, "shared_up"))
        return S_UP;
    if (!strcmp(n, "mlp_down") || !strcmp(n, "shared_down")) return S_DOWN;
    return S_QKV; /* qkv, q, q_down, q_up, kv_down, kv_up */
}

static int slot_elementwise(const char *n, bool *split)
{
    *split = false;
    if (starts(n, "rmsnorm.") || starts(n, "rms_norm.") || starts(n, "layernorm")) {
        *split = true;
        return S_NORM1;
    }
    if (starts(n, "residual.") || starts(n, "dropout") || starts(n, "grad.add")) {
        *split = true;
        return S_RES1;
    }
    if (starts(n, "qknorm.") || starts(n, "rope") || starts(n, "repeat_kv")) return S_ROPE;
    return S_ACT; /* mlp., experts., shared., moe. */
}

/* Launches (n) and GPU time per launch (g) of op o in the forward (bwd false) or backward. */
static void op_launches(const recipe_op *o, double modules, bool bwd, double *n, double *g)
{
    *n = 0, *g = 0;
    double t = 0;
    switch (o->kind) {
    case RECIPE_GEMM: {
        /* >1: hf_experts.h's grouped kernels; else the modules the op stands for */
        double k = o->launches > 1 ? o->launches : modules; /* modules_of(o, ...) */
        *n = bwd ? 2 * k : k;
        t = bwd ? o->fwd_bwd_s - o->fwd_s : o->fwd_s;
        break;
    }
    case RECIPE_ATTENTION:
        *n = bwd ? 4 : 1;
        t = bwd ? o->bwd_s : o->fwd_s;
        break;
    case RECIPE_ELEMENTWISE:
        if ((o->phase == RECIPE_BWD) != bwd) return;
        *n = o->launches;
        t = bwd ? o->bwd_s : o->fwd_s;
        break;
    default:
        return;
    }
    *g = *n > 0 ? t / *n : 0;
}

/* What a pass needs of each op that does not change between passes, classified once per
 * layer (the names' compares were most of this file's time in a search): its forward slot,
 * whether it splits over two places, and the DTensor facts. */
typedef struct {
    signed char slot;  /* slot_gemm / S_ATTN / slot_elementwise */
    bool split;        /* a norm or residual add: its launches split over two places */
    bool dtensor;      /* dtensor_layer_op */
    bool router;       /* the MoE router (torchtitan EP's split-size sync after it) */
    bool ring_merge;   /* PyTorch's ring attention's merge kernels (cp.*): at the attention's
                        * place, their host time inside the ring call's (host_costs.ring_*) */
    double modules;    /* modules_of: the Linear modules behind a GEMM op */
} op_class;

/* What classify reads of an op's name and kind, which are all it depends on besides the
 * host's costs and the model (speed21: the names' compares, ~2% of DeepSeek-V3's search at
 * 16384 GPUs, made once per name instead of once per op of every pacing). An op's name is a
 * static string (recipe_op.name, elementwise_kernel.name), so its address stands for it: each
 * thread keeps the facts of the names it met by address, and a slot taken by another address
 * or kind is computed again. modules_of reads the model and torchtitan besides the name, so
 * it is kept for both of its model-dependent answers (titan off and on) with the activation it
 * was computed for. */
typedef struct {
    const char *name;    /* NULL: empty slot */
    recipe_kind kind;
    int act;             /* the model's activation the modules were computed for */
    signed char slot;
    bool split, dtensor_op, router, cp;
    double modules[2];   /* modules_of with titan false, true */
} name_facts;

enum { NAME_FACTS_SLOTS = 256 };

static const name_facts *name_facts_of(const recipe_op *o, const model_spec *m)
{
    static _Thread_local name_facts memo[NAME_FACTS_SLOTS];
    unsigned long a = (unsigned long)(uintptr_t)o->name;
    name_facts *f = &memo[((a >> 3) ^ (a >> 11) ^ (unsigned long)o->kind) & (NAME_FACTS_SLOTS - 1)];
    if (f->name == o->name && f->kind == o->kind && f->act == (int)m->activation) return f;
    f->name = o->name;
    f->kind = o->kind;
    f->act = (int)m->activation;
    f->split = false;
    if (o->kind == RECIPE_GEMM) f->slot = (signed char)slot_gemm(o->name);
    else if (o->kind == RECIPE_ATTENTION) f->slot = S_ATTN;
    else f->slot = (signed char)slot_elementwise(o->name, &f->split);
    f->dtensor_op = dtensor_layer_op(o);
    f->router = !strcmp(o->name, "router");
    f->cp = starts(o->name, "cp.");
    f->modules[0] = modules_of(o, m, false);
    f->modules[1] = modules_of(o, m, true);
    return f;
}

static void classify(const recipe *r, const model_spec *m, const host_costs *hc, op_class *cl)
{
    for (int i = 0; i < r->n_ops; i++) {
        const recipe_op *o = &r->op[i];
        const name_facts *f = name_facts_of(o, m);
        op_class *c = &cl[i];
        c->split = f->split;
        c->slot = f->slot;
        c->dtensor = hc->dtensor && f->dtensor_op;
        c->router = f->router;
        c->ring_merge = hc->ring_fwd > 0 && o->kind == RECIPE_ELEMENTWISE && f->cp;
        if (c->ring_merge) {
            c->slot = S_ATTN;
            c->split = false;
        }
        c->modules = f->modules[hc->titan ? 1 : 0];
    }
}

/* One pass of one layer through the queue: the forward slots in order, or the backward in the
 * reverse order; only_recompute: the ops a recompute re-runs. Each op's launches, time and
 * host cost are taken once, then the slots walked over them in the ops' order. */
static void run_pass(queue *q, const recipe *r, const host_costs *hc,
                     const op_class *cl, bool bwd, bool only_recompute, host_dispatch_host *rec)
{
    int ph = bwd ? RECIPE_BWD : only_recompute ? RECIPE_RECOMPUTE : RECIPE_FWD;
    double cdt = bwd ? hc->dt_bwd : hc->dt_fwd;
    /* op-level SAC (costs_of): the forward's kernels each cost the policy's dispatch on top; the
     * recompute replays every forward op through it, the saved ones (no kernel: host time only,
     * replay[i]) as well as the re-run ones, each at sac_replay per forward kernel */
    double sac_add = !bwd && !only_recompute ? hc->sac_fwd : 0;
    bool sac_replay = only_recompute && hc->sac_replay > 0;
    double ns[RECIPE_MAX_OPS], gs[RECIPE_MAX_OPS];
    bool replay[RECIPE_MAX_OPS];
    int live[RECIPE_MAX_OPS], n_live = 0; /* the ops with launches in this pass, in order */
    for (int i = 0; i < r->n_ops; i++) {
        const recipe_op *o = &r->op[i];
        if (only_recompute && !o->recompute && !sac_replay) continue;
        double n, g;
        op_launches(o, cl[i].modules, bwd, &n, &g);
        replay[i] = only_recompute && !o->recompute;
        if (only_recompute && o->recompute && o->kind == RECIPE_ELEMENTWISE)
            n = o->recompute_launches;
        if (n <= 0) continue;
        ns[i] = n;
        gs[i] = g;
        live[n_live++] = i;
    }
    /* the live ops of each slot, in the ops' order (speed21): an op runs at its slot, a split
     * one at its second place too (S_NORM2, S_RES2); walking each slot's own list makes the
     * same calls in the same order as walking every live op at every slot and skipping the
     * others (whose q->c and q->rec settings were dead: each push sets its own first) */
    int at[S_N + 1] = {0}, by_slot[2 * RECIPE_MAX_OPS];
    int n_in = 0; /* the live ops with a slot (every kind op_launches gives launches has) */
    for (int j = 0; j < n_live; j++) {
        const op_class *c = &cl[live[j]];
        if (c->slot < 0 || c->slot >= S_N) continue; /* matched no slot: never ran */
        live[n_in++] = live[j];
        at[c->slot + 1]++;
        if (c->split) at[c->slot + (c->slot == S_NORM1 ? S_NORM2 - S_NORM1 : S_RES2 - S_RES1) + 1]++;
    }
    for (int s = 0; s < S_N; s++) at[s + 1] += at[s];
    int fill[S_N];
    memcpy(fill, at, sizeof fill);
    for (int j = 0; j < n_in; j++) {
        const op_class *c = &cl[live[j]];
        by_slot[fill[c->slot]++] = live[j];
        if (c->split)
            by_slot[fill[c->slot + (c->slot == S_NORM1 ? S_NORM2 - S_NORM1 : S_RES2 - S_RES1)]++] =
                live[j];
    }
    for (int step = 0; step < S_N; step++) {
        int s = bwd ? S_N - 1 - step : step;
        /* SequenceParallel's input hook and PrepareModuleInput's all-gather around each norm */
        if (hc->dtensor && (s == S_NORM1 || s == S_NORM2)) {
            q->c = cdt;
            q->rec = rec ? &rec->pass_s[ph] : NULL;
            q_push(q, dtensor_norm_dispatches(), 0);
        }
        for (int j = at[s]; j < at[s + 1]; j++) {
            int i = by_slot[j];
            const recipe_op *o = &r->op[i];
            const op_class *c = &cl[i];
            double n = ns[i], g = gs[i];
            q->c = (c->dtensor ? cdt : hc->plain) + sac_add;
            if (sac_replay) q->c = hc->sac_replay;
            /* launches C++ issues inside one op's dispatch (cub's sort passes, index_put_'s
             * kernels: elementwise_kernel.inner) cost the host a launch, not an eager op each:
             * the op's host time spread over its launches */
            if (o->kind == RECIPE_ELEMENTWISE && o->inner_launches > 0 && !c->dtensor &&
                !sac_replay) {
                double in = o->inner_launches < n ? o->inner_launches : n;
                q->c = (q->c * (n - in) + hc->inner * in) / n;
            }
            /* torchtitan's per-expert loop: cuBLAS's heuristic for the GEMM shapes a step's
             * new row counts make (expert_loop.h); a recompute repeats the forward's shapes */
            if (o->kind == RECIPE_GEMM && !only_recompute)
                q->c += bwd ? o->host_extra_bwd_s : o->host_extra_fwd_s;
            q->rec = rec ? &rec->op_s[ph][i] : NULL;
            int slot = c->slot;
            bool split = c->split;
            /* PyTorch's ring: the attention call's measured host time covers its SDPA calls,
             * exchanges, merges and accumulators (cp_ring_torch.h's kernels), which run at the
             * attention's place in the layer (classify) and add no host time of their own. */
            double ring = bwd ? hc->ring_bwd : hc->ring_fwd;
            if (ring > 0 && o->kind == RECIPE_ATTENTION) q->c = ring / n;
            else if (c->ring_merge) q->c = 0;
            if (split && (s == slot || s == slot + (slot == S_NORM1 ? S_NORM2 - S_NORM1
                                                                    : S_RES2 - S_RES1))) {
                double half = n / 2; /* whole launches: the first place takes the odd one */
                double here = s == slot ? n - (double)(long)half : (double)(long)half;
                if (replay[i]) q_host(q, here * q->c);
                else q_push(q, here, g);
            } else if (!split && s == slot && replay[i]) { /* the attention: its copy too */
                q_host(q, (n + (o->kind == RECIPE_ATTENTION ? 1 : 0)) * q->c);
            } else if (!split && s == slot) {
                q_push(q, n, g);
                if (o->kind == RECIPE_ATTENTION) { /* the output's copy: a plain launch */
                    q->c = sac_replay ? hc->sac_replay : hc->plain + sac_add;
                    q_push(q, 1, 0);
                }
                /* EP: the all-to-all's split sizes are copied to the host after the router
                 * (torchtitan/distributed/expert_parallel.py at 31f33c14, _token_dispatch:
                 * .to("cpu", non_blocking=False) "would incur a device-to-host sync", then
                 * .tolist() for all_to_all_single_autograd); the backward reuses them. */
                if (hc->ep_sync && !bwd && c->router) {
                    q_sync(q);
                    if (rec) rec->sync[ph][i] = true; /* plan measure waits there too */
                }
                if (hc->dtensor && o->kind == RECIPE_GEMM) /* decomposition and hooks */
                    q_push(q, dtensor_linear_dispatches(o, c->modules, bwd), 0);
            }
        }
    }
    /* DTensor TP, torch's non-reentrant checkpoint stopping early: the op whose saved inputs
     * are the block's last (recipe_op.recompute_stops_here, after every re-run op) still runs
     * its input hook and the Linear's decomposition up to the GEMM (dtensor_ops.c) */
    if (only_recompute && !sac_replay && hc->dtensor)
        for (int i = 0; i < r->n_ops; i++) {
            if (!r->op[i].recompute_stops_here) continue;
            q->c = cdt;
            q->rec = rec ? &rec->op_s[ph][i] : NULL;
            q_push(q, dtensor_linear_stop_dispatches(&r->op[i], cl[i].modules), 0);
        }
    q->c = hc->plain;
    q->rec = NULL;
}

/* FSDP2's launches of one unit per pass: copy-in, the collective and a copy-out per tensor for
 * a gather; the reduce-scatter's copy-in and collective, after the host's own time in the
 * copy-in (chunk_cat's metadata, recipe.host_rs_copy_in_s); with the GPU time of the
 * compute-stream copies (the recipe's fsdp.copy_out / fsdp.rs_copy_in ops). */
static void run_fsdp(queue *q, const recipe *r, const model_spec *m, const layout *l, bool bwd,
                     bool moe, host_dispatch_host *rec)
{
    if (l->sharding != SHARDING_FSDP) return;
    double out_s = 0, rs_s = 0;
    for (int i = 0; i < r->n_ops; i++) {
        if (r->op[i].kind != RECIPE_FSDP_COPY) continue;
        if (!strcmp(r->op[i].name, "fsdp.copy_out")) out_s = bwd ? r->op[i].bwd_s : r->op[i].fwd_s;
        else if (bwd) rs_s += r->op[i].bwd_s;
    }
    double tensors = host_dispatch_layer_tensors(m, moe);
    /* On one GPU the copy-in casts each fp32 parameter to bf16 with its own launch (a
     * bfloat16_copy kernel per tensor per gather: 22 per Llama-3.2-1B layer, forward and
     * backward, against the model's 2 RMSNorm casts per pass, bench/realruns/results/
     * kernels-h100.json; 357 in SmolLM2-360M's forward = 32 x (9 + 2) + 5, bench/results/
     * sgpu_2026-11-27/phases.json) where several GPUs run the foreach copy of fsdp_copies.h.
     * Their GPU time is the unshard's (fsdp.copy_out at one rank: on the compute stream,
     * fsdp_copies.h), with the copies that follow them. */
    double casts = layout_gpus(l) == 1 ? tensors : 0;
    /* The copy-in's and the all-gather's own launches (2); none at one GPU, where FSDP2's
     * unshard skips the all-gather (fsdp_copies.h): its pre-forward launched 146 casts and 146
     * copies and nothing else for Llama-3.2-1B's 16 x 9 + 2 tensors (bench/results/
     * host23_2026-11-29, the profiled step of call1). */
    if (!bwd || l->reshard_after_forward) {
        q->rec = rec ? (bwd ? &rec->gather_bwd_s : &rec->gather_fwd_s) : NULL;
        q_push(q, (casts > 0 ? 0 : 2) + casts, 0);
        q_push(q, tensors, out_s / tensors);
    }
    if (bwd) {
        q->rec = rec ? &rec->reduce_s : NULL;
        q_host(q, r->host_rs_copy_in_s); /* chunk_cat's host-side metadata (fsdp_copies.h) */
        q_push(q, 2, rs_s / 2);
    }
    q->rec = NULL;
}

/* Host time per launch: plain tensors, and under DTensor tensor parallelism (torchtitan with
 * TP > 1: the ops dtensor_ops.h lists run on DTensors) the measured host time per DTensor
 * dispatch of the system (below: sharding propagation and the wrapper's unwrap/rewrap per op,
 * more autograd work per op in the backward), for each DTensor op and each dispatch without a
 * kernel that the plan adds (dtensor_ops.c). FSDP2's own copies stay plain-tensor work. */
static host_costs costs_of(const system_spec *sys, const layout *l)
{
    double c = sys->host_eager_launch_s;
    double in = sys->host_eager_inner_launch_s > 0 ? sys->host_eager_inner_launch_s : c;
    host_costs hc = {c, in, c, c, false, false, l->framework == FRAMEWORK_TORCHTITAN, 0, 0, 0, 0, 0, 0, 0};
    /* torchtitan's op-level selective checkpointing in an eager block (recipe_recompute.c
     * titan_sac_recomputes): torch.utils.checkpoint's selective-checkpoint dispatch mode runs
     * the policy in Python for every aten op of the block's forward, and the backward replays
     * the whole forward through it (the saved outputs fetched, the rest re-run). Measured as
     * the host's extra time per forward kernel against the same eager block (bench/
     * compiled_kernels.py --modes eager,sac, bench/results/sac14_2026-11-28). A compiled block
     * applies the policy at trace time (no per-op dispatch; pace's compiled branch). */
    if (hc.titan && l->recompute == RECOMPUTE_SELECTIVE && !l->compile) {
        hc.sac_fwd = sys->host_sac_fwd_launch_s;
        hc.sac_replay = sys->host_sac_replay_launch_s;
    }
    /* PyTorch's ring attention (torchtitan's context parallelism, layer_recipe.c prices its
     * kernels): the host time of one layer's attention call through the ring, measured at CP
     * 2 and 4 as call + step x cp (bench/cp_ring_micro.py, bench/results/
     * cp_ring_host_2026-11-27: the Python of torch's _templated_ring_attention, its rotater
     * and merger, and their launches). */
    if (hc.titan && l->cp > 1 && layout_cp_is_ring(l) && sys->host_cp_ring_fwd_call_s > 0) {
        hc.ring_fwd = sys->host_cp_ring_fwd_call_s + sys->host_cp_ring_fwd_step_s * l->cp;
        hc.ring_bwd = sys->host_cp_ring_bwd_call_s + sys->host_cp_ring_bwd_step_s * l->cp;
    }
    if (!dtensor_tp_applies(l)) return hc;
    hc.dtensor = true;
    /* torchtitan's full activation checkpointing of an eager block (checkpoint_wrapper:
     * torch.utils.checkpoint, non-reentrant): its saved-tensor hooks run in Python for every
     * tensor the block's autograd saves, the pack hook in the forward (a holder and the
     * tensor's metadata), the recompute's pack hook and the unpack hook in the backward
     * (ckpt_saved_tensors). Timed in real TP 2 steps (bench/results/tpck27_2026-11-29) */
    if (l->recompute == RECOMPUTE_FULL && !l->compile) {
        hc.ckpt_fwd = sys->host_ckpt_fwd_saved_tensor_s;
        hc.ckpt_bwd = sys->host_ckpt_bwd_saved_tensor_s;
        hc.ckpt_detach = sys->host_ckpt_dtensor_detach_s;
    }
    /* Measured on real DTensor TP layers (host.eager_dtensor_*_s and *_rank_s; bench/results/
     * tphost_2026-11-27/README.md, bench/tphost_layer_cost.py): the host's clock at each
     * block's forward start and at each block input's gradient (parallel_run.py --host-split),
     * steady-state blocks of Llama-3.1-8B at TP 2 and 4 on two H100 x4 machines, less the
     * layer's plain launches at c, over the 45 forward / 68 backward DTensor dispatches
     * dtensor_ops.c counts for that layer: the median per TP degree, and the line through TP 2
     * and 4 (dispatch + rank x tp: the backward's per-dispatch cost grows by a third from TP 2
     * to 4 in every pair of runs). It replaces the toy chain's DTensor/plain ratio
     * (bench/dtensor_dispatch.py) times c: c is the per-kernel time of a Hugging Face step
     * (module calls included), and the toy's ratio over a bare op applied to it priced a
     * backward dispatch at 1.5-2x what the real layer takes and a forward one at 0.6-0.7x. The
     * ratios stay for presets without a real-layer figure. */
    if (sys->host_dtensor_fwd_s > 0)
        hc.dt_fwd = sys->host_dtensor_fwd_s + sys->host_dtensor_fwd_rank_s * l->tp;
    else if (sys->host_dtensor_fwd_ratio > 0)
        hc.dt_fwd = c * sys->host_dtensor_fwd_ratio;
    if (sys->host_dtensor_bwd_s > 0)
        hc.dt_bwd = sys->host_dtensor_bwd_s + sys->host_dtensor_bwd_rank_s * l->tp;
    else if (sys->host_dtensor_bwd_ratio > 0)
        hc.dt_bwd = c * sys->host_dtensor_bwd_ratio;
    return hc;
}

/* FSDP2 sharding over more than one rank beside DTensor TP (torchtitan's dp_shard x tp): the
 * host issues the same layer more slowly than at dp 1, where the DTensor figures of costs_of
 * were measured. Measured on 4 x H100 hosts (bench/results/mgpu9_2026-11-28/README.md): the
 * host's clock per decoder block (parallel_run.py --host-split, unprofiled, Llama-3.2-3B cut
 * to 8 layers, TP 2, seq 8192, bench/results/tphost_2026-11-27 ho-tp2-l3bL8-s8k vs
 * ho-tp2dp2-l3bL8-s8k, the same machine and call): forward 6.13 -> 9.27 ms (x1.51),
 * backward 10.60 -> 13.70 ms (x1.29). The profiled Mistral-7B pair of mgpu9 (TP 2 at dp 1 and
 * 2, bench/realruns/trace_ops.py) says where: the same ops with the same call counts take 1.61x
 * the self time on Python's main thread (forward, clip, optimizer: plain ops and kernel
 * launches as well as DTensor dispatches) and 1.05x on the autograd thread, whose backward
 * grows by FSDP2's own sharded work (the pre-backward all-gather's copy-out over DTensor
 * parameters, the reduce-scatter's chunk_cat). The block forward there 7.00 -> 11.74 ms and
 * backward 17.2 -> 19.3 ms (profiled). 1 where the preset has no figure (the H200 host ran
 * its TP 2 x DP 2 layout faster than TP 2, bench/results/mgpu_2026-11-27 full_h200x4). */
static double fsdp_tp_scale(const system_spec *sys, const layout *l, bool bwd)
{
    double s = bwd ? sys->host_fsdp_tp_bwd_scale : sys->host_fsdp_tp_fwd_scale;
    if (s <= 0 || !dtensor_tp_applies(l) || l->sharding != SHARDING_FSDP ||
        layout_shard_group(l) <= 1)
        return 1.0;
    return s;
}

static host_costs scaled(host_costs hc, double k)
{
    hc.plain *= k;
    hc.inner *= k;
    hc.dt_fwd *= k;
    hc.dt_bwd *= k;
    hc.ring_fwd *= k;
    hc.ring_bwd *= k;
    hc.sac_fwd *= k;
    hc.sac_replay *= k;
    hc.ckpt_fwd *= k;
    hc.ckpt_bwd *= k;
    hc.ckpt_detach *= k;
    return hc;
}

/* The host time of one compiled decoder block (torchtitan compile with TP > 1), forward (bwd
 * false) or backward: host.compiled_dtensor_*_layer_s + _rank_s x tp. Measured with the real
 * runner at a GPU-free shape (bench/tp11_compiled_host.py on parallel_run.py --compile
 * --host-split --seq 256 records, bench/results/tp11_2026-11-28): the host's clock per block,
 * steady state, Qwen2.5-7B cut to 8 layers, TP 2 and 4 on two H200 x4 hosts. What it holds (the
 * profiled compiled step of that folder and tt10's, FSDP:: and "Torch-Compiled Region" host
 * ranges): FSDP2's pre-forward hook per block (its all-gather over the block's DTensor
 * parameters), the compiled forward's call (Dynamo's guards, AOTAutograd's runtime wrapper that
 * unwraps every DTensor parameter and input, Inductor's generated launches and the functional
 * collectives' calls); backward the compiled backward's call, FSDP2's pre-backward and
 * post-backward (reshard, the reduce-scatter's chunk_cat, the norm weights' Partial -> Replicate
 * all-reduces under SequenceParallel). The eager DTensor dispatch counts of dtensor_ops.c do not
 * apply inside a compiled block (one graph, no per-op DTensor dispatch). With FSDP2 sharding over
 * more than one rank the hooks' sharded work grows as in an eager step (fsdp_tp_scale: the
 * mechanism is FSDP2's own, outside the compiled graph). */
static double compiled_layer_s(const system_spec *sys, const layout *l, bool bwd)
{
    double s = bwd ? sys->host_compiled_dtensor_bwd_layer_s + sys->host_compiled_dtensor_bwd_layer_rank_s * l->tp
                   : sys->host_compiled_dtensor_fwd_layer_s + sys->host_compiled_dtensor_fwd_layer_rank_s * l->tp;
    return s;
}

/* Tensors a dense decoder block's forward saves for its backward, as autograd packs them (each a
 * call of torch.utils.checkpoint's pack hook, and in the backward of its unpack hook and of the
 * recompute's pack hook), by the derivative formulas of pytorch's tools/autograd/
 * derivatives.yaml (the tensors each backward formula reads): every Linear's mm its input and
 * its weight (2 a module); an RMSNorm (_fused_rms_norm) its input, weight and rstd (3 a norm;
 * native_layer_norm 5: input, weight, bias, mean, rstd); the attention core (SDPA's flash /
 * cudnn / efficient kernels) query, key, value, output, logsumexp and the philox seed and offset
 * (7); RoPE's complex product its other operand (the table: the activation's own factor needs
 * no gradient of the table, 1 each for q and k); SiLU its input (1) and the gate's product both
 * factors (2). Casts, views, copies and residual adds save none. A Llama block: 7 x 2 + 2 x 3 +
 * 7 + 2 + 1 + 2 = 32, what the timed hooks counted on Llama-3.1-8B at TP 2 (256 pack calls in 8
 * blocks, bench/results/tpck27_2026-11-29/x2b). Qwen3's native q/k norms are _fused_rms_norm too
 * (rms_norm.fused, 2 more: 38 a block). torchtitan 2024's unfused RMSNorm (rmsnorm.*, Qwen3's
 * qknorm.*: LlamaRMSNorm's eager ops) 6 a norm: pow its input, rsqrt its result (the recipe's mean
 * kernel carries the [T, 1] chain), x * rstd and weight * x both factors; its casts none. MoE
 * blocks count none (not measured).
 * With dt_inputs: only the saved inputs of the block's DTensor ops (dtensor_layer_op: the Linears'
 * mm 2, RMSNorm's input and weight 2, LayerNorm's 3, the unfused RMSNorm's 5; not the norms'
 * rstd / mean, outputs), each
 * unpacked with a DTensor detach that the block without hooks does not run: autograd returns a
 * saved input as is, and wraps an unpack hook's tensor anew (torch/csrc/autograd/saved_variable.cpp
 * SavedVariable::unpack, make_variable: shallow_copy_and_detach, for a tensor subclass a detach
 * through Python dispatch). 18 a Llama block: of the 38 DTensor detaches the checkpointed backward
 * adds (49 against 11, counts-llama-3.1-8b-L8.json) the other 20 are the recompute's pack hook's
 * own (torch/utils/checkpoint.py _recomputation_hook: x.detach() if x.requires_grad), inside the
 * timed host.ckpt_bwd_saved_tensor_s (bench/results/tpck27b_2026-11-29). */
static double unfused_rms_norm_saved(const char *op, bool dt_inputs)
{
    if (!strcmp(op, "pow")) return 1;
    if (!strcmp(op, "mean")) return dt_inputs ? 0 : 1; /* rsqrt's result: an output */
    return !strcmp(op, "mul_rstd") || !strcmp(op, "mul_weight") ? 2 : 0;
}

static double ckpt_saved_tensors(const recipe *r, const op_class *cl, bool dt_inputs)
{
    double n = 0;
    for (int i = 0; i < r->n_ops; i++) {
        const recipe_op *o = &r->op[i];
        if (o->phase != RECIPE_FWD) continue;
        if (o->kind == RECIPE_GEMM) n += 2 * cl[i].modules;
        else if (dt_inputs && !dtensor_layer_op(o)) continue;
        else if (o->kind == RECIPE_ATTENTION) n += 7;
        else if (o->kind != RECIPE_ELEMENTWISE) continue;
        else if (starts(o->name, "rms_norm.")) n += (dt_inputs ? 2.0 : 3.0) * o->launches;
        else if (starts(o->name, "rmsnorm.") || starts(o->name, "qknorm."))
            n += unfused_rms_norm_saved(strchr(o->name, '.') + 1, dt_inputs) * o->launches;
        else if (starts(o->name, "layernorm"))
            n += (dt_inputs ? 3.0 : 5.0) * o->launches;
        else if (starts(o->name, "rope_complex.") && strstr(o->name, ".mul")) n += o->launches;
        else if (!strcmp(o->name, "mlp.act")) n += o->launches;
        else if (!strcmp(o->name, "mlp.mul")) n += 2.0 * o->launches;
    }
    return n;
}

/* The host's pacing of r (host_dispatch_pace's figures into *p), and with rec the host time
 * it charges each op of each pass (host_dispatch_host_of). */
typedef struct {
    double fwd_s, bwd_s, serial_fwd_s, serial_bwd_s;
} pace_out;

static void pace(const system_spec *sys, const model_spec *m, const layout *l, const recipe *r,
                 bool layer, bool moe, pace_out *p, host_dispatch_host *rec)
{
    memset(p, 0, sizeof *p);
    if (!host_dispatch_applies(sys, l)) return;
    host_costs hc = costs_of(sys, l);
    hc.ep_sync = moe && l->framework == FRAMEWORK_TORCHTITAN && l->ep > 1;
    /* the forward's issue (Python's main thread) and the backward's (the autograd thread, a
     * recompute included) at their own rates (fsdp_tp_scale) */
    host_costs hf = scaled(hc, fsdp_tp_scale(sys, l, false));
    host_costs hb = scaled(hc, fsdp_tp_scale(sys, l, true));
    if (!layer) { /* the loss head: a few long kernels; the plain floor. Under loss_parallel
                   * every op of it runs on DTensors, with the head's hooks and its Linear's
                   * decomposition (dtensor_ops.c). */
        double lf, lb, lr;
        host_dispatch_launches(r, l, &lf, &lb, &lr);
        if (hc.dtensor)
            for (int i = 0; i < r->n_ops; i++) {
                double k = name_facts_of(&r->op[i], m)->modules[hc.titan ? 1 : 0];
                lf += dtensor_linear_dispatches(&r->op[i], k, false);
                lb += dtensor_linear_dispatches(&r->op[i], k, true);
            }
        if (hc.dtensor) lf += dtensor_head_dispatches(), lb += dtensor_head_dispatches();
        p->fwd_s = lf * hf.dt_fwd;
        p->bwd_s = lb * hb.dt_bwd + lr * hb.dt_fwd;
        if (rec) /* the same launches, op by op */
            for (int i = 0; i < r->n_ops; i++) {
                double of, ob, orc, k = name_facts_of(&r->op[i], m)->modules[hc.titan ? 1 : 0];
                host_dispatch_op_launches(&r->op[i], l, &of, &ob, &orc);
                if (hc.dtensor) {
                    of += dtensor_linear_dispatches(&r->op[i], k, false);
                    ob += dtensor_linear_dispatches(&r->op[i], k, true);
                }
                rec->op_s[RECIPE_FWD][i] = of * hf.dt_fwd;
                rec->op_s[RECIPE_BWD][i] = ob * hb.dt_bwd;
                rec->op_s[RECIPE_RECOMPUTE][i] = orc * hb.dt_fwd;
            }
        if (rec && hc.dtensor) {
            rec->pass_s[RECIPE_FWD] = dtensor_head_dispatches() * hf.dt_fwd;
            rec->pass_s[RECIPE_BWD] = dtensor_head_dispatches() * hb.dt_bwd;
        }
        /* DTensor TP: the step's host work outside the layers (dtensor_step_host.h). The
         * loss's in the head's forward floor (it runs while the output layer's GEMM does); the
         * pre-forward (before the micro-batch's first kernel) and the backward's tail (after
         * its last layer's backward: the GPU has caught up with a host-paced backward, and the
         * head's own GPU work is long done) as serial host time (recipe_price). */
        if (hc.dtensor && sys->host_dtensor_fwd_s > 0) {
            p->fwd_s += dtensor_step_host_loss_s(hf.plain);
            p->serial_fwd_s = dtensor_step_host_pre_s(hf.plain, hf.dt_fwd);
            p->serial_bwd_s = dtensor_step_host_tail_s(sys, m, l, hb.dt_bwd);
            if (rec) rec->pass_s[RECIPE_FWD] += dtensor_step_host_loss_s(hf.plain);
        }
        if (rec) rec->serial_fwd_s = p->serial_fwd_s, rec->serial_bwd_s = p->serial_bwd_s;
        return;
    }
    /* A compiled block: its measured host time per pass is the floor (the GPU runs a block's
     * few fused kernels and collectives while the host issues the next block); a recompute
     * (checkpoint_wrapper inside the compiled block) issues the forward again in the backward. */
    if (l->compile) {
        bool re = false;
        for (int i = 0; i < r->n_ops; i++) re |= r->op[i].recompute;
        p->fwd_s = compiled_layer_s(sys, l, false) * fsdp_tp_scale(sys, l, false);
        p->bwd_s = (compiled_layer_s(sys, l, true) + (re ? compiled_layer_s(sys, l, false) : 0)) *
                   fsdp_tp_scale(sys, l, true);
        return;
    }
    /* Two layers chained, so the host's lead carries over from the first; the second layer's
     * increment is the steady state of a deep stack (and rec records the second layer's
     * charges: the same as the first's, the lead aside). */
    bool any_re = false;
    for (int i = 0; i < r->n_ops; i++) any_re |= r->op[i].recompute;
    op_class cl[RECIPE_MAX_OPS];
    classify(r, m, &hc, cl);
    /* a checkpointed DTensor block's saved-tensor hooks (costs_of), on the host alone */
    double saved = any_re && !moe && hc.ckpt_fwd + hc.ckpt_bwd > 0 ? ckpt_saved_tensors(r, cl, false) : 0;
    double detaches = any_re && !moe && hc.ckpt_detach > 0 ? ckpt_saved_tensors(r, cl, true) : 0;
    queue q = {0, 0, hf.plain, NULL}, qb = {0, 0, hb.plain, NULL};
    double f_end[2], b_end[2];
    for (int k = 0; k < 2; k++) {
        host_dispatch_host *h = k == 1 ? rec : NULL;
        run_fsdp(&q, r, m, l, false, moe, h);
        run_pass(&q, r, &hf, cl, false, false, h);
        q.rec = h ? &h->pass_s[RECIPE_FWD] : NULL;
        q_host(&q, saved * hf.ckpt_fwd);
        q.rec = NULL;
        f_end[k] = q.gpu;
        run_fsdp(&qb, r, m, l, true, moe, h);
        qb.rec = h ? &h->pass_s[RECIPE_RECOMPUTE] : NULL;
        q_host(&qb, saved * hb.ckpt_bwd + detaches * hb.ckpt_detach);
        qb.rec = NULL;
        if (any_re) run_pass(&qb, r, &hb, cl, false, true, h);
        run_pass(&qb, r, &hb, cl, true, false, h);
        b_end[k] = qb.gpu;
    }
    p->fwd_s = f_end[1] - f_end[0];
    p->bwd_s = b_end[1] - b_end[0];
}

void host_dispatch_pace(const system_spec *sys, const model_spec *m, const layout *l, recipe *r,
                        bool layer, bool moe)
{
    r->host_fwd_s = r->host_bwd_s = 0;
    r->host_serial_fwd_s = r->host_serial_bwd_s = 0;
    r->host_hides_tp = layer && compiled_tp_applies(sys, l);
    if (layer && moe && mcore_moe_host_applies(sys, l)) { /* Megatron's MoE layer */
        mcore_moe_host_pace(sys, m, l, r);
        return;
    }
    pace_out p;
    pace(sys, m, l, r, layer, moe, &p, NULL);
    r->host_fwd_s = p.fwd_s;
    r->host_bwd_s = p.bwd_s;
    r->host_serial_fwd_s = p.serial_fwd_s;
    r->host_serial_bwd_s = p.serial_bwd_s;
}

bool host_dispatch_host_of(const system_spec *sys, const model_spec *m, const layout *l,
                           const recipe *r, bool layer, bool moe, host_dispatch_host *out)
{
    memset(out, 0, sizeof *out);
    if (layer && moe && mcore_moe_host_applies(sys, l)) return false;
    if (layer && l->compile) return false; /* a compiled block's host time is not per op */
    if (!host_dispatch_applies(sys, l)) return false;
    pace_out p;
    pace(sys, m, l, r, layer, moe, &p, out);
    return true;
}
