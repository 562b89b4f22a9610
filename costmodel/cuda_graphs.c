/*
 * cuda_graphs.c — torchtitan's CUDA-graphed forward + loss + backward: default, rules, replay
 * cost (see cuda_graphs.h for the sources).
 */
#include "cuda_graphs.h"

#include <math.h>
#include <stdio.h>

#include "dtensor_step_host.h"
#include "optimizer_host.h"

bool cuda_graphs_allowed(const layout *l)
{
    /* torchtitan b5bcd76 trainer.py Config._validate_cuda_graphs: pipeline_parallel_degree > 1
     * is refused; expert_parallel_degree > 1 only with a non-blocking token dispatcher, which
     * plan does not model (torchtitan's default ExpertParallel copies the split sizes to the
     * host: host_dispatch.c's q_sync) */
    return l->framework == FRAMEWORK_TORCHTITAN && l->pp == 1 && l->ep == 1;
}

bool cuda_graphs_on(const layout *l)
{
    if (l->cuda_graphs == CUDA_GRAPHS_ON) return true;
    if (l->cuda_graphs == CUDA_GRAPHS_OFF) return false;
    return cuda_graphs_allowed(l);
}

int cuda_graphs_resolved(const layout *l) { return cuda_graphs_on(l) ? 1 : 0; }

bool cuda_graphs_rule(const layout *l, const char **rule, char *msg, size_t len)
{
    if (l->cuda_graphs != CUDA_GRAPHS_ON) return false;
    const char *r = NULL, *text = NULL;
    if (l->framework != FRAMEWORK_TORCHTITAN) {
        r = "cuda-graphs-torchtitan-only";
        text = l->framework == FRAMEWORK_MEGATRON
                   ? "--cuda-graphs is torchtitan's graphed training step (trainer.py, "
                     "f84224af0); Megatron's graphs are --cuda-graph-full-iteration / "
                     "--cuda-graph-attn: use those, or --framework torchtitan"
                   : "--cuda-graphs is torchtitan's graphed training step (trainer.py, "
                     "f84224af0), which the FSDP2 trainer path does not run: use --framework "
                     "torchtitan, or drop --cuda-graphs";
    } else if (l->pp > 1) {
        r = "cuda-graphs-no-pp";
        text = "torchtitan refuses CUDA graphs with pipeline parallelism (b5bcd76 trainer.py "
               "_validate_cuda_graphs: \"CUDA graphs do not support pipeline parallelism yet\"): "
               "use --pp 1, or --no-cuda-graphs";
    } else if (l->ep > 1) {
        r = "cuda-graphs-blocking-ep";
        text = "torchtitan's CUDA graphs need a non-blocking expert-parallel dispatcher (b5bcd76 "
               "trainer.py _validate_cuda_graphs: HybridEP with non_blocking_capacity_factor or "
               "MinimalAsyncEP); plan prices the default all-to-all, which syncs with the host: "
               "use --ep 1, or --no-cuda-graphs";
    }
    if (!r) return false;
    if (rule) *rule = r;
    if (msg && len) snprintf(msg, len, "%s", text);
    return true;
}

double cuda_graphs_replay_host_s(const system_spec *sys, const layout *l)
{
    return cuda_graphs_on(l) && sys->host_cuda_graph_replay_s > 0 ? sys->host_cuda_graph_replay_s
                                                                   : 0;
}

double cuda_graphs_host_issue_s(const system_spec *sys, const model_spec *m, const layout *l,
                                double local_params, int micro)
{
    double host = dtensor_step_host_optimizer_s(sys, m, l, 0);
    if (!l->offload) host += optimizer_host_s(sys, m, l, 0, local_params);
    return micro * cuda_graphs_replay_host_s(sys, l) + host;
}

double cuda_graphs_optimizer_s(const system_spec *sys, const model_spec *m, const layout *l,
                               double opt_gpu_s, double local_params, double graphs_gpu_s,
                               int micro)
{
    return fmax(opt_gpu_s, cuda_graphs_host_issue_s(sys, m, l, local_params, micro) - graphs_gpu_s);
}
