/* Program 4: indirect functions from several translation units (this one, multi_unit.c) and from
 * a static library (multi_lib.c, archived into libmulti.a). The linker merges their device code
 * into one image; its map must hold every unit's functions. */
#include "indirect_check.h"

#pragma omp begin declare target indirect
int main_unit_fn(int x, const void **self) {
  *self = (const void *)main_unit_fn;
  return x + 100;
}
#pragma omp end declare target

/* multi_unit.c */
int unit_fn(int x, const void **self);
extern probe_fn unit_fn_device_view;
#pragma omp declare target to(unit_fn_device_view)
/* multi_lib.c, from libmulti.a */
int lib_fn(int x, const void **self);
int lib_fn2(int x, const void **self);
extern probe_fn lib_device_view[2];
#pragma omp declare target to(lib_device_view)

#pragma omp begin declare target
static probe_fn main_device_view = main_unit_fn;
#pragma omp end declare target

int main(void) {
  probe_fn host[4] = {main_unit_fn, unit_fn, lib_fn, lib_fn2};
  const char *names[4] = {"main unit", "second unit", "static library", "static library, second"};
  int expected[4] = {101, 202, 303, 404};
  struct probe probes[4];
#pragma omp target map(to : host[0 : 4]) map(from : probes[0 : 4])
  {
    probe_call(&probes[0], host[0], main_device_view, 1);
    probe_call(&probes[1], host[1], unit_fn_device_view, 2);
    probe_call(&probes[2], host[2], lib_device_view[0], 3);
    probe_call(&probes[3], host[3], lib_device_view[1], 4);
  }
  for (int i = 0; i < 4; i++)
    check_probe(names[i], &probes[i], host[i], expected[i]);
  return finish("multi");
}
