// Virtual functions the device cannot compile: `counted` reads a variable host code defines
// elsewhere (not declare target), `hosted` calls a `device_type(host)` function. Each is kept off
// the device, its declaration weak (the pass plugin puts a trapping stub in its slots), with a
// remark naming what it reaches; `plain` is compiled for the device.
extern int host_counter;
void host_only_function();
#pragma omp declare target to(host_only_function) device_type(host)

struct Widget {
  virtual int counted() const { return host_counter; }
  virtual int hosted() const {
    host_only_function();
    return 0;
  }
  virtual int plain() const { return 3; }
};

int call(const Widget *widget) {
  int n = 0;
#pragma omp target map(to : widget[0 : 1]) map(from : n)
  n = widget->plain();
  return n;
}
