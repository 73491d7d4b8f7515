// The classes of the array benchmark (virtual_arrays.cpp): 64 classes derived from virtual_ops.h's
// Op, each with its own apply, defined in a declare target region so that the device has their
// vtables (the frontend plugin) whoever constructs their objects.
#ifndef VIRTUAL_CLASSES_H
#define VIRTUAL_CLASSES_H

#include <new>

#include "virtual_ops.h"

#define VIRTUAL_CLASSES(X)                                                                                        \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19)    \
  X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31) X(32) X(33) X(34) X(35) X(36) X(37)     \
  X(38) X(39) X(40) X(41) X(42) X(43) X(44) X(45) X(46) X(47) X(48) X(49) X(50) X(51) X(52) X(53) X(54) X(55)     \
  X(56) X(57) X(58) X(59) X(60) X(61) X(62) X(63)

enum { CLASSES = 64 };

#pragma omp begin declare target
#define DEFINE_CLASS(N)                                                                                          \
  struct Op##N : Op {                                                                                            \
    explicit Op##N(long k) { this->k = k; }                                                                      \
    long apply(long x) const override { return (x ^ N) + k; }                                                    \
  };
VIRTUAL_CLASSES(DEFINE_CLASS)
#undef DEFINE_CLASS

// Constructs an object of class `c` with `k` at `at` (32 bytes, 16-aligned).
inline const Op *construct(int c, long k, void *at) {
  switch (c) {
#define CONSTRUCT(N)                                                                                             \
  case N:                                                                                                        \
    return new (at) Op##N(k);
    VIRTUAL_CLASSES(CONSTRUCT)
#undef CONSTRUCT
  }
  return nullptr;
}

// Sums objects[i]->apply(i) over i < count, `sweeps` times.
long virtual_sweeps_plain(const Op *const *objects, long count, long sweeps);
long virtual_sweeps_translated(const Op *const *objects, long count, long sweeps);
// Compiled with the pass plugin and its loop cache off (OMPTARGET_INDIRECT_LOOP_CACHE=0).
long virtual_sweeps_uncached(const Op *const *objects, long count, long sweeps);
#pragma omp end declare target

// Host code: the class of object `i` of `objects` in a case of the benchmarks: all of one class,
// 4 classes grouped by class, 4 or 64 classes in random order (`seed` advances at each call).
enum { PATTERNS = 4 };
static const char *const patterns[PATTERNS] = {"1_class", "4_grouped", "4_random", "64_random"};
static inline int class_of(int pattern, long i, long objects, unsigned *seed) {
  *seed = *seed * 1664525u + 1013904223u;
  switch (pattern) {
  case 0:
    return 7;
  case 1:
    return (int)(i / (objects / 4));
  case 2:
    return (*seed >> 16) % 4;
  default:
    return (*seed >> 16) % CLASSES;
  }
}

#endif
