#include <stdio.h>
#include <stdlib.h>
#include "sim.h"
#include "estimate_internal.h"
#include "schedule.h"
int main(int argc,char**argv){
 const char *model=argv[1], *sysn=argv[2]; int tp=atoi(argv[3]),pp=atoi(argv[4]),vpp=atoi(argv[5]),dp=atoi(argv[6]),ep=atoi(argv[7]),first=atoi(argv[8]),last=atoi(argv[9]),gbs=atoi(argv[10]);
 model_spec m; system_spec s; char err[256];
 if(model_load(model,"data",&m,err,sizeof err)!=CM_OK||system_load(sysn,"data",&s,err,sizeof err)!=CM_OK){fprintf(stderr,"%s\n",err);return 1;}
 training_spec t=training_default(); t.seq_len=4096; t.global_batch=gbs; t.moe_ep_overlap=true;
 layout l=layout_default(FRAMEWORK_MEGATRON); l.tp=tp; l.sp=tp>1; l.pp=pp; l.vpp=vpp; l.dp=dp; l.ep=ep; l.etp=1; l.mbs=1; l.pp_first_layers=first; l.pp_last_layers=last; l.recompute=RECOMPUTE_NONE;
 sim_workspace *w=sim_alloc();
 if(sim_build(w,&m,&s,&t,&l,err,sizeof err)!=CM_OK){fprintf(stderr,"%s\n",err);return 1;}
 sim_input in=*sim_input_of(w); time_simulated a,b;
 sim_run(w,&in,NULL,&a,err,sizeof err); in.ep_unpaired=false; sim_run(w,&in,NULL,&b,err,sizeof err);
 stage_time ws=estimate_worst_stage(&m,&s,&t,&l,NULL,NULL);
 int micro=gbs/(dp*l.mbs); int v=vpp>1?vpp:1;
 double old=(double)schedule_combined_unpaired(pp,v,micro,ws.stage)/v*ws.ep_unpaired_s;
 double nw=(schedule_combined_unpaired(pp,v,micro,pp-1)*ws.ep_unpaired_s+ws.ep_unpaired_rest_s)/v;
 printf("%s %s pp%d vp%d %d/%d m %d: worst stage %d U_w %.4f rest %.4f | closed form old %.4f new %.4f | sim delta %.4f (sim step %.3f)\n",model,sysn,pp,vpp,first,last,micro,ws.stage,ws.ep_unpaired_s,ws.ep_unpaired_rest_s,old,nw,a.step_s-b.step_s,a.step_s);
 return 0;}
