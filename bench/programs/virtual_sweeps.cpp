// The array benchmark's loop (virtual_arrays.cpp), compiled with the pass plugin
// (VARIANT=translated), with it and its loop cache off (VARIANT=uncached) and without it
// (VARIANT=plain): a kernel sweeping over an array of
// objects and calling each one's virtual function, as codes loop over their particles or shapes.
#include <new>

#include "virtual_classes.h"

#define NAME2(a, b) a##b
#define NAME(a, b) NAME2(a, b)

#pragma omp begin declare target
__attribute__((noinline)) long NAME(virtual_sweeps_, VARIANT)(const Op *const *objects, long count, long sweeps) {
  long sum = 0;
  for (long s = 0; s < sweeps; s++)
    for (long i = 0; i < count; i++)
      sum += objects[i]->apply(i);
  return sum;
}
#pragma omp end declare target
