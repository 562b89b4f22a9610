#include <stdio.h>
#include <stdlib.h>
#include "sim.h"
static double run(const sim_input *in){ sim_workspace *w=sim_alloc(); time_simulated r; char err[256];
 if(sim_run(w,in,NULL,&r,err,sizeof err)!=CM_OK){fprintf(stderr,"%s\n",err);exit(1);} sim_free(w); return r.step_s;}
int main(int argc,char**argv){
 int only=argc>8?atoi(argv[8]):-1; int p=atoi(argv[1]), v=atoi(argv[2]), m=atoi(argv[3]); double f=atof(argv[4]), b=atof(argv[5]), uf=atof(argv[6]), ub=atof(argv[7]);
 int K=p*v; sim_layer *L=calloc(K,sizeof *L); int *vs=malloc(K*sizeof(int)); double *z=calloc(p,sizeof(double));
 for(int i=0;i<K;i++){L[i]=(sim_layer){.fwd_s=f,.bwd_s=b,.ep_unpaired_fwd_s=(only<0||i%p==only)?uf:0,.ep_unpaired_bwd_s=(only<0||i%p==only)?ub:0}; vs[i]=1;}
 sim_input in={.pp=p,.vpp=v,.microbatches=m,.layers=K,.layer=L,.vstage_layers=vs,.grad_sync_s=z,.param_sync_s=z,.optimizer_s=z,.ep_unpaired=1,.p2p_overlap=1};
 double t1=run(&in); in.ep_unpaired=0; double t0=run(&in);
 printf("p %d v %d m %d f %g b %g uf %g ub %g: base %.4f with %.4f delta %.4f\n",p,v,m,f,b,uf,ub,t0,t1,t1-t0);
}
