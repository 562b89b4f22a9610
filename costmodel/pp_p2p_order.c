/* pp_p2p_order.c — torch.distributed.pipelining's placement of sends and receives among a
 * stage's compute ops (see pp_p2p_order.h for the source). */
#include "pp_p2p_order.h"

#include <stdlib.h>

int pp_p2p_max_ops(int v, int m) { return 4 * v * m; }

int pp_p2p_lower(int p, int v, int m, const schedule_op *sched, int per_stage, const int *nops,
                 pp_p2p_op *out, int *nout)
{
    int nv = p * v, cap = pp_p2p_max_ops(v, m);
    /* recv_placed[dir][k * m + mb]: the RECV of that transfer is on its stage's list */
    char *placed = calloc((size_t)2 * nv * m, 1);
    int *next = calloc((size_t)p, sizeof *next);
    if (!placed || !next) {
        free(placed);
        free(next);
        return -1;
    }
    for (int s = 0; s < p; s++) nout[s] = 0;
    int left = 0;
    for (int s = 0; s < p; s++) left += nops[s];
    int rc = 0;
    while (left > 0) {
        bool progress = false;
        for (int s = 0; s < p; s++) {
            if (next[s] >= nops[s]) continue;
            const schedule_op *op = &sched[(size_t)s * per_stage + next[s]];
            int k = op->chunk * p + s, mb = op->microbatch;
            bool bwd = op->backward;
            /* its input: activations from k - 1, gradients from k + 1 (none at the ends; the
             * looped order never puts k - 1 or k + 1 on the same stage when p > 1) */
            bool needs = bwd ? k < nv - 1 : k > 0;
            if (needs && (p < 2 || !placed[(size_t)(bwd ? 1 : 0) * nv * m + (size_t)k * m + mb]))
                continue;
            next[s]++;
            left--;
            progress = true;
            int dest = bwd ? k - 1 : k + 1;
            if (dest < 0 || dest >= nv || p < 2 || op->part == SCHEDULE_WEIGHT) continue;
            int d = dest % p;
            if (nout[s] >= cap || nout[d] >= cap) {
                rc = -1;
                goto done;
            }
            out[(size_t)s * cap + nout[s]++] = (pp_p2p_op){next[s], dest, mb, true, bwd};
            out[(size_t)d * cap + nout[d]++] = (pp_p2p_op){next[d], dest, mb, false, bwd};
            placed[(size_t)(bwd ? 1 : 0) * nv * m + (size_t)dest * m + mb] = 1;
        }
        if (!progress) {
            rc = -1;
            break;
        }
    }
done:
    free(placed);
    free(next);
    return rc;
}
