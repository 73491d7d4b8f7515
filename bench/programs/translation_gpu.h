/* The GPU translation benchmark (translation_gpu.c): its kernels, one per translation unit of
 * translation_gpu_calls.c, each summing functions[pick(i)](i) over i < calls in one `target teams
 * distribute parallel for` over a device copy of the host addresses (a pointer picked per call:
 * neighbouring threads call different functions, as divergent indirect calls do). */
#ifndef TRANSLATION_GPU_H
#define TRANSLATION_GPU_H

typedef long (*unary)(long);

/* The pointer call i picks among `mask + 1` (a power of two): a multiplicative hash of i. */
static inline unsigned long pick(long i, long mask) {
  unsigned long h = (unsigned long)i * 0x9E3779B97F4A7C15ul;
  return (h ^ (h >> 29)) & (unsigned long)mask;
}

#ifdef __cplusplus
extern "C" {
#endif
/* Compiled with the pass plugin: each call translated by the project (its index, or a binary
 * search where the index is switched off or the stock table is read). */
long gpu_calls_translated(const unary *functions, long mask, long calls);
/* Compiled without the pass plugin: each pointer translated by the lookup LLVM ships
 * (__llvm_omp_indirect_call_lookup, a binary search of the stock runtime's table of the image). */
long gpu_calls_llvm(const unary *functions, long mask, long calls);
#ifdef __cplusplus
}
#endif

#endif
