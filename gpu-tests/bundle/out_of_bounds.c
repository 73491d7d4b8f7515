/* The memcheck step's negative control (run-llvm22.sh): a kernel writes one int past the end of a
 * 64-int device allocation. The allocator's granule covers the word, so the GPU does not fault and
 * the program passes its check; only compute-sanitizer's memcheck sees the invalid write, and the
 * step must then fail. */
#include <omp.h>
#include <stdio.h>

int main(void) {
  int device = omp_get_default_device();
  int *data = (int *)omp_target_alloc(64 * sizeof(int), device);
  if (!data) {
    printf("out_of_bounds: no device memory\n");
    return 1;
  }
  int past_the_end = 64;
#pragma omp target is_device_ptr(data) firstprivate(past_the_end)
  data[past_the_end] = 1;
  omp_target_free(data, device);
  printf("out_of_bounds: 1 checks, 0 failed\n");
  return 0;
}
