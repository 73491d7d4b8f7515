/* Program 1, second unit: `declare target enter(f) indirect`, built with -fopenmp-version=52. */
#include "indirect_check.h"

int with_enter(int x, const void **self);
#pragma omp declare target enter(with_enter) indirect
int with_enter(int x, const void **self) {
  *self = (const void *)with_enter;
  return 10 * x + 3;
}

#pragma omp begin declare target
/* The device image's own address of with_enter, for forms.c's checks. */
probe_fn with_enter_device_view = with_enter;
#pragma omp end declare target
