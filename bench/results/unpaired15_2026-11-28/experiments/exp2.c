#include <stdio.h>
#include <stdlib.h>
#include "sim.h"
static double run(const sim_input *in){ sim_workspace *w=sim_alloc(); time_simulated r; char err[256];
 if(sim_run(w,in,NULL,&r,err,sizeof err)!=CM_OK){fprintf(stderr,"%s\n",err);exit(1);} sim_free(w); return r.step_s;}
/* p v m heavy factor seed */
int main(int argc,char**argv){
 int p=atoi(argv[1]), v=atoi(argv[2]), m=atoi(argv[3]), h=atoi(argv[4]); double x=atof(argv[5]); srand(atoi(argv[6]));
 int K=p*v; sim_layer *L=calloc(K,sizeof *L); int *vs=malloc(K*sizeof(int)); double *z=calloc(p,sizeof(double));
 double u[64]; for(int s=0;s<p;s++) u[s]=0.02+0.1*rand()/(double)RAND_MAX;
 for(int i=0;i<K;i++){int s=i%p; double c=s==h?x:1; L[i]=(sim_layer){.fwd_s=c,.bwd_s=2*c,.ep_unpaired_fwd_s=u[s]*0.4,.ep_unpaired_bwd_s=u[s]*0.6}; vs[i]=1;}
 sim_input in={.pp=p,.vpp=v,.microbatches=m,.layers=K,.layer=L,.vstage_layers=vs,.grad_sync_s=z,.param_sync_s=z,.optimizer_s=z,.ep_unpaired=1,.p2p_overlap=1};
 double t1=run(&in); in.ep_unpaired=0; double t0=run(&in);
 double best=0, sum=0; for(int s=0;s<p;s++) sum+=u[s];
 int n=(v-1)*p+1; double pw = n*u[h]+sum-u[h];
 for(int s=0;s<p;s++){double c=n*u[s]+sum-u[s]; if(c>best)best=c;}
 int nw=2*(p-h-1)+(v-1)*p+1; if(nw>m*v)nw=m*v;
 printf("p %d v %d m %d h %d x %g: delta %.4f  pred(w) %.4f pred(max) %.4f old n_w*u_w %.4f\n",p,v,m,h,x,t1-t0,pw,best,nw*u[h]);
}
