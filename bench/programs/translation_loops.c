/* The loops of the translation-cost benchmark (translation_cost.c). Compiled twice into the same
 * program: with the pass plugin as -DVARIANT=translated, without it as -DVARIANT=plain (the
 * baseline: the same indirect calls, untranslated). */
#ifndef VARIANT
#error "compile with -DVARIANT=translated or -DVARIANT=plain"
#endif
#define JOIN2(a, b) a##_##b
#define JOIN(a, b) JOIN2(a, b)

typedef long (*unary)(long);

#pragma omp begin declare target
/* One loop-invariant pointer: the translation is hoisted out of the loop. */
long JOIN(invariant_loop, VARIANT)(unary f, long n) {
  long sum = 0;
  for (long i = 0; i < n; i++)
    sum += f(i);
  return sum;
}

/* A pointer picked per iteration from `table` (mask + 1 entries, a power of two): one
 * translation per call. */
long JOIN(varying_loop, VARIANT)(const unary *table, long mask, long n) {
  long sum = 0;
  for (long i = 0; i < n; i++)
    sum += table[(i * 7919) & mask](i);
  return sum;
}
#pragma omp end declare target
