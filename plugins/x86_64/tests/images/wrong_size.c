/* A device image whose map-size global has the wrong size: the plugin must refuse to patch it. */
#include <stdint.h>
void *__omp_offloading_fptr_map_p = 0;
uint32_t __omp_offloading_fptr_map_size = 0;
void __omp_offloading_wrong_kernel(void *dyn_ptr) { (void)dyn_ptr; }
