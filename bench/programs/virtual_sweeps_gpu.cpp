// The GPU array benchmark's kernels (virtual_arrays_gpu.h), one per build: VARIANT=plain and
// VARIANT=llvm without the pass plugin, VARIANT=translated with it, VARIANT=uncached with it and
// its loop cache off.
#include <omp.h>

#include "virtual_arrays_gpu.h"

#define NAME2(a, b) a##b
#define NAME(a, b) NAME2(a, b)

#ifdef LLVM_LOOKUP
#pragma omp begin declare target
extern "C" void *__llvm_omp_indirect_call_lookup(void *host_ptr);
// A virtual call of slot 0 whose vtable pointer LLVM's lookup translates.
static inline long apply(const Op *object, long x) {
  void *const *vtable = *reinterpret_cast<void *const *const *>(object);
  auto slots = static_cast<void *const *>(__llvm_omp_indirect_call_lookup(const_cast<void **>(vtable)));
  return reinterpret_cast<long (*)(const Op *, long)>(slots[0])(object, x);
}
#pragma omp end declare target
#else
static inline long apply(const Op *object, long x) { return object->apply(x); }
#endif

long NAME(gpu_sweep_, VARIANT)(const Op *const *objects, long count, long calls) {
  long sum = 0;
#pragma omp target teams distribute parallel for reduction(+ : sum) is_device_ptr(objects)
  for (long i = 0; i < calls; i++)
    sum += apply(objects[i & (count - 1)], i);
  return sum;
}
