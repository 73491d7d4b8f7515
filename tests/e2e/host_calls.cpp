/* Calls device code cannot make: through pointers into the host program that no device image
 * pairs. Each mistake is one argument; without one the program makes only correct calls.
 *
 *   not-indirect   a function of this file that is not declared indirect
 *   plain-c        a function of a C file compiled without OpenMP
 *   class-library  a virtual function of a class whose library was compiled without offloading
 *
 * A GPU faults at each (or computes garbage); the x86_64 device would run the host copy. With the
 * project, each stops with one line that names what was called, where it lives and the fix. */
#include <cstring>

#include "check.h"
#include "host_calls.h"

/* Counted in each image's own copy: the device's when the device copy ran. */
#pragma omp begin declare target
int halved, applied;
#pragma omp end declare target

#pragma omp begin declare target indirect
double halve(double x) {
#pragma omp atomic
  halved++;
  return x / 2;
}
#pragma omp end declare target

/* A class of this program: the configuration file gives its virtual functions and vtable device
 * copies, and pairs the host's vtable with the device's. */
struct Scaler {
  explicit Scaler(double factor) : factor(factor) {}
  virtual ~Scaler() = default;
  virtual double apply(double x) const;
  double factor;
};
double Scaler::apply(double x) const {
#pragma omp atomic
  applied++;
  return factor * x;
}

/* Defined here, never declared indirect: its address is the host's only. */
double triple(double x) { return 3 * x; }

static double call_on_device(scale_fn fn, double x) {
  double out = 0;
#pragma omp target map(from : out)
  out = fn(x);
  return out;
}

int main(int argc, char **argv) {
  const char *mistake = argc > 1 ? argv[1] : "";
  EXPECT(call_on_device(halve, 8) == 4, "halve(8) on the device");
  EXPECT(halved == 0, "the host copy of halve ran %d times", halved);
#pragma omp target update from(halved)
  EXPECT(halved == 1, "the device copy of halve ran %d times, expected once", halved);
  {
    /* A host-built object's bytes (a class with a vtable is not trivially copyable). */
    Scaler *scaler = new Scaler(5);
    char *bytes = reinterpret_cast<char *>(scaler);
    double scaled = 0;
#pragma omp target map(to : bytes[0 : sizeof(Scaler)]) map(from : scaled)
    scaled = reinterpret_cast<Scaler *>(bytes)->apply(2);
    EXPECT(scaled == 10, "a host-built Scaler(5) applied to 2 on the device: %g", scaled);
    EXPECT(applied == 0, "the host copy of Scaler::apply ran %d times", applied);
#pragma omp target update from(applied)
    EXPECT(applied == 1, "the device copy of Scaler::apply ran %d times, expected once", applied);
    delete scaler;
  }
  if (!strcmp(mistake, "not-indirect")) {
    EXPECT(call_on_device(triple, 2) == 6, "triple(2) on the device");
  } else if (!strcmp(mistake, "plain-c")) {
    EXPECT(call_on_device(plain_scale(), 2) == 8, "the plain C file's function on the device");
  } else if (!strcmp(mistake, "class-library")) {
    Shape *square = make_square(3);
    /* The object's bytes, as a program maps what a library built (a class with a vtable is not
     * trivially copyable): the device reads the host's vtable pointer in them. */
    char *bytes = reinterpret_cast<char *>(square);
    double area = 0;
#pragma omp target map(to : bytes[0 : sizeof(Shape)]) map(from : area)
    area = reinterpret_cast<Shape *>(bytes)->area();
    EXPECT(area == 9, "the square's area on the device: %g", area);
    delete square;
  } else if (mistake[0]) {
    printf("unknown mistake %s\n", mistake);
    return 2;
  }
  return finish("host_calls");
}
