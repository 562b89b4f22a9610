/*
 * bk_pools.c — the size of a measured plan step's memory arena and the offsets of its regions
 * (bk_pools.h): the estimate's persistent tensors and largest phase, grown where what the step
 * touches needs more. Plain C.
 */
#include <math.h>
#include <string.h>

#include "bk_pools.h"
#include "fsdp_copies.h"

#define ALIGN(x) (((x) + 255) & ~(size_t)255)

bool bk_item_weight_grad(const work_item *it)
{
    return it->kind == WORK_GEMM && it->form == GEMM_WGRAD && it->component == WC_GEMM;
}

long bk_fp8_dim(double d) { return ((long)d + 15) / 16 * 16; }

size_t bk_block_scale_floats(bool blk128x128, long rows, long k)
{
    size_t kb = (size_t)(k + 127) / 128;
    if (blk128x128) return (size_t)(rows + 127) / 128 * ((kb + 3) / 4 * 4);
    return kb * ((size_t)(rows + 3) / 4 * 4);
}

static size_t fp8_bytes(double esize, double r, double c, int batch)
{
    return (size_t)(esize * (double)bk_fp8_dim(r) * (double)bk_fp8_dim(c) * batch);
}

size_t bk_gemm_a_bytes(const work_item *it)
{
    return it->fp8 ? fp8_bytes(1, it->m, it->k, it->batch)
                   : (size_t)(2.0 * it->m * it->k * it->batch);
}
size_t bk_gemm_b_bytes(const work_item *it)
{
    return it->fp8 ? fp8_bytes(1, it->n, it->k, it->batch)
                   : (size_t)(2.0 * it->n * it->k * it->batch);
}
size_t bk_gemm_c_bytes(const work_item *it)
{
    return it->fp8 ? fp8_bytes(2, it->m, it->n, it->batch)
                   : (size_t)(2.0 * it->m * it->n * it->batch);
}

bool bk_ring_exchange(const work_item *it)
{
    return it->kind == WORK_COLL && it->component == WC_CP && it->op == COLL_SEND_RECV;
}

size_t bk_pools_root_count(const work_plan *w, int dp_group, int s)
{
    size_t g = (size_t)(dp_group > 1 ? dp_group : 1);
    return (size_t)ceil(w->stage_root_params[s] / (double)g);
}

int bk_pools_root_pieces(const work_plan *w, const bk_pools *p, int dp_group, int s)
{
    size_t g = (size_t)dp_group;
    double total = bk_pools_root_count(w, dp_group, s) * (double)g * p->red_esz;
    size_t chunk = p->unit_cnt[0] * g * p->red_esz;
    return chunk ? (int)ceil(total / chunk) : 0;
}

/* Bytes operand k of an access spans. */
static size_t ew_bytes(const ew_access *a, int k)
{
    return (size_t)ew_operand_elems(a, k) * (size_t)a->esize[k];
}

/* The largest input and output of the items whose operands are a unit's parameters
 * (work_item.param_operands). */
static void param_operand_bytes(const work_plan *w, size_t *in, size_t *out)
{
    const work_list *lists[6] = {&w->layer_fwd, &w->layer_bwd, &w->head_fwd,
                                 &w->head_bwd,  &w->moe_fwd,   &w->moe_bwd};
    *in = *out = 0;
    for (int j = 0; j < 6; j++)
        for (int i = 0; i < lists[j]->n; i++) {
            const work_item *it = &lists[j]->item[i];
            if (it->kind != WORK_STREAM || !it->param_operands) continue;
            size_t a = ew_bytes(&it->access, 1), o = ew_bytes(&it->access, 0);
            if (a > *in) *in = a;
            if (o > *out) *out = o;
        }
}

