/* Demo of the device runtime's C ABI on x86_64: a table pairing "host" functions with their
 * "device" copies is installed the way the plugin installs it (sorted, then the two globals), and
 * each pointer is translated and called. Linked against target/dist/device/x86_64/libdevice_rtl.a. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct __omp_offloading_fptr_map_ty {
  int64_t host_ptr;
  int64_t tgt_ptr;
};
extern struct __omp_offloading_fptr_map_ty *__omp_offloading_fptr_map_p;
extern uint64_t __omp_offloading_fptr_map_size;
void *__kmpc_target_translate_fptr(void *FnPtr);

typedef int (*fn_t)(int);
static int square_host(int x) { return x * x; }
static int square_device(int x) { return x * x + 1000; }
static int twice_host(int x) { return 2 * x; }
static int twice_device(int x) { return 2 * x + 1000; }
static int negate_host(int x) { return -x; }
static int negate_device(int x) { return -x + 1000; }
static int not_indirect(int x) { return x + 7; }

static int by_host_ptr(const void *a, const void *b) {
  uint64_t x = (uint64_t)((const struct __omp_offloading_fptr_map_ty *)a)->host_ptr;
  uint64_t y = (uint64_t)((const struct __omp_offloading_fptr_map_ty *)b)->host_ptr;
  return (x > y) - (x < y);
}

int main(void) {
  struct { const char *name; fn_t host, device; } fns[] = {
      {"square", square_host, square_device},
      {"twice", twice_host, twice_device},
      {"negate", negate_host, negate_device},
  };
  enum { N = sizeof fns / sizeof fns[0] };
  struct __omp_offloading_fptr_map_ty table[N];
  for (int i = 0; i < N; i++) {
    table[i].host_ptr = (int64_t)(intptr_t)fns[i].host;
    table[i].tgt_ptr = (int64_t)(intptr_t)fns[i].device;
  }
  qsort(table, N, sizeof table[0], by_host_ptr);
  __omp_offloading_fptr_map_p = table;
  __omp_offloading_fptr_map_size = N;

  printf("%-14s %-18s %-18s %-12s %s\n", "function", "host address", "translated to", "copy called", "f(7)");
  int ok = 1;
  for (int i = 0; i < N; i++) {
    fn_t got = (fn_t)__kmpc_target_translate_fptr((void *)fns[i].host);
    printf("%-14s %-18p %-18p %-12s %d\n", fns[i].name, (void *)fns[i].host, (void *)got,
           got == fns[i].device ? "device" : "HOST", got(7));
    ok &= got == fns[i].device;
  }
  fn_t passed = (fn_t)__kmpc_target_translate_fptr((void *)not_indirect);
  printf("%-14s %-18p %-18p %-12s %d\n", "not_indirect", (void *)not_indirect, (void *)passed,
         passed == not_indirect ? "unchanged" : "WRONG", passed(7));
  ok &= passed == not_indirect;
  printf("%-14s %-18p %-18p\n", "null", (void *)0, __kmpc_target_translate_fptr(NULL));
  return ok ? 0 : 1;
}
