/* What host_calls.cpp calls from files that have no device code. */
#ifndef HOST_CALLS_H
#define HOST_CALLS_H

#ifdef __cplusplus
extern "C" {
#endif
/* host_calls_plain.c, a C file compiled without OpenMP: one of its functions. */
typedef double (*scale_fn)(double);
scale_fn plain_scale(void);
#ifdef __cplusplus
}

/* host_calls_shapes.cpp, a class library compiled without offloading: its classes' virtual
 * functions and vtables exist on the host only. */
struct Shape {
  explicit Shape(double size) : size(size) {}
  virtual ~Shape();
  virtual double area() const = 0;
  double size;
};
Shape *make_square(double side);
#endif

#endif
