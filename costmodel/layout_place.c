/*
 * layout_place.c — where a layout's rank groups land (layout.h layout_group): Megatron's rank
 * order (l->rank_order: tp innermost, then cp, dp, pp by default; pp before dp under
 * --use-tp-pp-dp-mapping) placed on the system's NVLink domains, so each collective knows
 * whether it stays inside a domain; the rules of the order, and the notes that tell a user
 * which groups cross domains and when a group's span does not divide the domain.
 *
 * The orders (Megatron-LM d98e8a6): megatron/core/parallel_state.py initialize_model_parallel
 * (order: str = "tp-cp-ep-dp-pp", line 617) builds the dense groups from a RankGenerator over
 * tp, cp, dp, pp and the expert groups from one over etp, ep, expert-dp, pp, in the same order
 * with its first token innermost (RankGenerator.get_ranks, lines 465-560);
 * megatron/training/initialize.py:395 passes "tp-cp-ep-pp-dp" instead under
 * --use-tp-pp-dp-mapping (megatron/training/config/common_config.py:105). The gradients reduce
 * over the "dp-cp" ranks: contiguous from stride tp in the default order; cp (stride tp) times
 * dp (stride tp*cp*pp) under the other, with the pipeline between them. torchtitan's device
 * mesh has one fixed order (pp, dp_replicate, dp_shard, cp, tp outermost first: torchtitan
 * b5bcd76 torchtitan/distributed/parallel_dims.py, unflatten_mesh calls at lines 307-330), so
 * only Megatron layouts choose.
 */
#include "layout.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const rank_order_names[] = {"tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp"};

const char *layout_rank_order_name(layout_rank_order o)
{
    return o >= 0 && o < RANK_ORDER_COUNT ? rank_order_names[o] : "?";
}

int layout_parse_rank_order(const char *s, layout_rank_order *out)
{
    static const char *const short_names[] = {"dp-pp", "pp-dp"};
    for (int i = 0; i < RANK_ORDER_COUNT; i++)
        if (!strcasecmp(s, rank_order_names[i]) || !strcasecmp(s, short_names[i])) {
            *out = (layout_rank_order)i;
            return 1;
        }
    return 0;
}

/* ---- placement ----
 *
 * "Node" in layout_group means the scale-up (NVLink) domain, system_domain_gpus(): the host on
 * DGX/HGX presets, the 72-GPU rack on NVL72, whose hosts hold only 4 GPUs. A group whose ranks
 * fit in one domain talks over NVLink whatever hosts it crosses; a group that leaves the domain
 * talks over the scale-out network (collective.c). A group of span stride x size at most the
 * domain is placed inside one domain: when the span does not divide the domain (64 of a 72-GPU
 * rack) that needs the launcher to put whole groups in each domain, leaving the remainder of
 * each domain to spares or other jobs; layout_domain_notes() says so. */

layout_group layout_group_place(const system_spec *sys, int size, int stride)
{
    layout_group g = {.size = size, .members_per_node = size, .spans_nodes = false};
    int domain = system_domain_gpus(sys);
    if (size <= 1) return g;
    if ((long)stride * size <= domain) return g;
    g.spans_nodes = true;
    g.members_per_node = stride >= domain ? 1 : domain / stride;
    if (g.members_per_node > size) g.members_per_node = size;
    if (g.members_per_node < 1) g.members_per_node = 1;
    return g;
}

/* A group of two dimensions that are not adjacent in the rank order: n_in ranks stride_in apart
 * (the inner one), each repeated n_out times stride_out apart (stride_out >= stride_in * n_in).
 * Adjacent dimensions (stride_out == stride_in * n_in) are one contiguous group. */
static layout_group place_split(const system_spec *sys, int n_in, int stride_in, int n_out,
                                int stride_out)
{
    if (n_out <= 1) return layout_group_place(sys, n_in, stride_in);
    if (n_in <= 1) return layout_group_place(sys, n_out, stride_out);
    if ((long)stride_in * n_in == stride_out)
        return layout_group_place(sys, n_in * n_out, stride_in);
    layout_group in = layout_group_place(sys, n_in, stride_in);
    layout_group out = layout_group_place(sys, n_out, stride_out);
    layout_group g = {.size = n_in * n_out, .members_per_node = n_in * n_out,
                      .spans_nodes = false};
    if (!in.spans_nodes && !out.spans_nodes) return g;
    /* the outer dimension leaves the domain: each domain holds the inner members of the
     * outer ones that share it (out.members_per_node of them, 1 when the outer stride is a
     * domain or more); the inner one leaving it already spreads the group one per domain */
    g.spans_nodes = true;
    g.members_per_node = in.spans_nodes ? in.members_per_node : n_in * out.members_per_node;
    return g;
}

