// A program's own base class for plugins: a shared library the program loads with dlopen derives
// its classes from it (plugin_lib.cpp). The base's key function (id) and a helper every plugin
// inherits (scaled) are defined out of line in the program (plugin_host.cpp), which exports
// them with -rdynamic as plugin hosts do; the plugins' vtables, in the library, name them.
#ifndef PLUGIN_BASE_H
#define PLUGIN_BASE_H

#include <stddef.h>

struct Filter {
  virtual ~Filter() {}
  virtual double apply(double x) const = 0;
  // What plugins inherit: the program's.
  virtual double scaled(double x) const;
  virtual int id() const;
  // A string literal: a device copy returns the device's, whose address differs from the host's.
  virtual const char *kind() const;
  virtual const char *label() const = 0;
  double gain = 1;
};

enum { FILTERS = 3 };

// The library's builder: constructs FILTERS filters by placement new into `arena` (`capacity`
// bytes) and writes their offsets; returns how many it built (0 if they do not fit).
typedef int (*FilterBuilder)(unsigned char *arena, size_t capacity, size_t *offsets);

#endif
