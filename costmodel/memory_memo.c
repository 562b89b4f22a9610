/*
 * memory_memo.c — the memo of memory.c's per-layer and per-stage figures (memory_memo.h):
 * keys built from exactly the fields each computation reads, each kept in the slot its hash
 * picks until another key takes it (the search's neighbours share them).
 */
#include "memory_memo.h"
#include "hf_eager_attn.h"
#include "schedule.h"

#include <string.h>

void memory_memo_init(memory_memo *memo, const model_spec *m)
{
    memset(memo, 0, sizeof *memo);
    memo->model = m;
    memory_model_counts_of(m, &memo->counts);
}

static memory_act_key act_key_of(const model_spec *m, const training_spec *t, const layout *l)
{
    memory_act_key k;
    memset(&k, 0, sizeof k);
    k.moe_imbalance = t->moe_imbalance;
    k.moe_capacity_factor = t->moe_capacity_factor;
    k.seq_len = t->seq_len;
    k.attention = (int)layout_attention_of(m, t, l); /* what the layout runs (hf_eager_attn.h) */
    k.mbs = l->mbs;
    k.cp = l->cp;
    k.tp = l->tp;
    k.sp = l->sp;
    k.recompute = (int)l->recompute;
    k.recompute_modules = (int)l->recompute_modules;
    k.framework = (int)l->framework;
    k.compile = l->compile;
    k.impl = (int)l->impl;
    k.precision = (int)l->precision;
    k.fp8_recipe = (int)l->fp8_recipe;
    k.etp = l->etp;
    k.moe_fp8_dispatch = l->moe_fp8_dispatch;
    k.moe_pad_index_copy = t->moe_pad_index_copy;
    return k;
}

/* FNV-1a over a key's 8-byte words (the keys are whole words: ints in pairs, doubles) */
static unsigned long hash_words(const void *key, size_t bytes)
{
    const unsigned char *b = key;
    unsigned long h = 1469598103934665603ul;
    for (size_t i = 0; i < bytes; i += sizeof h) {
        unsigned long w;
        memcpy(&w, b + i, sizeof w);
        h = (h ^ w) * 1099511628211ul;
    }
    return h ^ (h >> 29);
}

static bool same_words(const void *a, const void *b, size_t bytes)
{
    const unsigned char *x = a, *y = b;
    unsigned long d = 0;
    for (size_t i = 0; i < bytes; i += sizeof d) {
        unsigned long u, v;
        memcpy(&u, x + i, sizeof u);
        memcpy(&v, y + i, sizeof v);
        d |= u ^ v;
    }
    return d == 0;
}

_Static_assert(sizeof(memory_act_key) % sizeof(unsigned long) == 0 &&
                   sizeof(memory_stage_key) % sizeof(unsigned long) == 0,
               "the memo's keys are hashed and compared by whole words");

int memory_memo_activation_slot(memory_memo *memo, const training_spec *t, const layout *l)
{
    memory_act_key k = act_key_of(memo->model, t, l);
    int s = (int)(hash_words(&k, sizeof k) & (MEMORY_MEMO_ACT - 1));
    if (!memo->act_used[s] || !same_words(&memo->act_key[s], &k, sizeof k)) {
        memo->act_used[s] = true;
        memo->act_key[s] = k;
        memo->act_have[s][0] = memo->act_have[s][1] = false;
    }
    return s;
}

double memory_memo_activation_bytes(memory_memo *memo, int slot, const model_spec *m,
                                    const training_spec *t, const layout *l, int moe_layer)
{
    int moe = moe_layer ? 1 : 0;
    if (!memo->act_have[slot][moe]) {
        memo->act_bytes[slot][moe] = memory_layer_activation_bytes(m, t, l, moe_layer);
        memo->act_have[slot][moe] = true;
    }
    return memo->act_bytes[slot][moe];
}

static memory_stage_key stage_key_of(const layout *l, int stage)
{
    memory_stage_key k = {.tp = l->tp, .ep = l->ep, .etp = l->etp, .pp = l->pp,
                          .pp_first_layers = l->pp_first_layers,
                          .pp_last_layers = l->pp_last_layers, .framework = (int)l->framework,
                          .stage = stage, .head_stage = layout_head_stage(l)};
    if (l->framework == FRAMEWORK_TORCHTITAN) {
        k.vpp = l->vpp;
        k.v_shape = schedule_is_v(layout_pp_schedule_of(l));
    }
    return k;
}

static size_t stage_slot(const memory_stage_key *k)
{
    return hash_words(k, sizeof *k) & (MEMORY_MEMO_STAGES - 1);
}

memory_stage_figures *memory_memo_stage_find(memory_memo *memo, const layout *l, int stage)
{
    memory_stage_key k = stage_key_of(l, stage);
    size_t s = stage_slot(&k);
    if (memo->stage_used[s] && same_words(&memo->stage_key[s], &k, sizeof k))
        return &memo->stage[s];
    return NULL;
}

memory_stage_figures *memory_memo_stage_put(memory_memo *memo, const layout *l, int stage,
                                            const memory_stage_figures *f)
{
    memory_stage_key k = stage_key_of(l, stage);
    size_t s = stage_slot(&k);
    memo->stage_used[s] = true;
    memo->stage_key[s] = k;
    memo->stage[s] = *f;
    return &memo->stage[s];
}

_Static_assert(sizeof(alloc_step_key) % sizeof(unsigned long) == 0,
               "the replay's key is hashed and compared by whole words");

/* Callers without a search's memo share this thread's replays, keyed by everything a replay
 * reads: refine's fit (plan measure --refine --realruns) estimates the same 30 covered layouts
 * of the single-GPU real runs hundreds of times each */
enum { THREAD_REPLAYS = 256 };
static _Thread_local memory_replay_slot thread_replays[THREAD_REPLAYS];

bool memory_memo_replay(memory_memo *memo, const model_spec *m, const training_spec *t,
                        const layout *l, double allocator_capacity_bytes,
                        alloc_step_reserved *out)
{
    if (!alloc_step_covered(m, t, l)) return false;
    alloc_step_key k = alloc_step_key_of(m, t, l, allocator_capacity_bytes);
    unsigned long h = hash_words(&k, sizeof k);
    memory_replay_slot *s = memo && memo->model == m
                                ? &memo->replay[h & (MEMORY_MEMO_REPLAY - 1)]
                                : &thread_replays[h & (THREAD_REPLAYS - 1)];
    if (!s->used || !same_words(&s->key, &k, sizeof k)) {
        s->used = true;
        s->key = k;
        s->ok = alloc_step_replay(m, t, l, allocator_capacity_bytes, &s->r) == 0;
    }
    *out = s->r;
    return s->ok;
}
