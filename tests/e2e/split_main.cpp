// A program using the class library of split.h, whose objects split_lib.cpp builds on the host
// into one byte arena that is mapped as a whole. Its target regions call, on those objects,
// inline virtual functions that call functions of the library's other file, out-of-line virtual
// functions, pure virtual ones, a function through a second base and through a virtual base, a
// class template's, a pointer to a virtual member function, and then each object's virtual
// destructor. Every result
// must equal the host's.
//
// `call-host-only`: device code calls Rect::describe, which writes to stderr: no device compile
// defines it, so the call must trap, naming it.
// SPLIT_DLOPEN (the library's file name): the library is loaded with dlopen from the executable's
// directory before the first target region.
#include <string.h>
#ifdef SPLIT_DLOPEN
#include "beside_executable.h"
#endif

#include "check.h"
#include "split.h"

#ifndef PROGRAM_NAME
#define PROGRAM_NAME "split"
#endif

enum { ARENA = 1024 };

typedef int (*Builder)(unsigned char *, size_t, SplitObjects *);

// The library's split_build: linked, or loaded from the executable's directory.
static Builder builder() {
#ifdef SPLIT_DLOPEN
  return reinterpret_cast<Builder>(symbol_beside_executable(SPLIT_DLOPEN, "split_build"));
#else
  return split_build;
#endif
}

enum { NAME = 16 };

struct Result {
  double area, perimeter;
  int corners, tag, weight, base_value;
  const char *name;
  char text[NAME];
};

static const Shape *shape_at(unsigned char *arena, size_t offset) {
  return reinterpret_cast<const Shape *>(arena + offset);
}

int main(int argc, char **argv) {
  alignas(16) static unsigned char arena[ARENA];
  SplitObjects objects;
  Builder build = builder();
  if (!build || build(arena, ARENA, &objects) != SPLIT_SHAPES) {
    EXPECT(false, "the objects were not built");
    return finish(PROGRAM_NAME);
  }

  if (argc > 1 && strcmp(argv[1], "call-host-only") == 0) {
    int described = 0;
#pragma omp target map(to : arena, objects) map(from : described)
    described = reinterpret_cast<const Rect *>(arena + objects.shapes[1])->describe();
    printf("describe ran on the device: %d\n", described);
    return 1;
  }

  int (Shape::*corners)() const = &Shape::corners;
  static Result results[SPLIT_SHAPES];
#pragma omp target map(to : arena, objects, corners) map(from : results)
  for (int i = 0; i < SPLIT_SHAPES; i++) {
    const Shape *shape = shape_at(arena, objects.shapes[i]);
    Result &r = results[i];
    r.area = shape->area();
    r.perimeter = shape->perimeter();
    r.corners = (shape->*corners)();
    r.tag = i == objects.tagged ? static_cast<const Tagged *>(static_cast<const TaggedRect *>(shape))->tag() : -1;
    r.name = shape->name();
    int n = 0;
    for (; n < NAME - 1 && r.name[n]; n++)
      r.text[n] = r.name[n];
    r.text[n] = 0;
    const Node *node = reinterpret_cast<const Diamond *>(arena + objects.diamond);
    r.weight = node->weight();
    r.base_value = node->base_value;
  }

  const Diamond *diamond = reinterpret_cast<const Diamond *>(arena + objects.diamond);
  for (int i = 0; i < SPLIT_SHAPES; i++) {
    const Shape *shape = shape_at(arena, objects.shapes[i]);
    const Result &r = results[i];
    EXPECT(r.area == shape->area(), "shape %d: area %g, host %g", i, r.area, shape->area());
    EXPECT(r.perimeter == shape->perimeter(), "shape %d: perimeter %g, host %g", i, r.perimeter, shape->perimeter());
    EXPECT(r.corners == shape->corners(), "shape %d: %d corners, host %d", i, r.corners, shape->corners());
    int tag = i == objects.tagged ? static_cast<const Tagged *>(static_cast<const TaggedRect *>(shape))->tag() : -1;
    EXPECT(r.tag == tag, "shape %d: tag %d, host %d", i, r.tag, tag);
    EXPECT(r.weight == static_cast<const Node *>(diamond)->weight(), "shape %d: diamond weight %d, host %d", i,
           r.weight, static_cast<const Node *>(diamond)->weight());
    EXPECT(strcmp(r.text, shape->name()) == 0, "shape %d: name \"%s\", host \"%s\"", i, r.text, shape->name());
    EXPECT(r.name != shape->name(), "shape %d (%s): the name is the host's string: a host copy of name() ran", i,
           shape->name());
    EXPECT(r.base_value == 7, "shape %d: virtual base's member %d", i, r.base_value);
  }

  // Each object's virtual destructor on the device: the chain runs the device's copies.
  static int destroyed[SPLIT_SHAPES];
#pragma omp target map(to : arena, objects) map(tofrom : destroyed)
  for (int i = 0; i < SPLIT_SHAPES; i++) {
    Shape *shape = reinterpret_cast<Shape *>(arena + objects.shapes[i]);
    shape->trace = &destroyed[i];
    shape->~Shape();
  }
  const int expected[SPLIT_SHAPES] = {
      DESTROYED_SHAPE | DESTROYED_RECT,
      DESTROYED_SHAPE | DESTROYED_RECT | DESTROYED_LABEL,
      DESTROYED_SHAPE,
      DESTROYED_SHAPE | DESTROYED_RECT,
      DESTROYED_SHAPE,
      DESTROYED_SHAPE,
      DESTROYED_SHAPE | DESTROYED_RECT | DESTROYED_LABEL,
  };
  for (int i = 0; i < SPLIT_SHAPES; i++)
    EXPECT(destroyed[i] == expected[i], "shape %d: destructors ran %#x, expected %#x", i, destroyed[i], expected[i]);
  return finish(PROGRAM_NAME);
}
