/* Program 6, second part: an image with no indirect function at all. The device library is linked
 * and its globals are present, but no map is installed: a device address and null come back
 * unchanged and the region still runs. */
#include "indirect_check.h"

#pragma omp begin declare target
int plain(int x) { return x + 1; }
#pragma omp end declare target

int main(void) {
  const void *out[2];
  const void *device_plain = 0;
  int on_device = 0, result = 0;
#pragma omp target map(from : out[0 : 2], device_plain, on_device, result)
  {
    on_device = !omp_is_initial_device();
    device_plain = (const void *)plain;
    out[0] = __kmpc_target_translate_fptr((void *)device_plain);
    out[1] = __kmpc_target_translate_fptr(0);
    result = plain(41);
  }
  EXPECT(on_device, "the region ran on the host");
  EXPECT(out[0] == device_plain, "device address changed to %p", out[0]);
  EXPECT(out[1] == 0, "null changed to %p", out[1]);
  EXPECT(result == 42, "plain(41) returned %d", result);
  return finish("no_indirect");
}
