// A class library written without OpenMP (`Circle`) beside a class of a declare target region
// (`Marked`). Under the default policy (vtables=all) the device gets both vtables; under
// vtables=declare-target only the region's.
struct Circle {
  virtual ~Circle() {}
  virtual int radius() const { return 1; }
};

#pragma omp begin declare target
struct Marked {
  virtual int mark() const { return 2; }
};
#pragma omp end declare target

int measure(const Circle *circle, const Marked *marked) {
  int n = 0;
#pragma omp target map(to : circle[0 : 1], marked[0 : 1]) map(from : n)
  n = circle->radius() + marked->mark();
  return n;
}
