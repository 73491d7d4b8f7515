// The class library's own file: key functions and the code that builds objects. No OpenMP.
#include "class_library.h"

#include "arena.h"

Shape::~Shape() {}

double Circle::area() const { return 3.0 * radius * radius; }

double Rect::area() const { return width * height; }

const char *Rect::name() const { return "rect"; }

int Tile::label() const { return id * 10 + corners(); }


int build_shapes(unsigned char *arena, size_t capacity, size_t *offsets, int *tile) {
  size_t used = 0;
  offsets[0] = place<Circle>(arena, capacity, used, 2.0);
  offsets[1] = place<Rect>(arena, capacity, used, 3.0, 4.0);
  offsets[2] = place<Tile>(arena, capacity, used, 5.0, 7);
  offsets[3] = place<Polygon<int>>(arena, capacity, used, 2, 6);
  offsets[4] = place<Polygon<double>>(arena, capacity, used, 1.5, 8);
  offsets[5] = place<Dot>(arena, capacity, used);
  offsets[6] = place<Circle>(arena, capacity, used, 0.5);
  *tile = 2;
  for (int i = 0; i < LIBRARY_SHAPES; i++)
    if (offsets[i] == static_cast<size_t>(-1))
      return 0;
  return LIBRARY_SHAPES;
}
