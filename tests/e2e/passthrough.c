/* Program 5: pointers the translation must return unchanged: a device function's address taken on
 * the device (a pointer that exists only there; a device_type(nohost) function cannot be named in
 * a region, whose host fallback must compile too), a data pointer, and null; next to an indirect
 * function that is translated, so the map is present. (A host function's address that no image
 * pairs is no device address: translating it is the mistake host_calls.cpp makes.) */
#include "indirect_check.h"

#pragma omp begin declare target indirect
int indirect_fn(int x, const void **self) {
  *self = (const void *)indirect_fn;
  return x - 1;
}
#pragma omp end declare target

#pragma omp begin declare target
int device_only(int x) { return x + 2; }
static probe_fn device_view = indirect_fn;
#pragma omp end declare target

enum { DEVICE_ONLY, DATA, NULL_PTR, CASES };

int main(void) {
  const char *names[CASES] = {"device function address taken on the device", "data pointer", "null"};
  static int data[4];
  const void *host_in[CASES] = {0, 0, 0};
  const void *in[CASES], *out[CASES];
  probe_fn indirect_host[1] = {indirect_fn};
  int device_only_result = 0;
  struct probe p;
#pragma omp target map(to : host_in[0 : CASES], indirect_host[0 : 1]) map(tofrom : data[0 : 4])     \
    map(from : in[0 : CASES], out[0 : CASES], device_only_result, p)
  {
    for (int i = 0; i < CASES; i++)
      in[i] = host_in[i];
    in[DEVICE_ONLY] = (const void *)device_only;
    in[DATA] = data;
    for (int i = 0; i < CASES; i++)
      out[i] = __kmpc_target_translate_fptr((void *)in[i]);
    device_only_result = ((int (*)(int))out[DEVICE_ONLY])(5);
    probe_call(&p, indirect_host[0], device_view, 8);
  }
  for (int i = 0; i < CASES; i++)
    EXPECT(out[i] == in[i], "%s: %p came back as %p", names[i], in[i], out[i]);
  EXPECT(in[DEVICE_ONLY] != 0, "the device-only function has an address");
  EXPECT(device_only_result == 7, "the device-only function returned %d", device_only_result);
  check_probe("the indirect function beside them", &p, indirect_fn, 7);
  return finish("passthrough");
}
