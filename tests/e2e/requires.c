/* Program: `#pragma omp requires` with every clause the x86_64 device meets (clang 18+ emits the
 * requirement as an offload entry of its own: flags 0x10, no name, no address). Under
 * unified_shared_memory device code reads and writes host data through plain host pointers,
 * unmapped, and calls host function pointers reached through them: translated, the device copy
 * runs. dynamic_allocators: device code allocates. */
#include <stdlib.h>

#include "indirect_check.h"

#pragma omp requires unified_shared_memory
#pragma omp requires unified_address
#pragma omp requires dynamic_allocators
#pragma omp requires atomic_default_mem_order(seq_cst)

#pragma omp begin declare target indirect
int halve(int x, const void **self) {
  *self = (const void *)halve;
  return x / 2;
}
int negate(int x, const void **self) {
  *self = (const void *)negate;
  return -x;
}
#pragma omp end declare target

#pragma omp begin declare target
/* Under unified_shared_memory a declare-target variable is the host's (clang reaches it through
 * a reference pointer, as a `link` variable): the device image's own addresses are taken in
 * device code instead. */
static probe_fn device_addr(int i) { return i == 0 ? halve : negate; }
/* The host's variable, which device code reads and writes in place (on the clang 19 path the
 * plugin points its reference pointer at the host copy, as libomptarget would). */
int shared_counter = 40;
#pragma omp end declare target

/* Host data the device reaches only through pointers (never mapped). */
struct table {
  probe_fn fns[2];
  int inputs[2];
};

int main(void) {
  struct table *host = malloc(sizeof *host);
  struct probe *probes = malloc(2 * sizeof *probes);
  host->fns[0] = halve;
  host->fns[1] = negate;
  host->inputs[0] = 84;
  host->inputs[1] = 5;
  int counted = 0;
#pragma omp target firstprivate(host, probes) map(tofrom : counted)
  {
    int *scratch = malloc(2 * sizeof *scratch); /* dynamic_allocators */
    for (int i = 0; i < 2; i++) {
      probe_call(&probes[i], host->fns[i], device_addr(i), host->inputs[i]);
      scratch[i] = 1;
    }
    counted = scratch[0] + scratch[1];
    shared_counter += counted;
    free(scratch);
  }
  check_probe("halve through unified shared memory", &probes[0], halve, 42);
  check_probe("negate through unified shared memory", &probes[1], negate, -5);
  EXPECT(counted == 2, "device allocation: counted %d, expected 2", counted);
  EXPECT(shared_counter == 42, "declare target variable: %d on the host, expected 42", shared_counter);
  free(host);
  free(probes);
  return finish("requires");
}
