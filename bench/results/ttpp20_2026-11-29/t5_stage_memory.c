/*
 * t5_stage_memory.c — every pipeline stage's memory of torchtitan's Table 5 rows (Llama 3.1
 * 405B, TP 8 x PP 8 x FSDP 8, full AC, Float8 tensorwise, async TP, compiled blocks, eager
 * loss; 1F1B mbs 4 and Interleaved1F1B 2 stages a rank mbs 2), with and without the last
 * stage keeping every micro-batch's output (training_spec.pp_keep_outputs). Build from the
 * repository root after `ninja -C build`:
 *   gcc -std=c11 -Icostmodel bench/results/ttpp20_2026-11-29/t5_stage_memory.c \
 *       -Lbuild/costmodel -lcostmodel -ljansson -lgsl -lgslcblas -lm -lyaml -o /tmp/t5 && /tmp/t5
 */
#include <stdio.h>
#include <string.h>
#include "estimate.h"
#include "memory.h"
#include "precision.h"
static void row(int vpp, int mbs, int keep){
  model_spec m; system_spec s; char err[256];
  model_load("405b","data",&m,err,sizeof err); system_load("h100-gt500","data",&s,err,sizeof err);
  training_spec t = training_default(); t.seq_len=8192; t.global_batch=256; t.pp_keep_outputs=keep;
  layout l = layout_default(FRAMEWORK_TORCHTITAN); l.cuda_graphs = CUDA_GRAPHS_OFF;
  l.tp=8; l.pp=8; l.dp=8; l.cp=1; l.vpp=vpp; l.mbs=mbs; l.sp=1; l.sharding=SHARDING_FSDP; l.reshard_after_forward=0;
  l.pp_schedule = vpp>1? PP_SCHEDULE_INTERLEAVED_1F1B: PP_SCHEDULE_1F1B; l.recompute=RECOMPUTE_FULL; l.compile=1; l.loss_eager=1; l.async_tp=1; l.rms_norm_unfused=1;
  l.precision=PRECISION_FP8; precision_parse_fp8_recipe("tensorwise",&l.fp8_recipe);
  printf("vpp %d mbs %d keep %d\n", vpp, mbs, keep);
  for (int st=0; st<8; st++){ memory_breakdown b = memory_stage(&m,&s,&t,&l,st);
    printf("  stage %d layers %2d: reserved %.1f total %.1f act %.1f logits %.1f comm %.1f grads %.1f\n", st, layout_stage_layers(&m,&l,st), b.reserved_bytes/1073741824.0, b.total_bytes/1073741824.0, b.activations_bytes/1073741824.0, b.logits_bytes/1073741824.0, b.comm_buffer_bytes/1073741824.0, b.gradients_bytes/1073741824.0);}
}
int main(void){ row(1,4,0); row(1,4,1); row(2,2,0); row(2,2,1); }
