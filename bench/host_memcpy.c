// Host memory copy bandwidth, the ceiling of any host data path (docs/benchmarks.md, "The job"):
// T threads each memcpy their own 256 MiB buffer into another, pages touched first, the best of 5
// rounds; prints GB/s copied (each byte copied is read once and written once, so the memory
// traffic is twice that). Build: gcc -O2 -pthread bench/host_memcpy.c -o host_memcpy
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BYTES (256L << 20)

static char** src;
static char** dst;
static pthread_barrier_t start;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static void* copier(void* arg) {
  long k = (long)arg;
  pthread_barrier_wait(&start);
  memcpy(dst[k], src[k], BYTES);
  pthread_barrier_wait(&start);
  return NULL;
}

int main(void) {
  int counts[] = {1, 2, 4, 8, 12, 16};
  src = calloc(16, sizeof(char*));
  dst = calloc(16, sizeof(char*));
  for (int k = 0; k < 16; ++k) {
    src[k] = malloc(BYTES);
    dst[k] = malloc(BYTES);
    if (!src[k] || !dst[k]) {
      fprintf(stderr, "out of memory\n");
      return 1;
    }
    memset(src[k], k + 1, BYTES);
    memset(dst[k], 0, BYTES);
  }
  for (int c = 0; c < 6; ++c) {
    int t = counts[c];
    double best = 1e30;
    for (int round = 0; round < 5; ++round) {
      pthread_t th[16];
      pthread_barrier_init(&start, NULL, t + 1);
      for (long k = 0; k < t; ++k) pthread_create(&th[k], NULL, copier, (void*)k);
      pthread_barrier_wait(&start);
      double t0 = now();
      pthread_barrier_wait(&start);
      double dt = now() - t0;
      for (int k = 0; k < t; ++k) pthread_join(th[k], NULL);
      pthread_barrier_destroy(&start);
      if (dt < best) best = dt;
    }
    printf("host memcpy: %2d threads  %6.1f GB/s copied (%6.1f GB/s of memory traffic)\n", t,
           t * (double)BYTES / best / 1e9, 2 * t * (double)BYTES / best / 1e9);
  }
  return 0;
}
