/* Program 6, second part: an image with no indirect function at all. The device library is linked
 * and its globals are present, but no map is installed: every pointer comes back unchanged and
 * the region still runs. */
#include "indirect_check.h"

#pragma omp begin declare target
int plain(int x) { return x + 1; }
#pragma omp end declare target

int host_fn(int x) { return x - 1; }

int main(void) {
  const void *host_in[2] = {(const void *)plain, (const void *)host_fn};
  const void *out[4];
  const void *device_plain = 0;
  int on_device = 0, result = 0;
#pragma omp target map(to : host_in[0 : 2]) map(from : out[0 : 4], device_plain, on_device, result)
  {
    on_device = !omp_is_initial_device();
    device_plain = (const void *)plain;
    out[0] = __kmpc_target_translate_fptr((void *)host_in[0]);
    out[1] = __kmpc_target_translate_fptr((void *)host_in[1]);
    out[2] = __kmpc_target_translate_fptr((void *)device_plain);
    out[3] = __kmpc_target_translate_fptr(0);
    result = plain(41);
  }
  EXPECT(on_device, "the region ran on the host");
  EXPECT(out[0] == host_in[0], "host address of a declare-target function changed to %p", out[0]);
  EXPECT(out[1] == host_in[1], "host function changed to %p", out[1]);
  EXPECT(out[2] == device_plain, "device address changed to %p", out[2]);
  EXPECT(out[3] == 0, "null changed to %p", out[3]);
  EXPECT(result == 42, "plain(41) returned %d", result);
  return finish("no_indirect");
}
