// What the class libraries of the end-to-end programs build objects with, as host code that
// fills a byte arena does.
#ifndef ARENA_H
#define ARENA_H

#include <stddef.h>

#include <new>

// Constructs a T from `args` at the next suitably aligned offset of `arena` (`used` bytes taken
// of `capacity`); returns its offset, or (size_t)-1 if it does not fit.
template <class T, class... Args> size_t place(unsigned char *arena, size_t capacity, size_t &used, Args... args) {
  used = (used + alignof(T) - 1) / alignof(T) * alignof(T);
  if (used + sizeof(T) > capacity)
    return static_cast<size_t>(-1);
  size_t at = used;
  new (arena + at) T(args...);
  used += sizeof(T);
  return at;
}

#endif