int layout_dp_stride(const layout *l)
{
    return l->rank_order == RANK_ORDER_PP_DP ? l->tp * l->cp * l->pp : l->tp * l->cp;
}

int layout_pp_stride(const layout *l)
{
    return l->rank_order == RANK_ORDER_PP_DP ? l->tp * l->cp : l->tp * l->cp * l->dp;
}

/* Appends one sentence about a group of span stride x size to buf. Returns 1 when the group
 * leaves the NVLink domain. */
static int domain_note(const system_spec *sys, const char *name, int size, int stride,
                       char *buf, size_t len)
{
    if (size <= 1) return 0;
    int domain = system_domain_gpus(sys), host = sys->gpus_per_node;
    long span = (long)stride * size;
    size_t used = strlen(buf);
    if (used >= len) return 0;
    char *p = buf + used;
    size_t room = len - used;
    if (span > domain) {
        long domains = (span + domain - 1) / domain;
        snprintf(p, room,
                 "%s %d spans %ld NVLink domains of %d GPUs: its collectives run on the "
                 "scale-out network. ",
                 name, size, domains, domain);
        return 1;
    }
    if (domain % span)
        snprintf(p, room,
                 "%s %d (ranks %ld apart) stays inside a %d-GPU NVLink domain only when each "
                 "domain runs whole groups (%ld ranks of the job, %ld GPUs left to spares or "
                 "other jobs). ",
                 name, size, (long)stride, domain, domain / span * span, domain % span);
    else if (span > host)
        snprintf(p, room,
                 "%s %d crosses hosts of %d GPUs but stays inside the %d-GPU NVLink domain. ",
                 name, size, host, domain);
    return 0;
}

int layout_domain_notes(const system_spec *sys, const layout *l, char *buf, size_t len)
{
    if (len) buf[0] = '\0';
    int spans = domain_note(sys, "TP", l->tp, 1, buf, len);
    spans += domain_note(sys, "CP", l->cp, l->tp, buf, len);
    spans += domain_note(sys, "EP", l->ep, layout_etp(l), buf, len);
    size_t n = strlen(buf);
    if (n && buf[n - 1] == ' ') buf[n - 1] = '\0';
    return spans;
}

int layout_span_summary(const system_spec *sys, const layout *l, char *buf, size_t len)
{
    if (len) buf[0] = '\0';
    if (layout_gpus(l) <= system_domain_gpus(sys) || !len) return 0;
    struct {
        const char *name;
        int size, stride;
        layout_group g;
    } dims[] = {
        {"TP", l->tp, 1, layout_tp_group(sys, l)},
        {"CP", l->cp, l->tp, layout_cp_group(sys, l)},
        {"DP", l->dp, layout_dp_stride(l), layout_group_place(sys, l->dp, layout_dp_stride(l))},
        {"PP", l->pp, layout_pp_stride(l), layout_pp_group(sys, l)},
    };
    char out[256] = "", in[128] = "";
    size_t uo = 0, ui = 0;
    int crossing = 0;
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        if (dims[i].size <= 1) continue;
        if (dims[i].g.spans_nodes) {
            crossing++;
            if (uo < sizeof out)
                uo += (size_t)snprintf(out + uo, sizeof out - uo, "%s%s %d (ranks %d apart)",
                                       uo ? ", " : "", dims[i].name, dims[i].size,
                                       dims[i].stride);
        } else if (ui < sizeof in) {
            ui += (size_t)snprintf(in + ui, sizeof in - ui, "%s%s %d", ui ? ", " : "",
                                   dims[i].name, dims[i].size);
        }
    }
    snprintf(buf, len, "Across NVLink domains of %d GPUs (rank order %s%s): %s%s%s%s.",
             system_domain_gpus(sys), layout_rank_order_name(l->rank_order),
             l->rank_order == RANK_ORDER_PP_DP ? ", --use-tp-pp-dp-mapping" : "",
             crossing ? out : "no group", crossing > 1 ? " cross" : " crosses",
             in[0] ? "; inside one: " : "", in);
    return crossing;
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
    /* Gradients reduce over dp x cp: cp (stride tp) and dp, contiguous in the default order,
     * the pipeline between them under tp-cp-ep-pp-dp. */
    return place_split(sys, l->cp, l->tp, l->dp, layout_dp_stride(l));
}
layout_group layout_expert_dp_group(const system_spec *sys, const layout *l)
{
    /* the expert generator's order etp-ep-edp-pp, or etp-ep-pp-edp */
    int inner = l->ep * layout_etp(l);
    return layout_group_place(sys, layout_expert_dp(l),
                              l->rank_order == RANK_ORDER_PP_DP ? inner * l->pp : inner);
}
layout_group layout_ep_group(const system_spec *sys, const layout *l)
{
    /* Megatron builds expert groups from the tp*cp*dp ranks with etp innermost. */
    return layout_group_place(sys, l->ep, layout_etp(l));
}
layout_group layout_pp_group(const system_spec *sys, const layout *l)
{
    return layout_group_place(sys, l->pp, layout_pp_stride(l));
}
layout_group layout_shard_place(const system_spec *sys, const layout *l)
{
    /* the first shard_group ranks of the dp x cp group: cp first, then dp */
    int n = layout_shard_group(l);
    if (n <= l->cp || l->cp <= 0) return layout_group_place(sys, n, l->tp);
    return place_split(sys, l->cp, l->tp, n / l->cp, layout_dp_stride(l));
}

