// A library's classes in a declare target region: `LibraryBuilt`, which this file's own code
// constructs, gets its device vtable; `LibraryUnused` is left out, with a remark saying why.
#pragma omp begin declare target
#include "library/shapes.h"
#pragma omp end declare target

LibraryBuilt *make() { return new LibraryBuilt(); }

int call(const LibraryBuilt *built) {
  int n = 0;
#pragma omp target map(to : built[0 : 1]) map(from : n)
  n = built->built();
  return n;
}
