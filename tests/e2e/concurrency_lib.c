/* The shared library `concurrency` loads with dlopen while its other threads launch: its own
 * device image, its own indirect function, called through its host address in its own region. */
#include <omp.h>

#pragma omp begin declare target indirect
int square_less(int x) { return omp_is_initial_device() ? -1 : x * x - x; }
#pragma omp end declare target

typedef int (*operation)(int);

static operation library_operations[1] = {square_less};

/* square_less(x) computed on `device`. */
int concurrency_library_apply(int device, int x) {
  int r = 0;
#pragma omp target device(device) map(to : library_operations[0 : 1]) map(from : r)
  r = library_operations[0](x);
  return r;
}
