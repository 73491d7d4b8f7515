/* `cargo xtask bench`: a call through a pointer picked per iteration from 4096 (or, with
 * -DFUNCTIONS_64K, 65536) indirect functions whose host addresses are mapped, timed on the device
 * (omp_get_wtime inside the target region), each translated by the pass plugin. Built by every
 * release and run through its runtime, it compares the table each installs: the project's
 * plugins' (clang 19), the registration library's per-device table with its hash index (clang
 * 21-23), the same without the index, and the stock runtime's per-image table (binary search).
 * argv[1] names the configuration; prints `<name>,<round>,<ns per call>` per round and checks
 * every sum against the host's. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "../../tests/e2e/check.h"

typedef long (*unary)(long);

#include "indirect_functions.h"
#ifdef FUNCTIONS_64K
#define FUNCTIONS 65536
#pragma omp begin declare target indirect
F16384(1) F16384(2) F16384(3) F16384(4)
#pragma omp end declare target
static unary table[FUNCTIONS] = {A16384(1) A16384(2) A16384(3) A16384(4)};
#else
#define FUNCTIONS 4096
#pragma omp begin declare target indirect
F1024(1) F1024(2) F1024(3) F1024(4)
#pragma omp end declare target
static unary table[FUNCTIONS] = {A1024(1) A1024(2) A1024(3) A1024(4)};
#endif

enum { CALLS = 1 << 22, ROUNDS = 5 };

/* The calls of one round: a pointer picked per iteration by a xorshift generator. */
#pragma omp begin declare target
static long calls(const unary *functions, long n) {
  unsigned long state = 88172645463325252ul;
  long sum = 0;
  for (long i = 0; i < n; i++) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    sum += functions[state & (FUNCTIONS - 1)](i);
  }
  return sum;
}
#pragma omp end declare target

int main(int argc, char **argv) {
  const char *name = argc > 1 ? argv[1] : "stock_table";
  long want = calls(table, CALLS);
  for (int round = 0; round < ROUNDS; round++) {
    double seconds = 0;
    long sum = 0;
#pragma omp target map(to : table[0 : FUNCTIONS]) map(from : seconds, sum)
    {
      double start = omp_get_wtime();
      sum = calls(table, CALLS);
      seconds = omp_get_wtime() - start;
    }
    EXPECT(sum == want, "round %d: sum %ld, host %ld", round, sum, want);
    printf("%s,%d,%.3f\n", name, round, seconds * 1e9 / CALLS);
  }
  return finish("stock_table");
}
