/* Checks __kmpc_target_translate_fptr through the real C ABI, linked against the plain x86_64
 * archive target/dist/device/x86_64/libdevice_rtl.a. The test sets the weak globals itself (the
 * two map globals, then the hash index header), as the plugin does on a device, then LLVM's
 * device environment, as libomptarget 22 does. Exit status 0 and "translate_abi: N passed, 0
 * failed". */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct __omp_offloading_fptr_map_ty {
  int64_t host_ptr;
  int64_t tgt_ptr;
};
_Static_assert(sizeof(struct __omp_offloading_fptr_map_ty) == 16, "entry is 16 bytes");

extern struct __omp_offloading_fptr_map_ty *__omp_offloading_fptr_map_p;
extern uint64_t __omp_offloading_fptr_map_size;

/* The hash index our plugin installs beside the table (device-rtl/src/index.rs). */
struct __omp_offloading_fptr_index_ty {
  uint64_t table, slots, multiplier, first, last;
  uint32_t shift, reserved;
};
_Static_assert(sizeof(struct __omp_offloading_fptr_index_ty) == 48, "index header is 48 bytes");
_Static_assert(offsetof(struct __omp_offloading_fptr_index_ty, shift) == 40, "shift at 40");
extern struct __omp_offloading_fptr_index_ty __omp_offloading_fptr_index;
/* LLVM 19-22's DeviceEnvironmentTy; the archive defines it (weak, zero) for libomptarget 22. */
struct DeviceEnvironmentTy {
  uint32_t DeviceDebugKind, NumDevices, DeviceNum, DynamicMemSize;
  uint64_t ClockFrequency;
  uintptr_t IndirectCallTable;
  uint64_t IndirectCallTableSize;
  uint64_t HardwareParallelism;
};
_Static_assert(sizeof(struct DeviceEnvironmentTy) == 48, "device environment is 48 bytes");
_Static_assert(offsetof(struct DeviceEnvironmentTy, IndirectCallTable) == 24, "table at 24");
extern struct DeviceEnvironmentTy __omp_rtl_device_environment;
void *__kmpc_target_translate_fptr(void *FnPtr);
/* LLVM's spelling, defined by the x86_64 archive with the same contract. */
void *__llvm_omp_indirect_call_lookup(void *FnPtr);

static int passed, failed;

static void expect(const char *what, uintptr_t key, uintptr_t want) {
  uintptr_t got = (uintptr_t)__kmpc_target_translate_fptr((void *)key);
  uintptr_t llvm_spelling = (uintptr_t)__llvm_omp_indirect_call_lookup((void *)key);
  if (llvm_spelling != got) {
    failed++;
    fprintf(stderr, "FAIL %s: __llvm_omp_indirect_call_lookup(%#lx) = %#lx, ours %#lx\n", what,
            (unsigned long)key, (unsigned long)llvm_spelling, (unsigned long)got);
  }
  if (got == want) {
    passed++;
  } else {
    failed++;
    fprintf(stderr, "FAIL %s: key %#lx -> %#lx, expected %#lx\n", what, (unsigned long)key,
            (unsigned long)got, (unsigned long)want);
  }
}

static void install(struct __omp_offloading_fptr_map_ty *table, uint64_t size) {
  __omp_offloading_fptr_map_p = table;
  __omp_offloading_fptr_map_size = size;
}

