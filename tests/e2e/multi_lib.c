/* Program 4, the static library's member (libmulti.a). */
#include "indirect_check.h"

#pragma omp begin declare target indirect
int lib_fn(int x, const void **self) {
  *self = (const void *)lib_fn;
  return x + 300;
}
int lib_fn2(int x, const void **self) {
  *self = (const void *)lib_fn2;
  return x + 400;
}
#pragma omp end declare target

#pragma omp begin declare target
probe_fn lib_device_view[2] = {lib_fn, lib_fn2};
#pragma omp end declare target
