// A C++ program as a cluster user writes it, built outside the source tree against an install of
// omptarget-indirect made for a module's LLVM 22 (tests/install/cluster/as-user.sh): an inline
// function reached through a mapped function pointer, and a virtual call on an object that only
// host code constructs (placement new into a mapped byte arena). Each device copy adds 1, a host
// copy 1000 (there omp_is_initial_device() answers 1). Prints "cluster: ... ok" and exits 0 when
// every call ran the device copy.
#include <omp.h>

#include <cstdio>
#include <new>

// The negative control compiles without the install (-DINLINE=): stock clang 22 refuses an inline
// function declared indirect without the frontend plugin.
#ifndef INLINE
#define INLINE inline
#endif

#pragma omp begin declare target indirect
INLINE int twice(int x) { return 2 * x + (omp_is_initial_device() ? 1000 : 1); }
int square(int x) { return x * x + (omp_is_initial_device() ? 1000 : 1); }
#pragma omp end declare target

#pragma omp begin declare target
struct Shape {
  virtual int area() const { return -1; }
};
struct Rect : Shape {
  int w, h;
  Rect(int width, int height) : w(width), h(height) {}
  int area() const override { return w * h + (omp_is_initial_device() ? 1000 : 1); }
};
#pragma omp end declare target

int main() {
  int (*funcs[2])(int) = {twice, square};
  alignas(Rect) unsigned char arena[sizeof(Rect)];
  new (arena) Rect(3, 4);
  int r[3] = {0, 0, 0};
#pragma omp target map(to : funcs[0 : 2], arena[0 : sizeof(Rect)]) map(from : r[0 : 3])
  {
    r[0] = funcs[0](5);
    r[1] = funcs[1](5);
    r[2] = reinterpret_cast<const Shape *>(arena)->area();
  }
  bool ok = r[0] == 11 && r[1] == 26 && r[2] == 13;
  std::printf("cluster: twice(5) = %d, square(5) = %d, Rect(3, 4).area() = %d: %s\n", r[0], r[1], r[2],
              ok ? "ok" : "FAILED (a host copy ran)");
  return !ok;
}
