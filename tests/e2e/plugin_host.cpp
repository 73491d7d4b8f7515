// A plugin host: the program defines a base class (plugin_base.h), loads a plugin library with
// dlopen from its own directory, has it build its filters on the host into a mapped arena, and
// calls them in a target region. The plugins' vtables are the library's, and their slots of
// scaled() and id() name the program's functions: only the program's device image defines
// them, and the library's apply() calls scaled() through the object's vtable.
#include <string.h>

#include "beside_executable.h"

#include "check.h"
#include "plugin_base.h"

#ifndef PLUGIN_LIBRARY
#define PLUGIN_LIBRARY "libplugin_host_shared.so"
#endif

double Filter::scaled(double x) const { return gain * x; }

int Filter::id() const { return 7; }

const char *Filter::kind() const { return "filter"; }

enum { ARENA = 256, TEXT = 8 };

// The first TEXT - 1 characters of `from`, terminated.
static void copy_text(char *to, const char *from) {
  int n = 0;
  for (; n < TEXT - 1 && from[n]; n++)
    to[n] = from[n];
  to[n] = 0;
}

int main() {
  FilterBuilder build = reinterpret_cast<FilterBuilder>(symbol_beside_executable(PLUGIN_LIBRARY, "build_filters"));
  alignas(16) static unsigned char arena[ARENA];
  size_t offsets[FILTERS];
  if (!build || build(arena, ARENA, offsets) != FILTERS) {
    EXPECT(false, "the filters were not built");
    return finish("plugin_host");
  }
  double applied[FILTERS], scaled[FILTERS];
  int ids[FILTERS];
  const char *kinds[FILTERS], *labels[FILTERS];
  char kind_text[FILTERS][TEXT], label_text[FILTERS][TEXT];
#pragma omp target map(to : arena, offsets) map(from : applied, scaled, ids, kinds, labels, kind_text, label_text)
  for (int i = 0; i < FILTERS; i++) {
    const Filter *filter = reinterpret_cast<const Filter *>(arena + offsets[i]);
    applied[i] = filter->apply(2.0);
    scaled[i] = filter->scaled(2.0);
    ids[i] = filter->id();
    kinds[i] = filter->kind();
    labels[i] = filter->label();
    copy_text(kind_text[i], kinds[i]);
    copy_text(label_text[i], labels[i]);
  }
  for (int i = 0; i < FILTERS; i++) {
    const Filter *filter = reinterpret_cast<const Filter *>(arena + offsets[i]);
    EXPECT(applied[i] == filter->apply(2.0), "filter %d: apply %g, host %g", i, applied[i], filter->apply(2.0));
    EXPECT(scaled[i] == filter->scaled(2.0), "filter %d: scaled %g, host %g", i, scaled[i], filter->scaled(2.0));
    EXPECT(ids[i] == filter->id(), "filter %d: id %d, host %d", i, ids[i], filter->id());
    EXPECT(strcmp(kind_text[i], filter->kind()) == 0 && kinds[i] != filter->kind(),
           "filter %d: kind \"%s\" at %p, host's at %p: the program's kind() ran as its host copy", i, kind_text[i],
           (const void *)kinds[i], (const void *)filter->kind());
    EXPECT(strcmp(label_text[i], filter->label()) == 0 && labels[i] != filter->label(),
           "filter %d: label \"%s\" at %p, host's at %p: the library's label() ran as its host copy", i,
           label_text[i], (const void *)labels[i], (const void *)filter->label());
  }
  return finish("plugin_host");
}
