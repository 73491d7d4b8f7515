// A class library split over files the ordinary way: this header declares the classes, with
// inline virtual functions that call functions defined out of line in split_lib.cpp (the
// library's own file, no OpenMP in it), key functions there, a pure virtual base with an
// out-of-line destructor, multiple and virtual inheritance, and a class template explicitly
// instantiated there. The program (split_main.cpp) calls
// them on objects split_lib.cpp builds; how the two files are put together (one executable, a
// static archive, a shared library linked or loaded with dlopen, hidden visibility, stripped,
// all in the header) is the test's matrix.
//
// SPLIT_HEADER_ONLY: the library's definitions are included here, inline (no key functions).
#ifndef SPLIT_H
#define SPLIT_H

#include <stddef.h>

#define SPLIT_API __attribute__((visibility("default")))

#ifdef SPLIT_HEADER_ONLY
#define SPLIT_INLINE inline
#else
#define SPLIT_INLINE
#endif

// Destructors record their run in `*trace` (if set), a bit per class.
enum { DESTROYED_SHAPE = 1, DESTROYED_RECT = 2, DESTROYED_LABEL = 4 };

// name() returns a string literal: a copy of the device image returns the device's string, whose
// address differs from the host's (a host copy running on the x86_64 device returns the host's).
struct SPLIT_API Shape {
  virtual ~Shape();
  virtual double area() const = 0;
  virtual double perimeter() const = 0;
  virtual int corners() const { return 0; }
  virtual const char *name() const = 0;
  int *trace = nullptr;
};

// Its key function (area) and perimeter and destructor are split_lib.cpp's.
struct Rect : Shape {
  Rect(double width, double height) : width(width), height(height) {}
  ~Rect() override;
  double area() const override;
  double perimeter() const override;
  int corners() const override { return 4; }
  const char *name() const override;
  // Writes to stderr: split_lib.cpp's device compile cannot compile it.
  virtual int describe() const;
  double width, height;
};

// Inline virtual functions (no key function) calling Rect's out-of-line ones, an inline
// destructor calling Rect's out-of-line one.
struct Label : Rect {
  Label(double width, double height, int id) : Rect(width, height), id(id) {}
  ~Label() override {
    if (trace)
      *trace |= DESTROYED_LABEL;
  }
  double area() const override { return Rect::area() + id; }
  double perimeter() const override { return Rect::perimeter() * 2; }
  const char *name() const override { return Rect::name(); }
  int describe() const override { return Rect::describe() + id; }
  int id;
};

// A plain function split_lib.cpp defines, called by inline virtual functions.
SPLIT_API double scale_factor(int k);

struct Scaled : Shape {
  explicit Scaled(int k) : k(k) {}
  double area() const override { return scale_factor(k) * 2; }
  double perimeter() const override { return scale_factor(k); }
  const char *name() const override { return "scaled"; }
  int k;
};

// Multiple inheritance: reached through the second base (secondary vtable, thunk).
struct Tagged {
  virtual ~Tagged() {}
  virtual int tag() const = 0;
};

struct TaggedRect : Rect, Tagged {
  TaggedRect(double side, int t) : Rect(side, side), t(t) {}
  int tag() const override;
  int t;
};

// Virtual inheritance: a diamond over a virtual base, Left's function out of line.
struct Node {
  virtual ~Node() {}
  virtual int weight() const { return 1; }
  int base_value = 7;
};
struct Left : virtual Node {
  int weight() const override;
};
struct Right : virtual Node {
  int side = 3;
};
struct Diamond : Left, Right {
  int weight() const override { return Left::weight() + 100 + side; }
};

// A class template: split_lib.cpp defines lengths() and instantiates it explicitly.
template <class T> struct Poly : Shape {
  Poly(T side, int n) : side(side), n(n) {}
  double area() const override { return double(side) * double(side) * n / 4; }
  double perimeter() const override { return lengths(); }
  int corners() const override { return n; }
  const char *name() const override;
  double lengths() const;
  T side;
  int n;
};
#ifndef SPLIT_HEADER_ONLY
extern template struct Poly<int>;
extern template struct Poly<double>;
#endif

enum { SPLIT_SHAPES = 7, SPLIT_NODES = 1 };

// What split_lib.cpp builds into an arena: offsets of SPLIT_SHAPES shapes (Rect, Label, Scaled,
// TaggedRect, Poly<int>, Poly<double>, Label) and of a Diamond, the index of the TaggedRect.
struct SplitObjects {
  size_t shapes[SPLIT_SHAPES];
  size_t diamond;
  int tagged;
};

// Builds the objects by placement new; 0 if they do not fit. C linkage: found with dlsym too.
extern "C" SPLIT_API int split_build(unsigned char *arena, size_t capacity, SplitObjects *objects);

#ifdef SPLIT_HEADER_ONLY
#include "split_lib.cpp"
#endif

#endif
