// Several functions of one name in `begin declare target indirect`, called on the device through
// the host addresses host code took: explicit instantiations of one function template (three),
// implicit instantiations of another (two, only host code names them), a template of a namespace
// instantiated twice, three overloads declared on one line, a member function template, and a
// function with internal linkage. clang names an indirect function's offload entry after the
// declaration's name and line, so the instantiations and overloads share one name: without the
// pass plugin's host side the host registers one of them and the others stay host addresses.
//
// Each returns -1 when it finds itself on the initial device: a host copy that ran on the device.
#include <omp.h>

#include "check.h"

#pragma omp begin declare target indirect
template <class T> T twice(T x) { return omp_is_initial_device() ? -1 : x + x; }
template <class T> T negate(T x) { return omp_is_initial_device() ? -1 : -x; }
namespace ops {
template <int N> long add(long x) { return omp_is_initial_device() ? -1 : x + N; }
} // namespace ops
int shift(int x) { return omp_is_initial_device() ? -1 : x + 1; } long shift(long x) { return omp_is_initial_device() ? -1 : x + 2; } double shift(double x) { return omp_is_initial_device() ? -1 : x + 3; }
struct Scale {
  template <class T> static T by(T x) { return omp_is_initial_device() ? -1 : x * 5; }
};
static int triple(int x) { return omp_is_initial_device() ? -1 : 3 * x; }
#pragma omp end declare target
template int twice<int>(int);
template long twice<long>(long);
template double twice<double>(double);

// Host addresses stored in mapped data, as a table of callbacks would hold them.
struct Callbacks {
  int (*ints[5])(int);
  long (*longs[5])(long);
  double (*doubles[4])(double);
};

int main() {
  Callbacks callbacks = {{twice<int>, negate<int>, shift, Scale::by<int>, triple},
                         {twice<long>, ops::add<1>, ops::add<2>, shift, Scale::by<long>},
                         {twice<double>, negate<double>, shift, Scale::by<double>}};
  static const char *const names[] = {"twice<int>",    "negate<int>",  "shift(int)",       "Scale::by<int>",
                                      "triple",        "twice<long>",  "ops::add<1>",      "ops::add<2>",
                                      "shift(long)",   "Scale::by<long>", "twice<double>", "negate<double>",
                                      "shift(double)", "Scale::by<double>"};
  double results[14];
#pragma omp target map(to : callbacks) map(from : results)
  {
    for (int i = 0; i < 5; i++)
      results[i] = callbacks.ints[i](7);
    for (int i = 0; i < 5; i++)
      results[5 + i] = double(callbacks.longs[i](7));
    for (int i = 0; i < 4; i++)
      results[10 + i] = callbacks.doubles[i](1.5);
  }
  const double expected[14] = {14, -7, 8, 35, 21, 14, 8, 9, 9, 35, 3, -1.5, 4.5, 7.5};
  for (int i = 0; i < 14; i++)
    EXPECT(results[i] == expected[i], "%s: %g on the device, expected %g", names[i], results[i], expected[i]);
  return finish("indirect_instances");
}
