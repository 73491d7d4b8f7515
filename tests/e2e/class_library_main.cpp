// A first offload port of a program that uses a class library with no OpenMP in it
// (class_library.h, class_library.cpp): the host builds the objects into one byte arena, which is
// mapped as a whole; the one target region forms base pointers from offsets and calls virtual
// functions. Every result must equal the host's, and each name must come from the device's copy
// of the library (a string of the device image: its address differs from the host's, which a
// host copy of `name` would return).
//
// With CLASS_LIBRARY_DLOPEN (the library's file name), the program is not linked with the library:
// it loads it with dlopen from its own directory before its target region.
#include <string.h>
#ifdef CLASS_LIBRARY_DLOPEN
#include "beside_executable.h"
#endif

#include "check.h"
#include "class_library.h"

#ifndef PROGRAM_NAME
#define PROGRAM_NAME "class_library"
#endif

enum { ARENA = 1024, NAME = 16 };

typedef int (*ShapeBuilder)(unsigned char *, size_t, size_t *, int *);

// The library's build_shapes: linked, or loaded from the executable's directory.
static ShapeBuilder shape_builder() {
#ifdef CLASS_LIBRARY_DLOPEN
  return reinterpret_cast<ShapeBuilder>(symbol_beside_executable(CLASS_LIBRARY_DLOPEN, "build_shapes"));
#else
  return build_shapes;
#endif
}

struct Result {
  double area;
  int corners;
  int label;
  const char *name;
  char text[NAME];
};

int main() {
  alignas(16) static unsigned char arena[ARENA];
  size_t offsets[LIBRARY_SHAPES];
  int tile = -1;
  ShapeBuilder build = shape_builder();
  EXPECT(build != nullptr, "no build_shapes");
  if (!build)
    return finish(PROGRAM_NAME);
  int count = build(arena, ARENA, offsets, &tile);
  EXPECT(count == LIBRARY_SHAPES && tile >= 0, "the shapes do not fit the arena");
  if (count != LIBRARY_SHAPES || tile < 0)
    return finish(PROGRAM_NAME);

  static Result results[LIBRARY_SHAPES];
#pragma omp target map(to : arena, offsets) map(from : results)
  for (int i = 0; i < LIBRARY_SHAPES; i++) {
    const Shape *shape = reinterpret_cast<const Shape *>(arena + offsets[i]);
    Result &r = results[i];
    r.area = shape->area();
    r.corners = shape->corners();
    r.name = shape->name();
    int n = 0;
    for (; n < NAME - 1 && r.name[n]; n++)
      r.text[n] = r.name[n];
    r.text[n] = 0;
    const Labelled *labelled = i == tile ? static_cast<const Labelled *>(static_cast<const Tile *>(shape)) : nullptr;
    r.label = labelled ? labelled->label() : -1;
  }

  for (int i = 0; i < LIBRARY_SHAPES; i++) {
    const Shape *shape = reinterpret_cast<const Shape *>(arena + offsets[i]);
    const Result &r = results[i];
    EXPECT(r.area == shape->area(), "shape %d (%s): area %g, host %g", i, shape->name(), r.area, shape->area());
    EXPECT(r.corners == shape->corners(), "shape %d (%s): %d corners, host %d", i, shape->name(), r.corners,
           shape->corners());
    EXPECT(strcmp(r.text, shape->name()) == 0, "shape %d: name \"%s\", host \"%s\"", i, r.text, shape->name());
    EXPECT(r.name != shape->name(), "shape %d (%s): the name is the host's string: a host copy of name() ran", i,
           shape->name());
    int label = i == tile ? static_cast<const Labelled *>(static_cast<const Tile *>(shape))->label() : -1;
    EXPECT(r.label == label, "shape %d (%s): label %d, host %d", i, shape->name(), r.label, label);
  }
  return finish(PROGRAM_NAME);
}
