/* A device image with no indirect function and no function-pointer map globals. */
void __omp_offloading_plain_kernel(void *dyn_ptr, int *out) {
  (void)dyn_ptr;
  *out = 42;
}
