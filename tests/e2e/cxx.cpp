// Program 7, C++: indirect free functions, static member functions and functions in a namespace
// (mangled names in the offload entries), called through pointers held in a mapped array.
#include "indirect_check.h"

#pragma omp begin declare target indirect
int free_function(int x, const void **self) {
  *self = reinterpret_cast<const void *>(&free_function);
  return x + 1000;
}

struct Shape {
  static int area(int x, const void **self) {
    *self = reinterpret_cast<const void *>(&Shape::area);
    return x * x;
  }
};

namespace geometry {
namespace detail {
int perimeter(int x, const void **self) {
  *self = reinterpret_cast<const void *>(&perimeter);
  return 4 * x;
}
} // namespace detail
int overloaded(int x, const void **self) {
  *self = reinterpret_cast<const void *>(static_cast<probe_fn>(&overloaded));
  return x - 1;
}
int overloaded(long x) { return static_cast<int>(x); }
} // namespace geometry
#pragma omp end declare target

#pragma omp begin declare target
static probe_fn device_view[4] = {free_function, &Shape::area, geometry::detail::perimeter,
                                  static_cast<probe_fn>(geometry::overloaded)};
#pragma omp end declare target

int main() {
  probe_fn host[4] = {free_function, &Shape::area, geometry::detail::perimeter,
                      static_cast<probe_fn>(geometry::overloaded)};
  const char *names[4] = {"free function", "static member function", "function in a namespace",
                          "overload in a namespace"};
  const int expected[4] = {1006, 36, 24, 5};
  struct probe probes[4];
#pragma omp target map(to : host[0 : 4]) map(from : probes[0 : 4])
  for (int i = 0; i < 4; i++)
    probe_call(&probes[i], host[i], device_view[i], 6);
  for (int i = 0; i < 4; i++)
    check_probe(names[i], &probes[i], host[i], expected[i]);
  return finish("cxx");
}
