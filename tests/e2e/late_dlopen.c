/* A library with its own device image loaded while other threads launch on devices that have
 * all run kernels: the stock libomptarget (21, 22 and 23, x86_64 device) hangs in some runs with
 * no part of this project (docs/concurrency.md). Built by stock clang without the configuration
 * file; its library is concurrency_lib.c, built the same way. Its regions compute plain values:
 * the hang needs no indirect call.
 *
 *   ./late_dlopen <library>   prints `late_dlopen: <n> regions, <m> failed` */
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>

typedef int (*library_region)(int device, int x);

enum { LAUNCHERS = 16, LAUNCHES = 64 };

int main(int argc, char **argv) {
  int devices = omp_get_num_devices(), regions = 0, failed = 0;
  if (argc < 2 || devices < 1) {
    fprintf(stderr, "usage: %s <library> (with an offload device)\n", argv[0]);
    return 2;
  }
  /* Every device's first launch, before the threads start. */
  for (int d = 0; d < devices; d++) {
    int r = 0;
#pragma omp target device(d) map(from : r)
    r = d + 7;
    regions++;
    failed += r != d + 7;
  }
#pragma omp parallel num_threads(LAUNCHERS + 1) reduction(+ : regions, failed)
  {
    int t = omp_get_thread_num();
#pragma omp barrier
    if (t < LAUNCHERS) {
      for (int i = 0; i < LAUNCHES; i++) {
        int r = 0;
#pragma omp target device((t + i) % devices) map(from : r)
        r = i + 7;
        regions++;
        failed += r != i + 7;
      }
    } else {
      void *library = dlopen(argv[1], RTLD_NOW);
      library_region region = library ? (library_region)dlsym(library, "concurrency_library_apply") : 0;
      if (!region)
        fprintf(stderr, "%s: %s\n", argv[1], dlerror());
      /* The library's region ran if it wrote its result (which depends on how the library was
       * built: stock clang calls the host copy of its indirect function on this device). */
      regions++;
      failed += !region || region(devices - 1, 21) == 0;
    }
  }
  printf("late_dlopen: %d regions, %d failed\n", regions, failed);
  return failed != 0;
}
