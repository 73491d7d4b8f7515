/* The GPU translation benchmark's kernels (translation_gpu.h), one per build: VARIANT=translated
 * with the pass plugin, VARIANT=llvm without it and with -DLLVM_LOOKUP. */
#include <omp.h>

#include "translation_gpu.h"

#define NAME2(a, b) a##b
#define NAME(a, b) NAME2(a, b)

#ifdef LLVM_LOOKUP
#pragma omp begin declare target
void *__llvm_omp_indirect_call_lookup(void *host_ptr);
#pragma omp end declare target
#define CALL(f, x) (((unary)__llvm_omp_indirect_call_lookup((void *)(f)))(x))
#else
#define CALL(f, x) ((f)(x))
#endif

long NAME(gpu_calls_, VARIANT)(const unary *functions, long mask, long calls) {
  long sum = 0;
#pragma omp target teams distribute parallel for reduction(+ : sum) is_device_ptr(functions)
  for (long i = 0; i < calls; i++)
    sum += CALL(functions[pick(i, mask)], i);
  return sum;
}
