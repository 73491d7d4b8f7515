// The benchmark's loop, compiled once with the pass plugin (VARIANT=translated, with the member
// functions) and once without (VARIANT=plain): the same machine code but for the translation.
#include "virtual_ops.h"

#define NAME2(a, b) a##b
#define NAME(a, b) NAME2(a, b)

#pragma omp begin declare target
__attribute__((noinline)) long NAME(virtual_loop_, VARIANT)(const Op *const *objects, long count, long calls) {
  long sum = 0;
  for (long i = 0; i < calls; i++)
    sum += objects[i % count]->apply(i);
  return sum;
}
#pragma omp end declare target

#ifdef WITH_METHODS
#pragma omp begin declare target indirect
long Op::apply(long x) const { return x; }
long AddOp::apply(long x) const { return x + k; }
long XorOp::apply(long x) const { return x ^ k; }
#pragma omp end declare target
#endif
