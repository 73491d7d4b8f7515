/* A program outside the source tree that uses an installed omptarget-indirect: function pointers
 * reach the device as data (a mapped array) and device code calls them with no explicit
 * translation; the pass plugin loaded by the install's flags makes each call run the device copy.
 * Each callee adds 1 on the device and 1000 where it runs as the host copy (there
 * omp_is_initial_device() is libomp's host function and answers 1). Prints "consumer: ok" and
 * exits 0 when every call ran the device copy. */
#include <omp.h>
#include <stdio.h>

#include <omptarget-indirect.h>

#if OMPTARGET_INDIRECT_VERSION_MAJOR < 0
#error "the header's version macros are missing"
#endif

#pragma omp begin declare target indirect
int twice(int x) { return 2 * x + (omp_is_initial_device() ? 1000 : 1); }
int square(int x) { return x * x + (omp_is_initial_device() ? 1000 : 1); }
#pragma omp end declare target

typedef int (*unary)(int);

int main(void) {
  unary funcs[2] = {twice, square};
  int r[2] = {0, 0};
#pragma omp target map(to : funcs[0 : 2]) map(from : r[0 : 2])
  for (int i = 0; i < 2; i++)
    r[i] = funcs[i](5);
  int ok = r[0] == 11 && r[1] == 26;
  printf("consumer (omptarget-indirect %s): twice(5) = %d, square(5) = %d: %s\n", OMPTARGET_INDIRECT_VERSION,
         r[0], r[1], ok ? "ok" : "FAILED (a host copy ran)");
  return !ok;
}
