// The shared library of library_objects: classes defined here, objects built here on the host.
#include <omp.h>

#include "library_objects.h"

#pragma omp begin declare target
int library_calls[2];
#pragma omp end declare target

#pragma omp begin declare target indirect
int Polygon::corners() const {
  if (!omp_is_initial_device()) {
#pragma omp atomic
    library_calls[0]++;
  }
  return extra;
}
int Hexagon::corners() const {
  if (!omp_is_initial_device()) {
#pragma omp atomic
    library_calls[1]++;
  }
  return 6 + extra;
}
#pragma omp end declare target

Polygon *library_polygon() {
  static Polygon polygon;
  polygon.extra = 40;
  return &polygon;
}

Polygon *library_hexagon() {
  static Hexagon hexagon;
  hexagon.extra = 100;
  return &hexagon;
}

void library_device_calls(int device, int out[2]) {
#pragma omp target update from(library_calls) device(device)
  out[0] = library_calls[0];
  out[1] = library_calls[1];
}
