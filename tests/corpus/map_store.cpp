// A class with a virtual function that uses std::map in a region, <utility> included before it:
// the virtual function names the inline variable std::piecewise_construct, which code generation
// leaves out of the device module. Device code never touches the class.
#include <cstdio>
#include <utility>
#pragma omp begin declare target
#include <map>
struct Store {
  virtual ~Store() {}
  virtual int put(int k, int v) = 0;
};
struct MapStore : Store {
  std::map<int, int> m;
  int put(int k, int v) override { return m[k] = v; }
};
#pragma omp end declare target

int main() {
  MapStore s;
  s.put(1, 2);
  int x = 0;
#pragma omp target map(tofrom : x)
  x = 40 + 2;
  std::printf("map_store: device %d, host %d\n", x, s.m[1]);
  return 0;
}
