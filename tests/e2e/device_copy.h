/* Shared by the unmodified programs: they call functions through pointers without any explicit
 * translation, and rely on the pass plugin (-fpass-plugin=libomptarget-indirect-pass.so) to make
 * those calls reach the device copies.
 *
 * Each callee calls note_call(id), which counts the call in its own image's copy_calls: the
 * device image and the host program each have their own copy of that array, so a call of the
 * device copy counts on the device and a call of the host copy (an untranslated host pointer on
 * x86_64 host offload) counts on the host. A callee copy that finds omp_is_initial_device() != 0
 * counts in initial_calls. expect_calls() compares both images' counts with what a case expects,
 * then clears them. */
#ifndef DEVICE_COPY_H
#define DEVICE_COPY_H

#include <omp.h>

#include "check.h"

enum { ADD_ONE, TWICE, SQUARE, NEGATE, FUNCTIONS };
static const char *const function_names[FUNCTIONS] = {"add_one", "twice", "square", "negate"};

/* 1 when device code runs on a GPU: host memory (and so a host vtable) is not readable there, and
 * an untranslated host address faults instead of running the host copy. */
#if defined(__NVPTX__) || defined(__AMDGPU__)
#define ON_GPU 1
#else
#define ON_GPU 0
#endif

/* Host side: 1 when the program runs on the strict x86_64 device (LD_PRELOAD of
 * libomptarget-indirect-strict.so, which defines this symbol): the host program is unreachable
 * from device code there, as on a GPU, so the x86_64-only paths are skipped as on a GPU.
 * (void *)0 is glibc's RTLD_DEFAULT. */
#include <dlfcn.h>
static inline int strict_device(void) { return dlsym((void *)0, "omptarget_indirect_strict_mode") != 0; }

#pragma omp begin declare target
int copy_calls[FUNCTIONS];
int initial_calls;
static inline void note_call(int id) {
  int initial = omp_is_initial_device();
#pragma omp atomic
  copy_calls[id]++;
  if (initial) {
#pragma omp atomic
    initial_calls++;
  }
}
#pragma omp end declare target

/* After a case: the device copies ran `device[id]` times, the host copies `host[id]` times, and no
 * device copy thought it ran on the host. */
static inline void expect_calls(const char *what, const int device[FUNCTIONS], const int host[FUNCTIONS]) {
  int host_calls[FUNCTIONS];
  for (int i = 0; i < FUNCTIONS; i++)
    host_calls[i] = copy_calls[i];
#pragma omp target update from(copy_calls, initial_calls)
  for (int i = 0; i < FUNCTIONS; i++) {
    EXPECT(copy_calls[i] == device[i], "%s: the device copy of %s ran %d times, expected %d", what,
           function_names[i], copy_calls[i], device[i]);
    EXPECT(host_calls[i] == host[i], "%s: the host copy of %s ran %d times, expected %d", what,
           function_names[i], host_calls[i], host[i]);
  }
  EXPECT(initial_calls == 0, "%s: %d device-copy calls saw omp_is_initial_device() != 0", what, initial_calls);
  for (int i = 0; i < FUNCTIONS; i++)
    copy_calls[i] = 0;
  initial_calls = 0;
#pragma omp target update to(copy_calls, initial_calls)
}

#endif
