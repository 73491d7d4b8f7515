// `gpu-test`'s bundle (run.sh --bench): virtual_arrays.cpp's cases on a GPU. Arrays of OBJECTS
// objects of one class, 4 classes grouped by class, 4 or 64 classes in random order; host-built
// objects (mapped: each call translates its vtable pointer) through the loop compiled with the
// pass plugin (with and without its loop cache), and through LLVM's lookup, against device-built
// objects of the same classes through the loop compiled without it; and those device-built objects
// through the loop compiled with the pass plugin (what the project costs code that never needed
// it, goal 1.05x). Each point is timed on the host around its target
// region (ROUNDS launches of CALLS calls); every sum is checked against the host's. Prints CSV
// lines `<case>,<round>,<ns per call>`, then the medians and ratios with their spread and goals.
#include <algorithm>
#include <new>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tests/e2e/check.h"
#include "virtual_arrays_gpu.h"

#pragma omp begin declare target indirect
long Op::apply(long x) const { return x; }
long AddOp::apply(long x) const { return x + k; }
long XorOp::apply(long x) const { return x ^ k; }
#pragma omp end declare target

enum { OBJECTS = 1 << 20, SLOT = 32, ROUNDS = 9, VARIANTS = 5 };
static const long CALLS = 64L * OBJECTS;
static const char *const variants[VARIANTS] = {"device_built_plain", "host_built", "host_built_llvm_lookup",
                                               "host_built_uncached", "device_built"};


static double median(double *v, int n) {
  std::sort(v, v + n);
  return v[n / 2];
}

int main() {
  unsigned char *arena = static_cast<unsigned char *>(aligned_alloc(64, (size_t)OBJECTS * SLOT));
  int *classes = static_cast<int *>(malloc(sizeof(int) * OBJECTS));
  int device = omp_get_default_device();
  unsigned char *device_arena = static_cast<unsigned char *>(omp_target_alloc((size_t)OBJECTS * SLOT, device));
  const Op **host_built = static_cast<const Op **>(omp_target_alloc(sizeof(Op *) * OBJECTS, device));
  const Op **device_built = static_cast<const Op **>(omp_target_alloc(sizeof(Op *) * OBJECTS, device));
  static double ns[PATTERNS][VARIANTS][ROUNDS];
  unsigned seed = 12345;
  for (int p = 0; p < PATTERNS; p++) {
    long want = 0;
    for (long i = 0; i < OBJECTS; i++) {
      classes[i] = class_of(p, i, OBJECTS, &seed);
      construct(classes[i], i % 11, arena + i * SLOT);
    }
    for (long i = 0; i < CALLS; i++)
      want += reinterpret_cast<const Op *>(arena + (i & (OBJECTS - 1)) * SLOT)->apply(i);
#pragma omp target enter data map(to : arena[0 : (size_t)OBJECTS * SLOT], classes[0 : OBJECTS])
#pragma omp target teams distribute parallel for is_device_ptr(device_arena, host_built, device_built)
    for (long i = 0; i < OBJECTS; i++) {
      device_built[i] = construct(classes[i], i % 11, device_arena + i * SLOT);
      host_built[i] = reinterpret_cast<const Op *>(arena + i * SLOT);
    }
    for (int r = 0; r < ROUNDS; r++)
      for (int v = 0; v < VARIANTS; v++) {
        double start = omp_get_wtime();
        long sum = v == 0   ? gpu_sweep_plain(device_built, OBJECTS, CALLS)
                   : v == 1 ? gpu_sweep_translated(host_built, OBJECTS, CALLS)
                   : v == 2 ? gpu_sweep_llvm(host_built, OBJECTS, CALLS)
                   : v == 3 ? gpu_sweep_uncached(host_built, OBJECTS, CALLS)
                            : gpu_sweep_translated(device_built, OBJECTS, CALLS);
        ns[p][v][r] = (omp_get_wtime() - start) * 1e9 / CALLS;
        EXPECT(sum == want, "%s %s, round %d: sum %ld, expected %ld", variants[v], patterns[p], r, sum, want);
      }
#pragma omp target exit data map(delete : arena[0 : (size_t)OBJECTS * SLOT], classes[0 : OBJECTS])
  }
  for (int p = 0; p < PATTERNS; p++)
    for (int v = 0; v < VARIANTS; v++)
      for (int r = 0; r < ROUNDS; r++)
        printf("%s_%s,%d,%.4f\n", variants[v], patterns[p], r, ns[p][v][r]);
  printf("\nvirtual calls over arrays of %d objects on device %d, ns per call (median of %d launches of %ld calls):\n",
         OBJECTS, device, ROUNDS, CALLS);
  for (int p = 0; p < PATTERNS; p++) {
    double ratio[ROUNDS], llvm_ratio[ROUNDS], med[VARIANTS];
    for (int r = 0; r < ROUNDS; r++) {
      ratio[r] = ns[p][1][r] / ns[p][0][r];
      llvm_ratio[r] = ns[p][2][r] / ns[p][1][r];
    }
    for (int v = 0; v < VARIANTS; v++)
      med[v] = median(ns[p][v], ROUNDS);
    double r = median(ratio, ROUNDS), spread_low = ratio[0], spread_high = ratio[ROUNDS - 1];
    double l = median(llvm_ratio, ROUNDS);
    bool repeated = p < 2;
    const char *verdict = spread_high - spread_low > 0.5 * r ? "too noisy to judge"
                          : repeated ? (r <= 1.1 ? "goal <= 1.1x met" : "goal <= 1.1x MISSED")
                                     : (l >= 3.0 ? "goal: LLVM's lookup >= 3x slower, met"
                                                 : "goal: LLVM's lookup >= 3x slower, MISSED");
    printf("  %-10s device-built %.4f  host-built %.4f  ratio %.2fx (rounds %.2fx..%.2fx)  LLVM's lookup %.4f "
           "(%.2fx ours)  without the loop cache %.4f: %s\n",
           patterns[p], med[0], med[1], r, spread_low, spread_high, med[2], l, med[3], verdict);
    double own[ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
      own[r] = ns[p][4][r] / ns[p][0][r];
    double o = median(own, ROUNDS);
    printf("  %-10s device-built with the project %.4f  ratio %.2fx (rounds %.2fx..%.2fx): %s\n", patterns[p], med[4], o,
           own[0], own[ROUNDS - 1],
           own[ROUNDS - 1] - own[0] > 0.5 * o ? "too noisy to judge"
           : o <= 1.05                         ? "goal <= 1.05x met"
                                               : "goal <= 1.05x MISSED");
    // Why a goal is missed: what each translation adds to a call of the baseline (the program's
    // table is small, so LLVM's binary search stays in cache), and how much dearer the baseline's
    // calls are than the one-class case's (lanes calling different functions).
    if (strstr(verdict, "MISSED")) {
      double ours = med[1] - med[0], llvm = med[2] - med[0];
      printf("  %-10s why: a translation is a small part of a call here: ours adds %.4f ns to the baseline's "
             "%.4f, LLVM's lookup %.4f (%.2fx ours); divergent calls make the baseline %.2fx the 1-class one\n",
             patterns[p], ours, med[0], llvm, ours > 0 ? llvm / ours : 0.0, med[0] / median(ns[0][0], ROUNDS));
    }
  }
  omp_target_free(device_arena, device);
  omp_target_free(host_built, device);
  omp_target_free(device_built, device);
  free(arena);
  free(classes);
  return finish("virtual_arrays_gpu");
}
