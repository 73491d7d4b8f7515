/* Program 6: every device loads its own copy of the image and gets its own map. The same host
 * pointer must translate, on each device, to that device's copy. Prints "device count: N" (the x86_64
 * plugin reports 2; a one-GPU machine has 1 and checks what it can). */
#include "indirect_check.h"

#pragma omp begin declare target indirect
int per_device(int x, const void **self) {
  *self = (const void *)per_device;
  return x * 5;
}
#pragma omp end declare target

#pragma omp begin declare target
static probe_fn device_view = per_device;
#pragma omp end declare target

#define MAX_DEVICES 8

int main(void) {
  int devices = omp_get_num_devices();
  printf("device count: %d\n", devices);
  EXPECT(devices >= 1, "no device");
  if (devices > MAX_DEVICES)
    devices = MAX_DEVICES;
  probe_fn host[1] = {per_device};
  struct probe probes[MAX_DEVICES];
  for (int d = 0; d < devices; d++) {
    struct probe *p = &probes[d];
#pragma omp target device(d) map(to : host[0 : 1]) map(from : p[0 : 1])
    probe_call(p, host[0], device_view, d + 1);
    char what[32];
    snprintf(what, sizeof what, "device %d", d);
    check_probe(what, p, per_device, 5 * (d + 1));
  }
  for (int d = 1; d < devices; d++)
    EXPECT(probes[d].translated != probes[0].translated,
           "devices 0 and %d share the copy at %p: each must have its own", d, probes[d].translated);
  return finish("devices");
}
