// An unmodified program that calls, on the device, virtual functions of objects a shared library
// built on the host, of classes the library defines (their vtables and member functions are in
// the library's host code and in its own device image). The map pairs the library image's
// vtables with the library's host vtables, and the program's image reaches them through the
// device's one table.
//
// clang 19 only: libomptarget 22 gives each image a table of its own, so the program's image
// cannot translate the library's vtables (docs/virtual.md).
#include <omp.h>

#include "check.h"
#include "library_objects.h"

#pragma clang diagnostic ignored "-Wopenmp-mapping"

int main() {
  Polygon *polygon = library_polygon();
  Polygon *hexagon = library_hexagon();
  int r[2] = {0};
#pragma omp target map(to : polygon[0 : 1], hexagon[0 : 1]) map(from : r)
  {
    r[0] = polygon->corners();
    r[1] = hexagon->corners();
  }
  EXPECT(r[0] == 40 && r[1] == 106, "library objects: %d %d", r[0], r[1]);
  int device[2];
  library_device_calls(omp_get_default_device(), device);
  EXPECT(device[0] == 1 && device[1] == 1, "the library's device copies ran %d and %d times, expected 1 and 1",
         device[0], device[1]);
  return finish("library_objects");
}
