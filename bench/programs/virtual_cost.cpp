// `cargo xtask bench`: what a virtual call on a host-built object costs on the x86_64 device (its
// vtable pointer translated: a hit in the table) against the same call on a device-built object
// (a miss: the pointer comes back unchanged), timed on the device in the same region, and both
// against the call compiled without the pass plugin (virtual_loops.cpp's plain copy, device-built
// objects only). Prints one CSV line per case (ns per call, each of REPEAT rounds) and checks
// every sum.
#include <omp.h>
#include <stdio.h>

#include "../../tests/e2e/check.h"
#include "virtual_ops.h"

enum { OBJECTS = 64, CALLS = 1 << 22, REPEAT = 7, CASES = 3 };
static const char *const names[CASES] = {"device_built_plain", "device_built", "host_built"};

static AddOp host_adds[OBJECTS / 2];
static XorOp host_xors[OBJECTS / 2];

#pragma clang diagnostic ignored "-Wopenmp-mapping"

int main() {
  for (int i = 0; i < OBJECTS / 2; i++)
    host_adds[i].k = host_xors[i].k = i + 1;
  long want = 0;
  for (long i = 0; i < CALLS; i++) {
    long k = (i % OBJECTS) / 2 + 1;
    want += (i % OBJECTS) % 2 ? (i ^ k) : (i + k);
  }
  double ns[REPEAT][CASES];
  long sums[REPEAT][CASES];
  for (int rep = 0; rep < REPEAT; rep++) {
    double seconds[CASES];
    long sum[CASES];
#pragma omp target map(to : host_adds[0 : OBJECTS / 2], host_xors[0 : OBJECTS / 2]) map(from : seconds, sum)
    {
      AddOp adds[OBJECTS / 2];
      XorOp xors[OBJECTS / 2];
      const Op *device_built[OBJECTS], *host_built[OBJECTS];
      for (int i = 0; i < OBJECTS / 2; i++) {
        adds[i].k = xors[i].k = i + 1;
        device_built[2 * i] = &adds[i];
        device_built[2 * i + 1] = &xors[i];
        host_built[2 * i] = &host_adds[i];
        host_built[2 * i + 1] = &host_xors[i];
      }
      const Op *const *objects[CASES] = {device_built, device_built, host_built};
      for (int c = 0; c < CASES; c++) {
        double start = omp_get_wtime();
        sum[c] = c == 0 ? virtual_loop_plain(objects[c], OBJECTS, CALLS)
                        : virtual_loop_translated(objects[c], OBJECTS, CALLS);
        seconds[c] = omp_get_wtime() - start;
      }
    }
    for (int c = 0; c < CASES; c++) {
      ns[rep][c] = seconds[c] * 1e9 / CALLS;
      sums[rep][c] = sum[c];
    }
  }
  for (int rep = 0; rep < REPEAT; rep++)
    for (int c = 0; c < CASES; c++) {
      EXPECT(sums[rep][c] == want, "%s, round %d: sum %ld, expected %ld", names[c], rep, sums[rep][c], want);
      printf("%s,%d,%.3f\n", names[c], rep, ns[rep][c]);
    }
  return finish("virtual_cost");
}
