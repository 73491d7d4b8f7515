/* Program 2: every way a host function pointer reaches the device: captured (implicitly mapped;
 * libomptarget translates it at launch through the plugin's target table), firstprivate, inside a
 * mapped struct, loaded from a mapped array of pointers, and returned by a device function that
 * reads a declare-target global updated from the host. */
#include "indirect_check.h"

#pragma omp begin declare target indirect
int add_one(int x, const void **self) {
  *self = (const void *)add_one;
  return x + 1;
}
int times_three(int x, const void **self) {
  *self = (const void *)times_three;
  return 3 * x;
}
int square(int x, const void **self) {
  *self = (const void *)square;
  return x * x;
}
#pragma omp end declare target

struct ops {
  int scale;
  probe_fn apply;
};

#pragma omp begin declare target
probe_fn slot;
static probe_fn device_view[3] = {add_one, times_three, square};
probe_fn from_slot(void) { return slot; }
#pragma omp end declare target

int main(void) {
  struct probe p;
  probe_fn captured = times_three;
#pragma omp target map(from : p)
  probe_call(&p, captured, device_view[1], 5);
  check_probe("captured", &p, times_three, 15);

  probe_fn private_copy = square;
#pragma omp target firstprivate(private_copy) map(from : p)
  probe_call(&p, private_copy, device_view[2], 7);
  check_probe("firstprivate", &p, square, 49);

  struct ops ops = {2, add_one};
#pragma omp target map(to : ops) map(from : p)
  probe_call(&p, ops.apply, device_view[0], ops.scale);
  check_probe("member of a mapped struct", &p, add_one, 3);

  probe_fn array[3] = {add_one, times_three, square};
  struct probe probes[3];
  int expected[3] = {11, 30, 100};
#pragma omp target map(to : array[0 : 3]) map(from : probes[0 : 3])
  for (int i = 0; i < 3; i++)
    probe_call(&probes[i], array[i], device_view[i], 10);
  for (int i = 0; i < 3; i++)
    check_probe("element of a mapped array", &probes[i], array[i], expected[i]);

  slot = square;
#pragma omp target update to(slot)
#pragma omp target map(from : p)
  probe_call(&p, from_slot(), device_view[2], 9);
  check_probe("returned by a device function", &p, square, 81);
  return finish("reach");
}
