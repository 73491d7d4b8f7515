// A plugin library of plugin_base.h's program: classes derived from the program's Filter whose
// vtables (the library's: their key functions are here) keep the program's scaled() and id(),
// and whose apply() calls scaled() back, in device code too. No OpenMP in it.
#include "arena.h"
#include "plugin_base.h"

struct Offset : Filter {
  explicit Offset(double by) : by(by) {}
  double apply(double x) const override;
  const char *label() const override;
  double by;
};

// Keeps Offset's apply; overrides id only.
struct Boosted : Offset {
  Boosted(double by, double boost) : Offset(by) { gain = boost; }
  int id() const override;
};

double Offset::apply(double x) const { return scaled(x) + by; }

const char *Offset::label() const { return "offset"; }

int Boosted::id() const { return 20; }

extern "C" __attribute__((visibility("default"))) int build_filters(unsigned char *arena, size_t capacity,
                                                                     size_t *offsets) {
  size_t used = 0;
  offsets[0] = place<Offset>(arena, capacity, used, 0.5);
  offsets[1] = place<Boosted>(arena, capacity, used, 1.0, 3.0);
  offsets[2] = place<Offset>(arena, capacity, used, -2.0);
  for (int i = 0; i < FILTERS; i++)
    if (offsets[i] == static_cast<size_t>(-1))
      return 0;
  return FILTERS;
}
