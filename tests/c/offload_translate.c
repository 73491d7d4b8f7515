/* An OpenMP program that calls __kmpc_target_translate_fptr inside a target region. The link
 * tests build it against target/dist/lib/libomptarget-indirect.a for sm_90, gfx90a and x86_64
 * host offload and check that each device image holds the function and both globals once. */
#include <omp.h>
#include <stdio.h>

#pragma omp declare target
void *__kmpc_target_translate_fptr(void *FnPtr);
#pragma omp end declare target

#pragma omp begin declare target indirect
int where(void) { return omp_is_initial_device() ? 1 : 2; }
#pragma omp end declare target

int main(void) {
  int (*host_fn)(void) = where;
  int result = 0;
#pragma omp target map(from : result)
  {
    int (*device_fn)(void) = (int (*)(void))__kmpc_target_translate_fptr((void *)host_fn);
    result = device_fn();
  }
  printf("where() ran on the %s\n", result == 2 ? "device" : "host");
  return result == 0;
}
