// The library's own file of split.h: out-of-line members, key functions, the explicit
// instantiations and the code that builds objects. No OpenMP in it.
#ifndef SPLIT_HEADER_ONLY
#include "split.h"
#endif

#include "arena.h"
#include <stdio.h>

SPLIT_INLINE Shape::~Shape() {
  if (trace)
    *trace |= DESTROYED_SHAPE;
}

SPLIT_INLINE Rect::~Rect() {
  if (trace)
    *trace |= DESTROYED_RECT;
}

SPLIT_INLINE double Rect::area() const { return width * height; }

SPLIT_INLINE double Rect::perimeter() const { return 2 * (width + height); }

SPLIT_INLINE const char *Rect::name() const { return "rect"; }

SPLIT_INLINE int Rect::describe() const {
  fprintf(stderr, "rect %g x %g\n", width, height);
  return corners();
}

SPLIT_INLINE double scale_factor(int k) { return 1.5 * k; }

SPLIT_INLINE int TaggedRect::tag() const { return t * 10 + corners(); }

SPLIT_INLINE int Left::weight() const { return base_value * 2; }

template <class T> double Poly<T>::lengths() const { return double(side) * n; }

template <class T> const char *Poly<T>::name() const { return "poly"; }

#ifndef SPLIT_HEADER_ONLY
template struct Poly<int>;
template struct Poly<double>;
#endif


SPLIT_INLINE int split_build(unsigned char *arena, size_t capacity, SplitObjects *objects) {
  size_t used = 0;
  objects->shapes[0] = place<Rect>(arena, capacity, used, 3.0, 4.0);
  objects->shapes[1] = place<Label>(arena, capacity, used, 2.0, 5.0, 9);
  objects->shapes[2] = place<Scaled>(arena, capacity, used, 4);
  objects->shapes[3] = place<TaggedRect>(arena, capacity, used, 2.5, 6);
  objects->shapes[4] = place<Poly<int>>(arena, capacity, used, 2, 6);
  objects->shapes[5] = place<Poly<double>>(arena, capacity, used, 1.5, 8);
  objects->shapes[6] = place<Label>(arena, capacity, used, 1.0, 1.0, 3);
  objects->diamond = place<Diamond>(arena, capacity, used);
  objects->tagged = 3;
  if (objects->diamond == static_cast<size_t>(-1))
    return 0;
  for (size_t offset : objects->shapes)
    if (offset == static_cast<size_t>(-1))
      return 0;
  return SPLIT_SHAPES;
}
