/* Shared by the end-to-end programs: the translation call for device code, and host-side checks.
 *
 * Every program checks, for each function it calls through a pointer:
 *   - the region ran on a device (omp_is_initial_device() == 0 inside it);
 *   - the translated pointer equals the address the device image itself gives the function
 *     (taken in device code), and differs from the host address;
 *   - the call ran the device's copy: each function reports its own address (`&f` inside f), which
 *     differs between the host and the device copy, and computes a value checked on the host.
 * It prints one line per failed check and exits non-zero if any failed. */
#ifndef INDIRECT_CHECK_H
#define INDIRECT_CHECK_H

#include <omp.h>
#include <stdint.h>

#include "check.h"

#ifdef __cplusplus
extern "C" {
#endif
#pragma omp begin declare target
/* From libomptarget-indirect.a: the device address of an indirect function's host address;
 * any other pointer (null, device-only functions, data) comes back unchanged. */
void *__kmpc_target_translate_fptr(void *fn_ptr);
#pragma omp end declare target
#ifdef __cplusplus
}
#endif

#define TRANSLATE(type, ptr) ((type)__kmpc_target_translate_fptr((void *)(ptr)))

/* The functions the programs call through pointers: each reports its own address (so the copy
 * that ran can be told apart) and returns a value computed from x. */
typedef int (*probe_fn)(int x, const void **self);

/* What one translated call saw on the device. */
struct probe {
  int on_device;           /* omp_is_initial_device() == 0 in the region */
  const void *translated;  /* __kmpc_target_translate_fptr(ptr) */
  const void *device_addr; /* the function's address as the device image gives it */
  const void *self;        /* the address the called copy reported */
  int value;               /* what the called copy returned */
};

#pragma omp begin declare target
/* Translates `ptr` (however it reached the device) and calls the result. `device_addr` must be the
 * function's address taken in device code. */
static inline void probe_call(struct probe *p, probe_fn ptr, probe_fn device_addr, int x) {
  p->on_device = !omp_is_initial_device();
  probe_fn fn = TRANSLATE(probe_fn, ptr);
  p->translated = (const void *)fn;
  p->device_addr = (const void *)device_addr;
  p->self = 0;
  p->value = fn(x, &p->self);
}
#pragma omp end declare target

/* Host side: the device's own copy of the function ran and returned `expected`. */
static inline void check_probe(const char *what, const struct probe *p, probe_fn host_addr, int expected) {
  EXPECT(p->on_device, "%s: the region ran on the host", what);
  EXPECT(p->translated == p->device_addr, "%s: translated %p, device address %p", what, p->translated,
         p->device_addr);
  EXPECT(p->translated != (const void *)host_addr, "%s: not translated (host address %p)", what,
         (const void *)host_addr);
  EXPECT(p->self == p->device_addr, "%s: the copy at %p ran, not the device's %p", what, p->self,
         p->device_addr);
  EXPECT(p->value == expected, "%s: returned %d, expected %d", what, p->value, expected);
}

#endif