/* The activation pool's regions: x, y and z as large as the largest operand of any item. */
static void size_regions(const work_plan *w, const bk_pool_shape *sh, bk_pools *p)
{
    const work_list *lists[6] = {&w->layer_fwd, &w->layer_bwd, &w->head_fwd,
                                 &w->head_bwd,  &w->moe_fwd,   &w->moe_bwd};
    size_t xa = 0, yc = 0, zb = 0;
    for (int j = 0; j < 6; j++)
        for (int i = 0; i < lists[j]->n; i++) {
            const work_item *it = &lists[j]->item[i];
            size_t a = 0, b = 0, cc = 0;
            if (it->kind == WORK_GEMM) {
                a = bk_gemm_a_bytes(it);
                b = it->weight_operand ? 0 : bk_gemm_b_bytes(it);
                cc = bk_item_weight_grad(it) ? 0 : bk_gemm_c_bytes(it);
            } else if (it->kind == WORK_STREAM && it->param_operands) {
                continue; /* from the weights into the gradients (bk_pools_size) */
            } else if (it->kind == WORK_STREAM) { /* a in x, b in z, output and scratch in y */
                a = ew_bytes(&it->access, 1);
                b = ew_bytes(&it->access, 2);
                cc = ew_bytes(&it->access, 0);
            } else {
                a = cc = (size_t)it->bytes;
            }
            if (a > xa) xa = a;
            if (b > zb) zb = b;
            if (cc > yc) yc = cc;
        }
    /* FSDP2's copy-out of the root unit lands in y */
    if (sh->fsdp2_copies)
        for (int s = 0; s < sh->stages; s++) {
            size_t rb = bk_pools_root_count(w, sh->dp_group, s) * (size_t)sh->dp_group * 2;
            if (rb > yc) yc = rb;
        }
    p->x_off = 0;
    p->x_sz = ALIGN(xa + 256);
    p->y_off = p->x_sz;
    p->y_ws = ALIGN(yc + 256);
    p->y_sz = ALIGN(p->y_ws + sh->ew_scratch_bytes);
    p->z_off = p->y_off + p->y_sz;
    p->z_sz = ALIGN(zb + 256);
    /* the ring's send and receive buffers, apart from the attention core's operands */
    size_t ring = 0;
    if (sh->cp_overlap)
        for (int j = 0; j < 6; j++)
            for (int i = 0; i < lists[j]->n; i++)
                if (bk_ring_exchange(&lists[j]->item[i]) && (size_t)lists[j]->item[i].bytes > ring)
                    ring = (size_t)lists[j]->item[i].bytes;
    p->cp_off = p->z_off + p->z_sz;
    p->cp_sz = ring ? 2 * ALIGN(ring + 256) : 0;
}

/* The FSDP communication buffers, one after the other; returns the bytes they need. */
static size_t size_comm(const work_plan *w, const bk_pool_shape *sh, size_t ucnt, size_t rcnt,
                        size_t g, bk_pools *p)
{
    double lp = w->layer_params;
    double lp_max = w->moe && w->moe_layer_params > lp ? w->moe_layer_params : lp;
    p->root_off = 0;
    p->root_sz = ALIGN(rcnt * g * 2);
    p->gbuf_sz = ALIGN(ucnt * g * 2);
    p->ggrad_sz = ALIGN((size_t)(2.0 * lp_max) + 256);
    p->rbuf_sz = ALIGN(ucnt * g * p->red_esz);
    size_t o = p->root_sz;
    for (int i = 0; i < 2; i++) {
        p->gbuf_off[i] = o;
        o += p->gbuf_sz;
    }
    for (int i = 0; i < 2; i++) {
        p->ggrad_off[i] = o;
        o += p->ggrad_sz;
    }
    for (int i = 0; i < 2; i++) {
        p->rbuf_off[i] = o;
        o += p->rbuf_sz;
    }
    if (sh->fsdp2_copies) { /* the copy-in's flat bf16 buffer */
        p->cin_off = o;
        p->cin_sz = ALIGN((ucnt > rcnt ? ucnt : rcnt) * 2);
        o += p->cin_sz;
    }
    return o;
}

