// Inline functions in `begin declare target indirect`, called on the device through the host
// addresses host code took: inline and `static inline` functions, a function of a namespace, an
// `extern "C"` one, static and non-static member functions defined in the class body (through a
// function pointer and a pointer to member function), and function templates instantiated
// implicitly (only host code names `scale<int>`) and explicitly. No device code names any of them:
// without the frontend plugin the device module has no definition for them (clang 19 crashes,
// clang 22 stops: "the address is invalid").
//
// Each returns -1 when it finds itself on the initial device: a host copy that ran on the device.
#include <omp.h>

#include "check.h"

#pragma omp begin declare target indirect
inline int add_one(int x) { return omp_is_initial_device() ? -1 : x + 1; }
static inline int twice(int x) { return omp_is_initial_device() ? -1 : 2 * x; }
namespace shapes {
inline int cube(int x) { return omp_is_initial_device() ? -1 : x * x * x; }
} // namespace shapes
extern "C" inline int negate_plus_100(int x) { return omp_is_initial_device() ? -1 : 100 - x; }

struct Counter {
  int step;
  static int square(int x) { return omp_is_initial_device() ? -1 : x * x; }
  int advance(int x) const { return omp_is_initial_device() ? -1 : x + step; }
  int scaled(int x) const { return omp_is_initial_device() ? -1 : x * step; }
};

template <class T> T scale(T x) { return omp_is_initial_device() ? -1 : x * 7; }
template <class T> T offset(T x) { return omp_is_initial_device() ? -1 : x + 1000; }
#pragma omp end declare target
template int offset<int>(int);

typedef int (*Function)(int);
enum { FUNCTIONS = 7, MEMBERS = 2 };
static const char *const names[FUNCTIONS + MEMBERS] = {
    "add_one", "twice", "shapes::cube", "negate_plus_100", "Counter::square", "scale<int>", "offset<int>",
    "Counter::advance", "Counter::scaled"};

// Host addresses stored in mapped data, as a table of callbacks would hold them.
struct Callbacks {
  Function functions[FUNCTIONS];
  int (Counter::*members[MEMBERS])(int) const;
};

int main() {
  Callbacks callbacks = {{add_one, twice, shapes::cube, negate_plus_100, Counter::square, scale<int>, offset<int>},
                         {&Counter::advance, &Counter::scaled}};
  Counter counter{3};
  int results[FUNCTIONS + MEMBERS];
  const int x = 5;
#pragma omp target map(to : callbacks, counter) map(from : results)
  {
    for (int i = 0; i < FUNCTIONS; i++)
      results[i] = callbacks.functions[i](x);
    for (int i = 0; i < MEMBERS; i++)
      results[FUNCTIONS + i] = (counter.*callbacks.members[i])(x);
  }
  const int expected[FUNCTIONS + MEMBERS] = {6, 10, 125, 95, 25, 35, 1005, 8, 15};
  for (int i = 0; i < FUNCTIONS + MEMBERS; i++)
    EXPECT(results[i] == expected[i], "%s(%d) on the device gave %d, expected %d%s", names[i], x, results[i],
           expected[i], results[i] == -1 ? " (the host's copy ran)" : "");
  return finish("inline_indirect");
}
