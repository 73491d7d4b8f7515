/* A class library compiled without offloading (a shared library of its own): Square's vtable and
 * virtual functions are the host's only. */
#include "host_calls.h"

Shape::~Shape() = default;

namespace {
struct Square final : Shape {
  explicit Square(double side) : Shape(side) {}
  double area() const override { return size * size; }
};
} // namespace

Shape *make_square(double side) { return new Square(side); }
