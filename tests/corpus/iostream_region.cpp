// A class in a region whose virtual print() writes std::cout (<iostream> included before the
// region): a GPU has neither std::cout's insertion nor strlen. Device code calls only area().
#include <iostream>
#pragma omp begin declare target
struct Shape {
  virtual ~Shape() {}
  virtual double area() const = 0;
  virtual void print() const { std::cout << "iostream_region: shape " << area() << "\n"; }
};
struct Rect : Shape {
  double w = 2, h = 3;
  double area() const override { return w * h; }
};
#pragma omp end declare target

int main() {
  Rect host;
  host.print();
  double area = 0;
#pragma omp target map(tofrom : area)
  {
    Rect device;
    area = device.area();
  }
  std::cout << "iostream_region: device area " << area << "\n";
  return 0;
}
