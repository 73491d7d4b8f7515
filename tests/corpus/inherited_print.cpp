// A base class outside any region whose inline virtual print() writes std::cout; a derived class
// in a region. Device code builds its own object and calls area().
#include <iostream>
struct Base {
  virtual ~Base() {}
  virtual void print() const { std::cout << "inherited_print: base\n"; }
  virtual int area() const { return 1; }
};
#pragma omp begin declare target
struct Square : Base {
  int side = 3;
  int area() const override { return side * side; }
};
#pragma omp end declare target

int main() {
  Square host;
  host.print();
  int area = 0;
#pragma omp target map(tofrom : area)
  {
    Square device;
    const Base &b = device;
    area = b.area();
  }
  std::cout << "inherited_print: device area " << area << "\n";
  return 0;
}
