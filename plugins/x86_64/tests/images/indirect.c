/* A host-offload device image shaped like clang 19's: for each indirect function a global named
 * after its offload entry holds the device function's address; kernels take clang 19's leading
 * dyn_ptr. Linked with the device runtime (libdevice_rtl.a) into a shared object. */
#include <stdint.h>

void *__kmpc_target_translate_fptr(void *FnPtr);

int device_square(int x) { return x * x + 1000; }
int device_twice(int x) { return 2 * x + 1000; }

void *const __omp_offloading_test_square = (void *)device_square;
void *const __omp_offloading_test_twice = (void *)device_twice;

/* Translates *slot, records the translation, and calls it. */
void __omp_offloading_test_call(void *dyn_ptr, void **slot, int *in, int *out, void **translated) {
  (void)dyn_ptr;
  int (*f)(int) = (int (*)(int))__kmpc_target_translate_fptr(*slot);
  *translated = (void *)f;
  *out = f(*in);
}

/* Twelve pointer arguments (more than the six passed in registers): sums what they point to. */
void __omp_offloading_test_many(void *dyn_ptr, int *out, int *a1, int *a2, int *a3, int *a4,
                                int *a5, int *a6, int *a7, int *a8, int *a9, int *a10, int *a11) {
  *out = (dyn_ptr == 0) + *a1 + *a2 + *a3 + *a4 + *a5 + *a6 + *a7 + *a8 + *a9 + *a10 + *a11;
}

/* Translates n[0] keys into out: one launch that reads the installed map many times. */
void __omp_offloading_test_translate_all(void *dyn_ptr, void *const *keys, void **out, const uint64_t *n) {
  (void)dyn_ptr;
  for (uint64_t i = 0; i < *n; i++)
    out[i] = __kmpc_target_translate_fptr(keys[i]);
}

/* Hostile entries: an indirect global holding the address of data, not of a function. */
int device_data = 5;
void *const __omp_offloading_test_bad_indirect = (void *)&device_data;
