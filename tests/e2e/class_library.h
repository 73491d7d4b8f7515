// A small geometry class library as it is written before any offload port: no OpenMP in it (no
// declare target region, no declare target member). A pure virtual base, inline virtual
// functions, key functions defined out of line in class_library.cpp, a class deriving from two
// dynamic bases, a class template deriving from the base, a class with no key function.
// CLASS_LIBRARY_API keeps what the program names exported when the library is a shared library
// built with -fvisibility=hidden: the function that builds the objects, and the base class (the
// program's own Dot and Polygon derive from it). The other classes' vtables stay hidden.
#ifndef CLASS_LIBRARY_H
#define CLASS_LIBRARY_H

#include <stddef.h>

#define CLASS_LIBRARY_API __attribute__((visibility("default")))

struct CLASS_LIBRARY_API Shape {
  virtual ~Shape();
  virtual double area() const = 0;
  virtual const char *name() const = 0;
  virtual int corners() const { return 0; }
};

struct Circle : Shape {
  explicit Circle(double radius) : radius(radius) {}
  double area() const override;
  const char *name() const override { return "circle"; }
  double radius;
};

struct Rect : Shape {
  Rect(double width, double height) : width(width), height(height) {}
  double area() const override;
  const char *name() const override;
  int corners() const override { return 4; }
  double width, height;
};

struct Labelled {
  virtual ~Labelled() {}
  virtual int label() const = 0;
};

// Reached through its second base too: a secondary vtable and a this-adjusting thunk.
struct Tile : Rect, Labelled {
  Tile(double side, int id) : Rect(side, side), id(id) {}
  int label() const override;
  const char *name() const override { return "tile"; }
  int id;
};

// No key function: its vtable is emitted by every unit that uses it.
template <class T> struct Polygon : Shape {
  Polygon(T side, int sides) : side(side), sides(sides) {}
  double area() const override { return double(side) * double(side) * sides / 4; }
  const char *name() const override { return "polygon"; }
  int corners() const override { return sides; }
  T side;
  int sides;
};

struct Dot final : Shape {
  double area() const override { return 0; }
  const char *name() const override { return "dot"; }
};

enum { LIBRARY_SHAPES = 7 };

// Builds LIBRARY_SHAPES objects into `arena` (placement new) and writes each one's offset;
// `tile` gets the index of the Tile. Returns how many were built, 0 if they do not fit. C linkage:
// a program may look it up with dlsym.
extern "C" CLASS_LIBRARY_API int build_shapes(unsigned char *arena, size_t capacity, size_t *offsets, int *tile);

#endif
