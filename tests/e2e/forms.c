/* Program 1: the three ways to declare an indirect function. `declare target enter(f) indirect`
 * needs -fopenmp-version=52, where `to` is an error, so it lives in forms_enter.c, built with that
 * flag. Pointers reach the device in a mapped array. */
#include "indirect_check.h"

#pragma omp begin declare target indirect
int in_block(int x, const void **self) {
  *self = (const void *)in_block;
  return 10 * x + 1;
}
#pragma omp end declare target

int with_to(int x, const void **self);
#pragma omp declare target to(with_to) indirect
int with_to(int x, const void **self) {
  *self = (const void *)with_to;
  return 10 * x + 2;
}

/* forms_enter.c */
int with_enter(int x, const void **self);
#pragma omp begin declare target
extern probe_fn with_enter_device_view;
#pragma omp end declare target

#pragma omp begin declare target
/* Initialised in each image with that image's own addresses. */
static probe_fn device_view[2] = {in_block, with_to};
#pragma omp end declare target

int main(void) {
  probe_fn host[3] = {in_block, with_to, with_enter};
  const char *names[3] = {"begin/end declare target indirect", "declare target to(f) indirect",
                          "declare target enter(f) indirect (OpenMP 5.2)"};
  struct probe probes[3];
#pragma omp target map(to : host[0 : 3]) map(from : probes[0 : 3])
  {
    for (int i = 0; i < 2; i++)
      probe_call(&probes[i], host[i], device_view[i], i + 4);
    probe_call(&probes[2], host[2], with_enter_device_view, 6);
  }
  for (int i = 0; i < 3; i++)
    check_probe(names[i], &probes[i], host[i], 10 * (i + 4) + i + 1);
  return finish("forms");
}