/* The estimate's phases (memory.c stage_memory): what each holds beyond the persistent weights
 * and optimizer states, the framework's bytes left out (the backend measures its own). */
static void size_phases(const memory_breakdown *mb, bk_pools *p)
{
    double persist = mb->weights_bytes + mb->optimizer_bytes, fw = mb->framework_bytes;
    double train = mb->train_peak_bytes > 0 ? mb->train_peak_bytes : mb->total_bytes;
    p->phase_train_bytes = fmax(0, train - fw - persist);
    p->phase_bwd_end_bytes =
        mb->backward_end_bytes > 0 ? fmax(0, mb->backward_end_bytes - fw - persist) : 0;
    /* the optimizer step: the gradients and what the step allocates (memory.c: held with the
     * persistent part; layouts without the split hold the gradients through it) */
    p->phase_opt_bytes = mb->optimizer_step_bytes > 0
                             ? fmax(0, mb->optimizer_step_bytes - fw - persist)
                             : mb->gradients_bytes + mb->optimizer_temp_bytes;
    /* the estimate's peak is the largest phase (also torch pipelining's merge, memory.c) */
    p->phase_plan_bytes = fmax(fmax(p->phase_train_bytes, p->phase_bwd_end_bytes),
                               fmax(p->phase_opt_bytes, mb->total_bytes - fw - persist));
}

