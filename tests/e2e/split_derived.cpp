// A program's own classes over the split class library (split.h), as every user of a class
// library writes them: derived from the library's classes and built by the program on the host,
// with the virtual functions they do not override left to the library's file, whose key
// functions and out-of-line members are there. The program's vtables (its classes are all
// inline) name those functions; only the library's device compile defines them. Its target
// region calls them through base pointers, and the library's own out-of-line code calls back
// into the program's overrides.
#include <string.h>

#include "arena.h"
#include "check.h"
#include "split.h"

#ifndef PROGRAM_NAME
#define PROGRAM_NAME "split_derived"
#endif

// Single inheritance: everything but name() is Rect's (area, perimeter, corners, the library's
// key function and destructor).
struct Square : Rect {
  explicit Square(double side) : Rect(side, side) {}
  const char *name() const override { return "square"; }
};

// Over the library's class with two bases: tag(), reached through the second base by the library's
// own thunk, is the library's, and calls corners(), which is this class's.
struct Badge : TaggedRect {
  Badge(double side, int t) : TaggedRect(side, t) {}
  int corners() const override { return 5; }
};

// Virtual inheritance: weight() is the library's Left::weight, which reads the virtual base's
// member through this class's vtable (its own offset to the base, which Left's differs from).
struct Heavy : Left {
  Heavy() { base_value = 11; }
  int extra[3] = {1, 2, 3};
};

// A class template of the program over the library's base.
template <class T> struct Framed : Rect {
  Framed(T width, T height) : Rect(width, height) {}
  int corners() const override { return 4 + int(sizeof(T)); }
};

enum { SHAPES = 5, ARENA = 1024, NAME = 16 };

struct Objects {
  size_t shapes[SHAPES];
  size_t heavy;
  int badge;
};

// Built on the host by the program: placement new into one byte arena that is mapped as a whole.
static bool build(unsigned char *arena, Objects *objects) {
  size_t used = 0;
  objects->shapes[0] = place<Square>(arena, ARENA, used, 3.0);
  objects->shapes[1] = place<Badge>(arena, ARENA, used, 2.0, 7);
  objects->shapes[2] = place<Framed<int>>(arena, ARENA, used, 2, 3);
  objects->shapes[3] = place<Framed<double>>(arena, ARENA, used, 1.5, 4.0);
  objects->shapes[4] = place<Square>(arena, ARENA, used, 0.5);
  objects->heavy = place<Heavy>(arena, ARENA, used);
  objects->badge = 1;
  for (size_t offset : objects->shapes)
    if (offset == static_cast<size_t>(-1))
      return false;
  return objects->heavy != static_cast<size_t>(-1);
}

struct Result {
  double area, perimeter;
  int corners, tag, weight;
  const char *name;
  char text[NAME];
};

static const Shape *shape_at(unsigned char *arena, size_t offset) {
  return reinterpret_cast<const Shape *>(arena + offset);
}

static const Tagged *badge_at(unsigned char *arena, size_t offset) {
  return static_cast<const Tagged *>(reinterpret_cast<const Badge *>(arena + offset));
}

int main() {
  alignas(16) static unsigned char arena[ARENA];
  Objects objects;
  if (!build(arena, &objects)) {
    EXPECT(false, "the objects were not built");
    return finish(PROGRAM_NAME);
  }

  static Result results[SHAPES];
#pragma omp target map(to : arena, objects) map(from : results)
  for (int i = 0; i < SHAPES; i++) {
    const Shape *shape = shape_at(arena, objects.shapes[i]);
    Result &r = results[i];
    r.area = shape->area();
    r.perimeter = shape->perimeter();
    r.corners = shape->corners();
    r.tag = i == objects.badge ? badge_at(arena, objects.shapes[i])->tag() : -1;
    r.name = shape->name();
    int n = 0;
    for (; n < NAME - 1 && r.name[n]; n++)
      r.text[n] = r.name[n];
    r.text[n] = 0;
    // Through the virtual base: its offset and the library's virtual thunk from this class's vtable.
    const Node *node = reinterpret_cast<const Heavy *>(arena + objects.heavy);
    r.weight = node->weight();
  }

  const Node *heavy = reinterpret_cast<const Heavy *>(arena + objects.heavy);
  for (int i = 0; i < SHAPES; i++) {
    const Shape *shape = shape_at(arena, objects.shapes[i]);
    const Result &r = results[i];
    EXPECT(r.area == shape->area(), "shape %d (%s): area %g, host %g", i, shape->name(), r.area, shape->area());
    EXPECT(r.perimeter == shape->perimeter(), "shape %d (%s): perimeter %g, host %g", i, shape->name(), r.perimeter,
           shape->perimeter());
    EXPECT(r.corners == shape->corners(), "shape %d (%s): %d corners, host %d", i, shape->name(), r.corners,
           shape->corners());
    int tag = i == objects.badge ? badge_at(arena, objects.shapes[i])->tag() : -1;
    EXPECT(r.tag == tag, "shape %d (%s): tag %d, host %d", i, shape->name(), r.tag, tag);
    EXPECT(r.weight == heavy->weight(), "shape %d: the program's Heavy weighs %d, host %d", i, r.weight,
           heavy->weight());
    EXPECT(strcmp(r.text, shape->name()) == 0, "shape %d: name \"%s\", host \"%s\"", i, r.text, shape->name());
    EXPECT(r.name != shape->name(), "shape %d (%s): the name is the host's string: a host copy of name() ran", i,
           shape->name());
  }
  return finish(PROGRAM_NAME);
}