/* ---- the choice and its rules ---- */

static bool group_differs(layout_group a, layout_group b)
{
    return a.spans_nodes != b.spans_nodes || a.members_per_node != b.members_per_node;
}

bool layout_rank_order_matters(const system_spec *sys, const layout *l)
{
    if (l->pp <= 1 || l->dp <= 1) return false;
    layout a = *l, b = *l;
    a.rank_order = RANK_ORDER_DP_PP;
    b.rank_order = RANK_ORDER_PP_DP;
    return group_differs(layout_dp_group(sys, &a), layout_dp_group(sys, &b)) ||
           group_differs(layout_pp_group(sys, &a), layout_pp_group(sys, &b)) ||
           group_differs(layout_expert_dp_group(sys, &a), layout_expert_dp_group(sys, &b));
}

bool layout_rank_order_alternative(const system_spec *sys, const layout *l, layout *out)
{
    if (l->framework != FRAMEWORK_MEGATRON || l->rank_order != RANK_ORDER_DP_PP) return false;
    *out = *l;
    out->rank_order = RANK_ORDER_PP_DP;
    const char *rule;
    /* the rules first (a few compares, no message: the search asks this of every Megatron
     * layout it lists, and formatting the rule's text was 5% of a search, issue 21), then
     * the groups' placement */
    return !layout_rank_order_rule(out, &rule, NULL, 0) && layout_rank_order_matters(sys, l);
}

/* msg NULL: the verdict and the rule's name alone, no text formatted */
#define RULE_MSG(...) (msg ? (void)snprintf(msg, len, __VA_ARGS__) : (void)0)
bool layout_rank_order_rule(const layout *l, const char **rule, char *msg, size_t len)
{
    if (l->rank_order == RANK_ORDER_DP_PP) return false;
    if (l->rank_order < 0 || l->rank_order >= RANK_ORDER_COUNT) {
        *rule = "rank-order";
        RULE_MSG("unknown rank order %d: use tp-cp-ep-dp-pp or tp-cp-ep-pp-dp",
                 (int)l->rank_order);
        return true;
    }
    if (l->framework != FRAMEWORK_MEGATRON) {
        *rule = "rank-order-megatron-only";
        RULE_MSG("--rank-order tp-cp-ep-pp-dp is Megatron's --use-tp-pp-dp-mapping; %s places "
                 "ranks in one fixed order (pipeline outermost): leave --rank-order at "
                 "tp-cp-ep-dp-pp or use --framework megatron",
                 layout_framework_name(l->framework));
        return true;
    }
    /* Megatron-Bridge 067f987 src/megatron/bridge/training/config.py:1124: "use_tp_pp_dp_mapping
     * is not supported with Megatron FSDP" (and :1160 for MFSDP v2) */
    if (l->sharding == SHARDING_FSDP || l->shard_grads) {
        *rule = "rank-order-not-with-megatron-fsdp";
        RULE_MSG("Megatron-FSDP is not compatible with --use-tp-pp-dp-mapping (Megatron-Bridge "
                 "config.py): use --rank-order tp-cp-ep-dp-pp or --sharding distopt");
        return true;
    }
    /* parallel_state.py:898-902 (d98e8a6): "When not using pp-last rank ordering, the data
     * parallel size of the attention and moe layers must be the same" (pp > 1): world/(etp*ep*pp)
     * = world/(tp*cp*pp), i.e. etp*ep = tp*cp; a dense model's expert generator has ep 1 and
     * etp = tp, so cp must be 1 */
    /* (Megatron's --create-all-gather-group builds its separate all-gather groups in the
     * default order whatever the mapping, parallel_state.py:1636 create_all_gather_groups; plan
     * never writes that flag.) */
    if (l->pp > 1 && l->ep * layout_etp(l) != l->tp * l->cp) {
        *rule = "rank-order-expert-dp";
        RULE_MSG("--use-tp-pp-dp-mapping with pp %d needs the expert data-parallel size to equal "
                 "the data-parallel size, ep*etp = tp*cp (%d*%d != %d*%d; Megatron's "
                 "parallel_state.py): choose such sizes or --rank-order tp-cp-ep-dp-pp",
                 l->pp, l->ep, layout_etp(l), l->tp, l->cp);
        return true;
    }
    return false;
}
#undef RULE_MSG
