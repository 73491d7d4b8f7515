/* `cargo xtask bench`: what the pass plugin's inserted translation costs on the device, measured
 * on the device (omp_get_wtime inside the target region) against the same loops compiled without
 * the plugin, in the same run: calls through a loop-invariant pointer, and through a pointer
 * picked per iteration from 1024 (or, with -DFUNCTIONS_64K, 65536) indirect functions. Two
 * baselines: the untranslated loop over the mapped host addresses (`_plain`: the host copies run,
 * which only the x86_64 device allows), and over `device_table`, whose device copy the device
 * image initialises with the device copies' addresses (`_device`: the translated loop's callees,
 * untranslated); and `device_table` through the translated loops (function pointers taken in
 * device code: what the project costs code that never needed it). Prints one CSV line per case and
 * round (ns per call) and checks every sum. */
#include <omp.h>
#include <stdio.h>

#include "../../tests/e2e/check.h"

typedef long (*unary)(long);

#pragma omp begin declare target
long invariant_loop_plain(unary f, long n);
long invariant_loop_translated(unary f, long n);
long varying_loop_plain(const unary *table, long mask, long n);
long varying_loop_translated(const unary *table, long mask, long n);
#pragma omp end declare target

/* FUNCTIONS indirect functions (1024, or 65536 with -DFUNCTIONS_64K), each x ^ its number. Their
 * numbers are base-4 digits after a leading 1-4 (fn_10000 ... fn_43333 for 1024): the table lists
 * them in that order, and number_of() recomputes the number of entry k. */
#include "indirect_functions.h"
#ifdef FUNCTIONS_64K
#define FUNCTIONS 65536
#define PROGRAM "translation_cost_64k"
#define DIGITS 7 /* base-4 digits after the leading one */
#pragma omp begin declare target indirect
F16384(1) F16384(2) F16384(3) F16384(4)
#pragma omp end declare target
static unary table[FUNCTIONS] = {A16384(1) A16384(2) A16384(3) A16384(4)};
#pragma omp begin declare target
static unary device_table[FUNCTIONS] = {A16384(1) A16384(2) A16384(3) A16384(4)};
#pragma omp end declare target
#else
#define FUNCTIONS 1024
#define PROGRAM "translation_cost"
#define DIGITS 4
#pragma omp begin declare target indirect
F256(1) F256(2) F256(3) F256(4)
#pragma omp end declare target
static unary table[FUNCTIONS] = {A256(1) A256(2) A256(3) A256(4)};
#pragma omp begin declare target
static unary device_table[FUNCTIONS] = {A256(1) A256(2) A256(3) A256(4)};
#pragma omp end declare target
#endif

static long number_of(long k) { /* decimal digits: the leading (1-4), then k's base-4 digits */
  long n = k / (FUNCTIONS / 4) + 1;
  for (int shift = 2 * (DIGITS - 1); shift >= 0; shift -= 2)
    n = n * 10 + ((k >> shift) & 3);
  return n;
}

enum { CALLS = 1 << 22, REPEAT = 7, CASES = 8 };

int main(void) {
  long invariant_want = 0, varying_want = 0;
  for (long i = 0; i < CALLS; i++) {
    invariant_want += i ^ number_of(5);
    varying_want += i ^ number_of((i * 7919) & (FUNCTIONS - 1));
  }
  double ns[REPEAT][CASES];
  long sums[CASES];
  int device_copies = 0;
  for (int rep = 0; rep < REPEAT; rep++) {
    double seconds[CASES];
#pragma omp target map(to : table[0 : FUNCTIONS]) map(from : seconds[0 : CASES], sums[0 : CASES], device_copies)
    {
      unary f = table[5];
      /* The device baseline calls other addresses than the host's: the device copies. */
      device_copies = device_table[5] != f && device_table[FUNCTIONS - 1] != table[FUNCTIONS - 1];
      for (int c = 0; c < CASES; c++) {
        double start = omp_get_wtime();
        switch (c) {
        case 0: sums[c] = invariant_loop_plain(f, CALLS); break;
        case 1: sums[c] = invariant_loop_translated(f, CALLS); break;
        case 2: sums[c] = invariant_loop_plain(device_table[5], CALLS); break;
        case 3: sums[c] = varying_loop_plain(table, FUNCTIONS - 1, CALLS); break;
        case 4: sums[c] = varying_loop_translated(table, FUNCTIONS - 1, CALLS); break;
        case 5: sums[c] = varying_loop_plain(device_table, FUNCTIONS - 1, CALLS); break;
        case 6: sums[c] = invariant_loop_translated(device_table[5], CALLS); break;
        default: sums[c] = varying_loop_translated(device_table, FUNCTIONS - 1, CALLS); break;
        }
        seconds[c] = omp_get_wtime() - start;
      }
    }
    EXPECT(device_copies, "device_table holds the host addresses");
    for (int c = 0; c < CASES; c++) {
      ns[rep][c] = seconds[c] * 1e9 / CALLS;
      EXPECT(sums[c] == (c < 3 || c == 6 ? invariant_want : varying_want), "case %d: sum %ld", c, sums[c]);
    }
  }
  const char *names[CASES] = {"invariant_plain",  "invariant_translated",       "invariant_device",
                              "varying_plain",    "varying_translated",         "varying_device",
                              "invariant_device_translated", "varying_device_translated"};
  printf("case,round,ns_per_call\n");
  for (int rep = 0; rep < REPEAT; rep++)
    for (int c = 0; c < CASES; c++)
      printf("%s,%d,%.3f\n", names[c], rep, ns[rep][c]);
  return finish(PROGRAM);
}
