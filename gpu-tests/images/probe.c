/* The device images of the bundle's plugin C-ABI test (gpu-test plugin-abi): two indirect
 * functions and one kernel that translates the keys in buf[0..N) into buf[N..2N). The test
 * loads the image through the CUDA plugin with its own host-side entry table, as libomptarget
 * would, and launches the kernel through __tgt_rtl_launch_kernel with buf as its one argument.
 * Built twice: as is, and with -DPROBE_SECOND, which gives the second image functions of its own
 * (so that the two images' indirect entries are distinct). */
#include <stdint.h>

#define N 16

#ifndef PROBE_SECOND
#define FIRST probe_square
#define SECOND probe_twice
#pragma omp begin declare target indirect
int probe_square(int x) { return x * x; }
int probe_twice(int x) { return 2 * x; }
#pragma omp end declare target
#else
#define FIRST probe_cube
#define SECOND probe_thrice
#pragma omp begin declare target indirect
int probe_cube(int x) { return x * x * x; }
int probe_thrice(int x) { return 3 * x; }
#pragma omp end declare target
#endif

#pragma omp begin declare target
void *__kmpc_target_translate_fptr(void *fn);
#pragma omp end declare target

void probe(uint64_t *buf) {
#pragma omp target map(tofrom : buf[:2 * N])
  for (int i = 0; i < N; i++)
    buf[N + i] = (uint64_t)__kmpc_target_translate_fptr((void *)buf[i]);
}

int main(void) {
  uint64_t buf[2 * N] = {(uint64_t)FIRST, (uint64_t)SECOND};
  probe(buf);
  return buf[N] == 0;
}
