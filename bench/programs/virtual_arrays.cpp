// `cargo xtask bench`: virtual calls over arrays of objects as kernels make them, on the x86_64
// device. Each case is an array of OBJECTS objects: all of one class; of 4 classes grouped by
// class (as codes sort them to limit divergence); of 4 classes in random order; of 64 classes in
// random order. The objects are built by the host (their vtable pointers are the host's: each
// call translates one) or by the device (the baseline: no translation is needed, and the loop is
// compiled without the pass plugin); host-built objects also through the loop compiled with the
// loop cache off, and device-built ones through the loop compiled with the project (what it costs
// code that never needed it: every vtable pointer a lookup answers is not a key). Prints one CSV line per case and round (ns per call) and checks every sum
// against the host's.
#include <new>
#include <omp.h>
#include <stdio.h>

#include "../../tests/e2e/check.h"
#include "virtual_classes.h"

#pragma omp begin declare target indirect
long Op::apply(long x) const { return x; }
long AddOp::apply(long x) const { return x + k; }
long XorOp::apply(long x) const { return x ^ k; }
#pragma omp end declare target

enum { OBJECTS = 4096, SWEEPS = 512, REPEAT = 7, SLOT = 32 };

#pragma clang diagnostic ignored "-Wopenmp-mapping"

int main() {
  static int classes[PATTERNS][OBJECTS];
  alignas(16) static unsigned char host_arena[PATTERNS][OBJECTS * SLOT];
  static const Op *host_objects[OBJECTS];
  long want[PATTERNS];
  unsigned seed = 12345;
  for (int p = 0; p < PATTERNS; p++) {
    want[p] = 0;
    for (int i = 0; i < OBJECTS; i++) {
      classes[p][i] = class_of(p, i, OBJECTS, &seed);
      host_objects[i] = construct(classes[p][i], i % 11, host_arena[p] + i * SLOT);
    }
    for (long s = 0; s < SWEEPS; s++)
      for (int i = 0; i < OBJECTS; i++)
        want[p] += host_objects[i]->apply(i);
  }
  // ns[round][pattern][0: device-built, plain loop; 1: host-built, translated loop; 2: the same
  // without the loop cache; 3: device-built, translated loop (what the project costs code that
  // never needed it)]
  enum { VARIANTS = 4 };
  static double ns[REPEAT][PATTERNS][VARIANTS];
  static long sums[REPEAT][PATTERNS][VARIANTS];
  alignas(16) static unsigned char device_arena[OBJECTS * SLOT];
#pragma omp target data map(to : host_arena, classes) map(alloc : device_arena)
  for (int rep = 0; rep < REPEAT; rep++) {
    double seconds[PATTERNS][VARIANTS];
    long sum[PATTERNS][VARIANTS];
#pragma omp target map(from : seconds, sum)
    {
      static const Op *device_built[OBJECTS], *host_built[OBJECTS];
      for (int p = 0; p < PATTERNS; p++) {
        for (int i = 0; i < OBJECTS; i++) {
          device_built[i] = construct(classes[p][i], i % 11, device_arena + i * SLOT);
          host_built[i] = reinterpret_cast<const Op *>(host_arena[p] + i * SLOT);
        }
        for (int v = 0; v < VARIANTS; v++) {
          double start = omp_get_wtime();
          sum[p][v] = v == 0   ? virtual_sweeps_plain(device_built, OBJECTS, SWEEPS)
                      : v == 1 ? virtual_sweeps_translated(host_built, OBJECTS, SWEEPS)
                      : v == 2 ? virtual_sweeps_uncached(host_built, OBJECTS, SWEEPS)
                               : virtual_sweeps_translated(device_built, OBJECTS, SWEEPS);
          seconds[p][v] = omp_get_wtime() - start;
        }
      }
    }
    for (int p = 0; p < PATTERNS; p++)
      for (int v = 0; v < VARIANTS; v++) {
        ns[rep][p][v] = seconds[p][v] * 1e9 / ((double)OBJECTS * SWEEPS);
        sums[rep][p][v] = sum[p][v];
      }
  }
  const char *built[VARIANTS] = {"device_built_plain", "host_built", "host_built_uncached", "device_built"};
  for (int rep = 0; rep < REPEAT; rep++)
    for (int p = 0; p < PATTERNS; p++)
      for (int v = 0; v < VARIANTS; v++) {
        EXPECT(sums[rep][p][v] == want[p], "%s %s, round %d: sum %ld, expected %ld", built[v], patterns[p], rep,
               sums[rep][p][v], want[p]);
        printf("%s_%s,%d,%.3f\n", built[v], patterns[p], rep, ns[rep][p][v]);
      }
  return finish("virtual_arrays");
}
