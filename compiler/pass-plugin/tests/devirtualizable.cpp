// Kernels stock clang devirtualizes and folds: objects built in device code, and a function pointer
// taken there. With the project their device IR must be stock's (tests/device_ir.rs): the
// translations the pass inserts before the optimizer fold as soon as their operand is a device
// address, so nothing is hidden from devirtualization and inlining.
#include <new>

#pragma omp begin declare target
struct Shape {
  virtual int sides() const { return 0; }
  virtual ~Shape() {}
};
struct Triangle : Shape {
  int sides() const override { return 3; }
};
struct Square : Shape {
  int sides() const override { return 4; }
};
int twice(int x) { return 2 * x; }
#pragma omp end declare target

int main() {
  int on_stack = 0, placed = 0, pointer = 0;
#pragma omp target map(from : on_stack)
  {
    Triangle t;
    const Shape *s = &t;
    on_stack = s->sides();
  }
#pragma omp target map(from : placed)
  {
    alignas(Square) unsigned char at[sizeof(Square)];
    const Shape *s = new (at) Square;
    placed = s->sides();
    s->~Shape();
  }
#pragma omp target map(from : pointer)
  {
    int (*f)(int) = twice;
    pointer = f(21);
  }
  return on_stack == 3 && placed == 4 && pointer == 42 ? 0 : 1;
}
