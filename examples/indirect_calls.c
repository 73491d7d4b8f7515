/* The demo (`cargo xtask demo`): calls functions on an OpenMP device through pointers that hold
 * their *host* addresses, as `declare target indirect` promises. clang 19 does not insert the
 * translation itself, so device code calls __kmpc_target_translate_fptr (libomptarget-indirect)
 * before calling through a pointer that came from the host.
 *
 * Build: clang-19 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu indirect_calls.c \
 *          -L<llvm16 lib> -L<target/dist/lib> -lomptarget-indirect       (cargo xtask env) */
#include <omp.h>
#include <stdio.h>

#pragma omp begin declare target
void *__kmpc_target_translate_fptr(void *fn_ptr);
#pragma omp end declare target

/* Each function reports the address of the copy that ran, so the table can show it. */
typedef int (*op_fn)(int x, const void **ran);

#pragma omp begin declare target indirect
int square(int x, const void **ran) {
  *ran = (const void *)square;
  return x * x;
}
int cube(int x, const void **ran) {
  *ran = (const void *)cube;
  return x * x * x;
}
int negate(int x, const void **ran) {
  *ran = (const void *)negate;
  return -x;
}
int fibonacci(int x, const void **ran) {
  *ran = (const void *)fibonacci;
  int a = 0, b = 1;
  for (int i = 0; i < x; i++) {
    int t = a + b;
    a = b;
    b = t;
  }
  return a;
}
#pragma omp end declare target

#define N 4

int main(void) {
  const char *names[N] = {"square", "cube", "negate", "fibonacci"};
  op_fn ops[N] = {square, cube, negate, fibonacci}; /* host addresses */
  const void *translated[N], *ran[N];
  int result[N], on_device = 0;

  /* The pointers travel to the device as plain data, untranslated. */
#pragma omp target map(to : ops[0 : N]) map(from : translated[0 : N], ran[0 : N], result[0 : N], on_device)
  {
    on_device = !omp_is_initial_device();
    for (int i = 0; i < N; i++) {
      op_fn fn = (op_fn)__kmpc_target_translate_fptr((void *)ops[i]);
      translated[i] = (const void *)fn;
      result[i] = fn(i + 5, &ran[i]);
    }
  }

  printf("%d offload device(s); the region ran on %s\n\n", omp_get_num_devices(),
         on_device ? "device 0" : "the HOST (no device)");
  printf("%-10s %-18s %-18s %-17s %s\n", "function", "host address", "device address",
         "called on device", "result");
  int wrong = 0;
  for (int i = 0; i < N; i++) {
    const void *host_ran;
    int expected = ops[i](i + 5, &host_ran);
    int device_copy = on_device && translated[i] != (const void *)ops[i] && ran[i] == translated[i];
    wrong += !device_copy || result[i] != expected;
    printf("%-10s %-18p %-18p %-17s %s(%d) = %d\n", names[i], (const void *)ops[i], translated[i],
           device_copy ? "yes, its own copy" : "NO", names[i], i + 5, result[i]);
  }
  printf("\n%s\n", wrong ? "FAILED: some calls did not run the device's own copy"
                         : "every call ran the device's own copy of the function");
  return wrong != 0;
}
