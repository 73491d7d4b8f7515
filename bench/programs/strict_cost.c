/* `cargo xtask bench`: what strict mode adds to a target region. Runs REGIONS empty target
 * regions on the x86_64 device and prints the mean time of one, in microseconds, as
 * `strict_cost,<us>`. The benchmark runs it with and without LD_PRELOAD of
 * libomptarget-indirect-strict.so, linked with 0 or more of the generated libraries `pad_<i>`
 * (each a user library, so more segments to protect), and loads every one of them (PAD_CALLS). */
#include <omp.h>
#include <stdio.h>

#ifndef PAD_CALLS
#define PAD_CALLS
#endif

#define REGIONS 2000

int main(void) {
  int sink = 0, pads = 0;
  PAD_CALLS
#pragma omp target map(tofrom : sink)
  sink += 1;
  double start = omp_get_wtime();
  for (int i = 0; i < REGIONS; i++) {
#pragma omp target map(tofrom : sink)
    sink += 1;
  }
  double elapsed = omp_get_wtime() - start;
  if (sink != REGIONS + 1) {
    printf("strict_cost: wrong count %d\n", sink);
    return 1;
  }
  printf("strict_cost,%.3f\n", elapsed / REGIONS * 1e6);
  printf("pad libraries called: %d\n", pads);
  return 0;
}
