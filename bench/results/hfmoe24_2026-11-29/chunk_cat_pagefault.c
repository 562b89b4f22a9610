/*
 * chunk_cat_pagefault.c — why torch._chunk_cat's host time per 2 KiB tile has two states (helper
 * hfmoe24, README finding 3). No GPU: it repeats only the host side of PyTorch's
 * get_chunk_cat_metadata (aten/src/ATen/native/cuda/TensorShape.cu at pytorch 0229b6aab5): one
 * int64 per tile appended to a vector in a few large inserts (capacity doubling), the vector
 * copied into a second buffer (pack_vecs' pinned staging, here plain malloc), both freed, once
 * per call. Under glibc's default allocator, buffers of several MB come from fresh pages each
 * call (mmap, or a heap top that free() trims back), so every call page-faults them in; with
 * MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ set high the pages are kept and reused.
 * Build and run: gcc -O2 -o pf chunk_cat_pagefault.c && ./pf ENTRIES REPS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc,char**argv){
  if(argc<3){fprintf(stderr,"usage: pf ENTRIES REPS\n");return 1;}
  long n=atol(argv[1]); int reps=atoi(argv[2]);
  long parts[]={4194304/512,4194304/512,4194304/512,4194304/512, n/2, n - n/2 - 4*8192};
  double best=1e9, tot=0;
  for(int r=0;r<reps;r++){
    double t0=now();
    long *v=NULL; long sz=0, cap=0;
    for(int p=0;p<6;p++){ long k=parts[p]; if(sz+k>cap){ long nc=cap*2> sz+k? cap*2 : sz+k; long *w=malloc(nc*8); if(sz) memcpy(w,v,sz*8); free(v); v=w; cap=nc;} for(long i=0;i<k;i++) v[sz+i]=p; sz+=k; }
    long *pin=malloc(sz*8); memcpy(pin,v,sz*8);
    volatile long s=pin[sz-1]; (void)s;
    free(pin); free(v);
    double dt=now()-t0; tot+=dt; if(dt<best) best=dt;
  }
  printf("n %ld entries: best %.2f ms, mean %.2f ms (%.2f ns/entry mean)\n", n, best*1e3, tot/reps*1e3, tot/reps/n*1e9);
  return 0;
}
