// The shortest program that needs omptarget-indirect (README, "Use it"): device code calls a
// function through a pointer the host filled in, and a virtual function of an object the host
// constructed, so both pointers hold *host* addresses. Each device copy adds 1, a host copy 1000
// (omp_is_initial_device() answers 1 there). Exits 0 and prints "ok" only when the device copies
// ran: built without the project, the x86_64 device runs the host copies and a GPU faults.
#include <omp.h>

#include <cstdio>
#include <new>

#pragma omp begin declare target indirect
int twice(int x) { return 2 * x + (omp_is_initial_device() ? 1000 : 1); }
#pragma omp end declare target

#pragma omp begin declare target
struct Shape {
  virtual ~Shape() = default;
  virtual int area() const = 0;
};
struct Rect : Shape {
  int w, h;
  Rect(int width, int height) : w(width), h(height) {}
  int area() const override { return w * h + (omp_is_initial_device() ? 1000 : 1); }
};
#pragma omp end declare target

int main() {
  int (*fn)(int) = twice;
  // Built on the host, so its vtable pointer is the host's; mapped as the bytes it is made of.
  alignas(Rect) unsigned char bytes[sizeof(Rect)];
  Shape *shape = new (bytes) Rect(3, 4);
  int r[2] = {0, 0};
#pragma omp target map(to : fn, bytes) map(from : r[0 : 2])
  {
    r[0] = fn(5);
    r[1] = shape->area();
  }
  bool ok = r[0] == 11 && r[1] == 13;
  std::printf("twice(5) = %d, Rect(3, 4).area() = %d: %s\n", r[0], r[1], ok ? "ok" : "FAILED (a host copy ran)");
  return ok ? 0 : 1;
}
