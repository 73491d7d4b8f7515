// Classes whose objects only host code builds: no constructor runs in device code, so stock clang
// gives the device none of their vtables. The frontend plugin must define Shape's and Square's
// (declared in a declare target region), leave Hidden's out (internal linkage: nothing to pair
// the host's vtable with), and say so in remarks.
#pragma omp begin declare target
struct Shape {
  virtual ~Shape() {}
  virtual int sides() const = 0;
};
struct Square : Shape {
  int sides() const override { return 4; }
};
namespace {
struct Hidden : Shape {
  int sides() const override { return 0; }
};
} // namespace
#pragma omp end declare target

int hidden_sides() { return Hidden().sides(); }

int sides_on_device(const Shape *shape) {
  int n = 0;
#pragma omp target map(to : shape[0 : 1]) map(from : n)
  n = shape->sides();
  return n;
}