int main(void) {
  /* Nothing installed: the library's own defaults are null / 0. */
  if (__omp_offloading_fptr_map_p != NULL || __omp_offloading_fptr_map_size != 0) {
    fprintf(stderr, "FAIL defaults: globals are not null / 0\n");
    failed++;
  }
  expect("no table", 0x1234, 0x1234);
  expect("no table, null", 0, 0);

  struct __omp_offloading_fptr_map_ty four[] = {{100, 1100}, {200, 1200}, {300, 1300}, {400, 1400}};
  install(four, 4);
  expect("hit first", 100, 1100);
  expect("hit", 200, 1200);
  expect("hit", 300, 1300);
  expect("hit last", 400, 1400);
  /* Keys strictly between two entries: LLVM's DeviceRTL lookup never returns for these. */
  expect("between", 150, 150);
  expect("between", 250, 250);
  expect("between", 350, 350);
  expect("below", 99, 99);
  expect("above", 401, 401);
  expect("max", UINTPTR_MAX, UINTPTR_MAX);
  expect("null", 0, 0);

  install(four, 0);
  expect("size 0", 200, 200);
  install(NULL, 4);
  expect("null table, size 4", 200, 200);

  /* Unsigned order: addresses above 2^63 sort after the others. */
  struct __omp_offloading_fptr_map_ty high[] = {{0x10, 1}, {(int64_t)0x8000000000000000ull, 2},
                                                {(int64_t)0xfffffffffffffff0ull, 3}};
  install(high, 3);
  expect("high hit", 0x8000000000000000ull, 2);
  expect("top hit", 0xfffffffffffffff0ull, 3);
  expect("high miss", 0x8000000000000001ull, 0x8000000000000001ull);

  /* A large table: every key and every gap. */
  enum { N = 100003 };
  struct __omp_offloading_fptr_map_ty *big = malloc(N * sizeof *big);
  if (!big) return 2;
  for (int64_t i = 0; i < N; i++) {
    big[i].host_ptr = 0x400000 + 16 * i;
    big[i].tgt_ptr = 0x7f0000000000 + 32 * i;
  }
  install(big, N);
  int big_failures = failed;
  for (int64_t i = 0; i < N; i++) {
    expect("big hit", 0x400000 + 16 * i, 0x7f0000000000 + 32 * i);
    expect("big gap", 0x400000 + 16 * i + 8, 0x400000 + 16 * i + 8);
    if (failed - big_failures > 10) break;
  }
  install(NULL, 0);
  free(big);

  /* The index, built here as the plugin builds it: 8 slots (shift 29), linear probing. */
  if (__omp_offloading_fptr_index.table != 0 || __omp_offloading_fptr_index.slots != 0) {
    fprintf(stderr, "FAIL defaults: the index header is not all zero\n");
    failed++;
  }
  static _Alignas(16) struct __omp_offloading_fptr_map_ty slots[8];
  const uint64_t multiplier = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 4; i++) {
    uint64_t key = (uint64_t)four[i].host_ptr;
    uint32_t at = (uint32_t)((key * multiplier) >> 32) >> 29;
    while (slots[at].host_ptr != 0) at = (at + 1) & 7;
    slots[at].host_ptr = four[i].host_ptr;
    slots[at].tgt_ptr = four[i].tgt_ptr + 5; /* differs from the table: shows who answered */
  }
  struct __omp_offloading_fptr_index_ty index = {(uint64_t)(uintptr_t)four, (uint64_t)(uintptr_t)slots,
                                                 multiplier, 100, 400, 29, 0};
  __omp_offloading_fptr_index = index;
  install(four, 4);
  expect("index hit", 100, 1105);
  expect("index hit", 400, 1405);
  expect("index miss between", 250, 250);
  expect("index miss below", 99, 99);
  expect("index miss above", 401, 401);
  /* Another producer's table (another address): the index is ignored. */
  struct __omp_offloading_fptr_map_ty copy[4] = {{100, 1100}, {200, 1200}, {300, 1300}, {400, 1400}};
  install(copy, 4);
  expect("stale index ignored", 100, 1100);
  install(NULL, 0);
  expect("no table, index left", 100, 100);
  __omp_offloading_fptr_index = (struct __omp_offloading_fptr_index_ty){0};

  /* LLVM's table in the device environment, as libomptarget 22 installs it: the answer while no
   * table of ours is installed, ignored once one is. */
  if (__omp_rtl_device_environment.IndirectCallTable != 0 || __omp_rtl_device_environment.IndirectCallTableSize != 0) {
    fprintf(stderr, "FAIL defaults: the device environment's table is not null / 0\n");
    failed++;
  }
  struct __omp_offloading_fptr_map_ty llvms[] = {{100, 2100}, {200, 2200}, {300, 2300}, {400, 2400}};
  __omp_rtl_device_environment.IndirectCallTable = (uintptr_t)llvms;
  __omp_rtl_device_environment.IndirectCallTableSize = 4;
  expect("LLVM's table hit", 200, 2200);
  expect("LLVM's table hit last", 400, 2400);
  expect("LLVM's table between", 250, 250); /* where LLVM's own lookup loops forever */
  expect("LLVM's table above", 401, 401);
  expect("LLVM's table null", 0, 0);
  install(four, 4);
  expect("our table first", 200, 1200);
  install(NULL, 0);
  __omp_rtl_device_environment.IndirectCallTableSize = 0;
  expect("LLVM's table, size 0", 200, 200);
  __omp_rtl_device_environment.IndirectCallTable = 0;

  printf("translate_abi: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
