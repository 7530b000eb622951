#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
static double work(int k, double x){ for(int j=0;j<k;j++) x = x*1.0000001+0.5; return x;}
int main(int argc,char**argv){
  int calls=atoi(argv[1]); int n=atoi(argv[2]); int k=atoi(argv[3]);
  long shared=0; double acc=0;
  double t0=omp_get_wtime();
  for(int c=0;c<calls;c++){
#pragma omp parallel for schedule(static) reduction(+:acc)
    for(int i=0;i<n;i++){
      acc += work(k, i);
#ifndef NOCRIT
#pragma omp critical
      shared += (i^c)&7;
#else
      __atomic_fetch_add(&shared,(i^c)&7,__ATOMIC_RELAXED);
#endif
    }
  }
  fprintf(stderr,"time %.4f\n",omp_get_wtime()-t0);
  printf("%ld %g\n",shared,acc>0);
  return 0;
}
