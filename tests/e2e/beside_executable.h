// What the dlopen forms of the end-to-end programs share: a library loaded from the executable's
// own directory after the program started, as a plugin would be.
// C and C++, standard POSIX only: an offloading compile includes the system headers before the
// program's first line, so a feature macro defined here would come too late.
#ifndef BESIDE_EXECUTABLE_H
#define BESIDE_EXECUTABLE_H

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

// Loads `library` (a file name) from the executable's directory and returns its symbol `name`;
// null, with a line on stdout, if either is missing. Global: the program's x86_64 device image
// names the library's type_info objects.
static void *symbol_beside_executable(const char *library, const char *name) {
  char path[PATH_MAX];
  // On the stack: on the strict device a system call given a pointer into the program's own
  // data while another thread's kernel runs fails with EFAULT (docs/strict.md).
  // (Written at run time: a copy of a literal the compiler may pass as the literal itself.)
  char self[16];
  snprintf(self, sizeof self, "/proc/%s/exe", "self");
  ssize_t length = readlink(self, path, sizeof path - strlen(library) - 1);
  char *slash = (char *)0;
  for (ssize_t i = 0; i < length; ++i)
    if (path[i] == '/')
      slash = path + i;
  if (!slash) {
    printf("no directory in /proc/self/exe (%zd: %s)\n", length, strerror(errno));
    return (void *)0;
  }
  strcpy(slash + 1, library);
  void *handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    printf("dlopen %s: %s\n", path, dlerror());
    return (void *)0;
  }
  void *symbol = dlsym(handle, name);
  if (!symbol)
    printf("dlsym %s in %s: %s\n", name, path, dlerror());
  return symbol;
}

#endif
