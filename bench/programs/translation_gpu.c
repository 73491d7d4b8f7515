/* The GPU bundle's translation benchmark (run.sh --bench), built as a user builds a program: 512
 * `declare target indirect` functions (the bundle's part must fit one device call: each 1024 add
 * about 1.2 MB of device image), their host addresses copied to the device, and a kernel
 * calling a pointer picked per call. The same program times the calls translated by the project
 * (its configuration file: the registration library's table and hash index) and by the lookup
 * LLVM ships, called explicitly on the stock runtime's table of the image (a binary search), in
 * alternating launches; every sum is checked against the host's. argv[1] names the run (`index`,
 * or `index_off` under OMPTARGET_INDIRECT_INDEX=0, the control: both are binary searches then, and
 * the ratio falls to about 1x). Prints `<run>_<variant>,<round>,<ns per call>` lines, then the
 * medians, the ratio with its spread and the verdict. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tests/e2e/check.h"
#include "indirect_functions.h"
#include "translation_gpu.h"

#define FUNCTIONS 512
#pragma omp begin declare target indirect
F256(1) F256(2)
#pragma omp end declare target
static unary table[FUNCTIONS] = {A256(1) A256(2)};

enum { ROUNDS = 11, VARIANTS = 2 };
static const long CALLS = 1L << 26;
static const char *const variants[VARIANTS] = {"translated", "llvm_lookup"};

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, n, sizeof *v, by_value);
  return v[n / 2];
}

int main(int argc, char **argv) {
  const char *run = argc > 1 ? argv[1] : "index";
  int device = omp_get_default_device();
  unary *functions = (unary *)omp_target_alloc(sizeof table, device);
  if (!functions || omp_target_memcpy(functions, table, sizeof table, 0, 0, device, omp_get_initial_device())) {
    printf("translation_gpu: no device memory\n");
    return 1;
  }
  long want = 0;
  for (long i = 0; i < CALLS; i++)
    want += table[pick(i, FUNCTIONS - 1)](i);
  /* The first launch loads the image (and the registration library installs its table). */
  EXPECT(gpu_calls_translated(functions, FUNCTIONS - 1, 1024) == gpu_calls_llvm(functions, FUNCTIONS - 1, 1024),
         "the warm-up launches disagree");
  static double ns[VARIANTS][ROUNDS];
  for (int r = 0; r < ROUNDS; r++)
    for (int v = 0; v < VARIANTS; v++) {
      double start = omp_get_wtime();
      long sum = v == 0 ? gpu_calls_translated(functions, FUNCTIONS - 1, CALLS)
                        : gpu_calls_llvm(functions, FUNCTIONS - 1, CALLS);
      ns[v][r] = (omp_get_wtime() - start) * 1e9 / CALLS;
      EXPECT(sum == want, "%s, round %d: sum %ld, expected %ld", variants[v], r, sum, want);
    }
  omp_target_free(functions, device);
  double ratio[ROUNDS];
  for (int r = 0; r < ROUNDS; r++) {
    for (int v = 0; v < VARIANTS; v++)
      printf("%s_%s,%d,%.5f\n", run, variants[v], r, ns[v][r]);
    ratio[r] = ns[1][r] / ns[0][r];
  }
  double low = ratio[0], high = ratio[0];
  for (int r = 1; r < ROUNDS; r++) {
    low = ratio[r] < low ? ratio[r] : low;
    high = ratio[r] > high ? ratio[r] : high;
  }
  double m = median(ratio, ROUNDS), ours = median(ns[0], ROUNDS), llvm = median(ns[1], ROUNDS);
  int control = strcmp(run, "index_off") == 0;
  const char *verdict = high - low > 0.5 * m ? "too noisy to judge"
                        : control            ? (m < 1.5 ? "the control holds: without the index the ratio falls to about 1x"
                                                        : "CONTROL FAILED: the ratio did not fall without the index")
                        : m >= 2.0           ? "goal: LLVM's lookup >= 2x slower, met"
                                             : "goal: LLVM's lookup >= 2x slower, MISSED";
  printf("\ncalls through %d indirect functions' host addresses on device %d, a pointer picked per call "
         "(%s), ns per call (median of %d launches of %ld calls):\n",
         FUNCTIONS, device, run, ROUNDS, CALLS);
  printf("  translated by the project %.5f  LLVM's lookup %.5f  LLVM's / ours %.2fx (rounds %.2fx..%.2fx): %s\n",
         ours, llvm, m, low, high, verdict);
  return finish("translation_gpu");
}
