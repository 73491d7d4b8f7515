/* Program 4, second translation unit. */
#include "indirect_check.h"

#pragma omp begin declare target indirect
int unit_fn(int x, const void **self) {
  *self = (const void *)unit_fn;
  return x + 200;
}
#pragma omp end declare target

#pragma omp begin declare target
probe_fn unit_fn_device_view = unit_fn;
#pragma omp end declare target
