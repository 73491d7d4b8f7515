// Indirect functions that two files both define, as a header's inline functions and template
// instances are: each file's device compile emits them with their offload entries, and the two
// device objects are linked into one image. Each returns -1 when it finds itself on the initial
// device: a host copy that ran on the device.
#ifndef INDIRECT_ACROSS_H
#define INDIRECT_ACROSS_H

#include <omp.h>

#pragma omp begin declare target indirect
template <class T> T twice(T x) { return omp_is_initial_device() ? -1 : x + x; }
inline long thrice(long x) { return omp_is_initial_device() ? -1 : 3 * x; }
#pragma omp end declare target

// The other file's host addresses of the same functions.
struct Taken {
  int (*twice_int)(int);
  long (*twice_long)(long);
  long (*thrice)(long);
};
Taken taken_by_other_file();

// The other file's device code calling through a host address it is handed.
#pragma omp declare target
long apply_in_other_file(long (*f)(long), long x);
#pragma omp end declare target

#endif
