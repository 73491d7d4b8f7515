// Classes whose vtables and member functions are defined in a shared library with its own device
// image (library_objects_lib.cpp), used by library_objects.cpp.
#ifndef LIBRARY_OBJECTS_H
#define LIBRARY_OBJECTS_H

#pragma omp begin declare target
extern int library_calls[2];
#pragma omp end declare target

#pragma omp begin declare target indirect
struct Polygon {
  int extra = 0;
  virtual int corners() const;
};
struct Hexagon : Polygon {
  int corners() const override;
};
#pragma omp end declare target

// Built by the library, on the host.
Polygon *library_polygon();
Polygon *library_hexagon();
// The library's device copy of library_calls, read on device `device`.
void library_device_calls(int device, int out[2]);

#endif
