// An unmodified C++ program with virtual calls in device code (no explicit translation). A
// virtual call loads the function pointer from the object's vtable and calls it: the pass plugin
// translates it like any indirect call.
//   - Objects constructed in device code have the device image's vtables: device addresses, which
//     the translation returns unchanged. Works on every device.
//   - An object constructed on the host and mapped keeps its host vtable pointer: the pass plugin
//     translates the vtable pointer load too, and the map pairs the host's vtables with the
//     device's, so the call reads the device's vtable (tests/e2e/host_objects.cpp has the rest).
#include "device_copy.h"

// The member functions are defined out of the class body: clang 19 crashes on member functions
// defined inside the class within `begin declare target indirect`.
#pragma omp begin declare target indirect
struct Shape {
  virtual int area(int x) const;
  virtual int sides() const;
};
struct Square : Shape {
  int area(int x) const override;
  int sides() const override;
};
struct Triangle : Shape {
  int area(int x) const override;
};
int Shape::area(int) const { return -1; }
int Shape::sides() const { return 0; }
int Square::area(int x) const {
  note_call(SQUARE);
  return x * x;
}
int Square::sides() const {
  note_call(TWICE);
  return 4;
}
int Triangle::area(int x) const {
  note_call(NEGATE);
  return x * x / 2;
}
#pragma omp end declare target

int main() {
  int r[3] = {0};
  int which = 1; // from the host, so that the compiler cannot tell which object is called
#pragma omp target map(to : which) map(from : r[0 : 3])
  {
    Square square;
    Triangle triangle;
    const Shape *shapes[2] = {&square, &triangle};
    for (int i = 0; i < 2; i++)
      r[i] = shapes[(i + which) & 1]->area(6);
    r[2] = shapes[which ^ 1]->sides();
  }
  EXPECT(r[0] == 18 && r[1] == 36 && r[2] == 4, "objects built on the device: %d %d %d", r[0], r[1], r[2]);
  const int none[FUNCTIONS] = {};
  int device_calls[FUNCTIONS] = {};
  device_calls[TWICE] = device_calls[SQUARE] = device_calls[NEGATE] = 1;
  expect_calls("virtual calls on objects built on the device", device_calls, none);

  static Square host_square;
  Square *host_object = &host_square;
// Mapping copies the object's bytes, its host vtable pointer included: that is the case tested.
#pragma clang diagnostic ignored "-Wopenmp-mapping"
#pragma omp target map(to : host_object[0 : 1]) map(from : r[0 : 1])
  r[0] = static_cast<const Shape *>(host_object)->area(5);
  EXPECT(r[0] == 25, "host object: %d", r[0]);
  int square_once[FUNCTIONS] = {};
  square_once[SQUARE] = 1;
  expect_calls("virtual call on a mapped host object", square_once, none);
  return finish("unmodified_virtual");
}
