// The loop cache (compiler/pass-plugin/src/loop_cache.rs): a translation inside a loop keeps its
// last key and result and looks up only a key that changed. Device code loops over host-built
// objects whose classes repeat, come grouped, alternate or change at random, mixed with
// device-built objects of the same classes (whose vtables translate to themselves), in nested
// loops and over several launches whose arrays differ, and over function pointers with runs and
// nulls skipped (function pointers are not cached: their loop must work as before). Every call
// must run the device copy and give the host's result.
#include <new>

#include "device_copy.h"

#pragma omp begin declare target
// Not pure: the AMDGPU device libraries here define no __cxa_pure_virtual for a pure one's slot.
struct Op {
  virtual ~Op() {}
  virtual int apply(int x) const { return x; }
};
struct AddOne : Op {
  int apply(int x) const override {
    note_call(ADD_ONE);
    return x + 1;
  }
};
struct Twice : Op {
  int apply(int x) const override {
    note_call(TWICE);
    return 2 * x;
  }
};
struct Square : Op {
  int apply(int x) const override {
    note_call(SQUARE);
    return x * x;
  }
};

enum { OBJECTS = 64, SLOT = 16, SWEEPS = 3, PATTERNS = 5 };

// Constructs an object of kind 0, 1 or 2 (AddOne, Twice, Square) at `at`.
static inline const Op *construct(int kind, void *at) {
  if (kind == 0)
    return new (at) AddOne;
  if (kind == 1)
    return new (at) Twice;
  return new (at) Square;
}
#pragma omp end declare target

#pragma omp begin declare target indirect
int negate(int x) {
  note_call(NEGATE);
  return -x;
}
#pragma omp end declare target

// The kind of object `i` in `pattern`: all one class, grouped, alternating, random.
static int kind_of(int pattern, int i) {
  switch (pattern) {
  case 0:
    return 2;
  case 1:
    return i < OBJECTS / 2 ? 0 : 1;
  case 2:
    return i % 2;
  default:
    return (int)((i * 2654435761u + pattern) >> 7) % 3;
  }
}

static int expected(int kind, int x) { return kind == 0 ? x + 1 : kind == 1 ? 2 * x : x * x; }

int main() {
  alignas(16) static unsigned char arena[OBJECTS * SLOT];
  static int kinds[OBJECTS], out[SWEEPS][OBJECTS];
  for (int pattern = 0; pattern < PATTERNS; pattern++) {
    // The last pattern mixes device-built objects (odd indices) with host-built ones.
    int mixed = pattern == PATTERNS - 1;
    int device_calls[FUNCTIONS] = {};
    for (int i = 0; i < OBJECTS; i++) {
      kinds[i] = kind_of(pattern, i);
      construct(kinds[i], arena + i * SLOT);
      device_calls[kinds[i] == 0 ? ADD_ONE : kinds[i] == 1 ? TWICE : SQUARE] += SWEEPS;
    }
#pragma omp target map(to : arena, kinds, mixed) map(from : out)
    {
      alignas(16) unsigned char local[OBJECTS * SLOT];
      const Op *objects[OBJECTS];
      for (int i = 0; i < OBJECTS; i++)
        objects[i] = mixed && i % 2 ? construct(kinds[i], local + i * SLOT)
                                    : reinterpret_cast<const Op *>(arena + i * SLOT);
      for (int s = 0; s < SWEEPS; s++)
        for (int i = 0; i < OBJECTS; i++)
          out[s][i] = objects[i]->apply(i + s);
    }
    int wrong = 0;
    for (int s = 0; s < SWEEPS; s++)
      for (int i = 0; i < OBJECTS; i++)
        wrong += out[s][i] != expected(kinds[i], i + s);
    EXPECT(wrong == 0, "pattern %d: %d of %d virtual calls gave another result", pattern, wrong, SWEEPS * OBJECTS);
    const int none[FUNCTIONS] = {};
    expect_calls(mixed ? "host- and device-built objects mixed" : "host-built objects", device_calls, none);
  }

  // Function pointers with runs, one change, and nulls the loop skips.
  typedef int (*unary)(int);
  static unary pointers[OBJECTS];
  int device_calls[FUNCTIONS] = {};
  for (int i = 0; i < OBJECTS; i++) {
    pointers[i] = i % 8 == 7 ? nullptr : negate;
    device_calls[NEGATE] += pointers[i] != nullptr;
  }
  static int results[OBJECTS];
#pragma omp target map(to : pointers) map(from : results)
  for (int i = 0; i < OBJECTS; i++)
    results[i] = pointers[i] ? pointers[i](i) : 7;
  int wrong = 0;
  for (int i = 0; i < OBJECTS; i++)
    wrong += results[i] != (pointers[i] ? -i : 7);
  EXPECT(wrong == 0, "%d of %d calls through function pointers gave another result", wrong, OBJECTS);
  const int none[FUNCTIONS] = {};
  expect_calls("function pointers with nulls", device_calls, none);
  return finish("loop_cache");
}
