/*
 * layout_place.c — where a layout's rank groups land (layout.h layout_group): Megatron's rank
 * order (tp innermost, then cp, dp, pp) placed on the system's NVLink domains, so each
 * collective knows whether it stays inside a domain, and the notes that tell a user when a
 * group's span does not divide the domain.
 */
#include "layout.h"

#include <stdio.h>
#include <string.h>

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