void bk_pools_size(const work_plan *w, const bk_pool_shape *sh, bk_pools *p)
{
    memset(p, 0, sizeof *p);
    const memory_breakdown *mb = &w->est.memory;
    size_t g = (size_t)(sh->dp_group > 1 ? sh->dp_group : 1);
    size_t ge = (size_t)(sh->edp_group > 1 ? sh->edp_group : 1);
    double lp = w->layer_params;
    size_regions(w, sh, p);
    p->red_esz = w->reduce_fp32 ? 4 : 2;
    p->unit_cnt[0] = (size_t)ceil(lp / g);
    p->unit_cnt[1] = p->unit_cnt[0];
    if (w->moe) {
        p->unit_cnt[1] = (size_t)ceil((w->fsdp ? w->moe_layer_params : w->moe_dense_params) / g);
        if (!w->fsdp) p->ecnt = (size_t)ceil(w->moe_expert_params / ge);
    }
    size_t ucnt = p->unit_cnt[0] > p->unit_cnt[1] ? p->unit_cnt[0] : p->unit_cnt[1];
    size_t rcnt = 0;
    double opt_max = 0;
    for (int s = 0; s < sh->stages; s++) {
        size_t rc = bk_pools_root_count(w, sh->dp_group, s);
        if (rc > rcnt) rcnt = rc;
        if (w->stage_optimizer_params[s] > opt_max) opt_max = w->stage_optimizer_params[s];
    }
    size_t n4 = ALIGN((size_t)(4.0 * opt_max)); /* one fp32 array of Adam over the shard */
    /* persistent: the plan's weights (grown to one gathered unit and its experts) and optimizer
     * states, together at least Adam's param, m and v (three fp32 arrays) */
    p->w_bytes = ALIGN((size_t)mb->weights_bytes);
    p->o_bytes = ALIGN((size_t)mb->optimizer_bytes);
    size_t wmin = ALIGN(ucnt * g * 2 + p->ecnt * ge * 2);
    if (p->w_bytes < wmin) p->w_bytes = wmin;
    if (p->w_bytes + p->o_bytes < 3 * n4) p->o_bytes = 3 * n4 - p->w_bytes;
    p->o_off = p->w_bytes;
    p->persist_bytes = p->w_bytes + p->o_bytes;
    /* gradients: the plan's, grown to one unit (and its experts) at the reduction's precision
     * and to Adam's fp32 gradient array */
    p->g_bytes = ALIGN((size_t)mb->gradients_bytes);
    size_t gmin = ALIGN((ucnt * g + p->ecnt * ge) * p->red_esz);
    /* torch pipelining's fp32 sums (bk_step.c) hold the root unit's unsharded gradient too */
    const layout *l = &w->layout;
    if (sh->fsdp2_copies && fsdp_pipelined(l) && !l->reshard_after_forward && gmin < rcnt * g * 4)
        gmin = ALIGN(rcnt * g * 4);
    if (p->g_bytes < gmin) p->g_bytes = gmin;
    if (p->g_bytes < n4) p->g_bytes = n4;
    /* FSDP2's one-GPU copy items read a unit's parameters from the weights and write them
     * into the gradients (bk_step.c exec_item) */
    size_t pin = 0, pout = 0;
    param_operand_bytes(w, &pin, &pout);
    if (p->g_bytes < ALIGN(pout)) p->g_bytes = ALIGN(pout);
    if (p->persist_bytes < ALIGN(pin)) {
        p->o_bytes += ALIGN(pin) - p->persist_bytes;
        p->persist_bytes = p->w_bytes + p->o_bytes;
    }
    /* the regions the step touches: the activations' operand regions (size_regions), the
     * communication buffers, the pipeline's */
    p->act_bytes = p->cp_off + p->cp_sz;
    p->comm_bytes = w->fsdp && w->dp_active ? size_comm(w, sh, ucnt, rcnt, g, p) : 0;
    if (sh->stages > 1) { /* a send buffer and pp_slots receive buffers per direction */
        p->p2p_sz = ((size_t)w->p2p_bytes) & ~(size_t)1;
        p->p2p_slot = ALIGN(p->p2p_sz);
        p->pp_bytes = (size_t)(2 + 2 * sh->pp_slots) * p->p2p_slot;
    }
    /* the phase region after the persistent part (bk_pools.h): the pipeline's buffers, the
     * activation regions and the communication buffers from its start, the gradients at its
     * end, overlapping the forward and backward's regions where the region cannot hold both */
    size_phases(mb, p);
    p->touched_bytes = p->pp_bytes + p->act_bytes + p->comm_bytes;
    size_t ph_plan = ALIGN((size_t)p->phase_plan_bytes), pg = p->pp_bytes + p->g_bytes;
    p->phase_bytes = ph_plan > p->touched_bytes ? ph_plan : p->touched_bytes;
    if (p->phase_bytes < pg) p->phase_bytes = pg;
    p->pp_off = p->persist_bytes;
    p->act_off = p->pp_off + p->pp_bytes;
    p->comm_off = p->act_off + p->act_bytes;
    p->g_off = p->persist_bytes + p->phase_bytes - p->g_bytes;
    p->plan_bytes = (double)(ALIGN((size_t)mb->weights_bytes) +
                             ALIGN((size_t)mb->optimizer_bytes) + ph_plan);
    p->total_bytes = (double)(p->persist_bytes + p->phase_bytes);
    p->extra_bytes = p->total_bytes - p->plan_bytes;
}

void bk_pools_whole_shape(const work_plan *w, bk_pool_shape *sh)
{
    const layout *l = &w->layout;
    memset(sh, 0, sizeof *sh);
    sh->stages = w->pp > 1 ? w->pp : 1;
    sh->dp_group = l->cp * l->dp;
    sh->edp_group = w->moe ? l->cp * l->dp / (l->ep > 1 ? l->ep : 1) : 1;
    if (sh->edp_group < 1) sh->edp_group = 1;
    sh->pp_slots = sh->stages > 1 ? work_pp_slots(sh->stages, w->vpp > 1 ? w->vpp : 1,
                                                  w->microbatches)
                                  : 1;
    sh->fsdp2_copies = w->fsdp && w->dp_active && layout_is_pytorch(l) && !w->fsdp2_copy_items;
    sh->cp_overlap = l->cp > 1 && layout_cp_is_ring(l);
}
