// An LD_PRELOAD library for the suite: counts, per handle, the references dlopen gave and the
// dlclose calls that released them. A dlclose of a handle with no reference left (a link map the
// loader may already have freed) is not passed on: it prints one line to stderr instead,
//   close_count: dlclose(0x...) with no reference left
// so a program that closes an object twice reports it instead of dying at exit, or not, as the
// heap happens to lie. Handles it never saw opened are passed on untouched.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

enum { SLOTS = 1024 };
static struct {
  void *handle;
  long references;
} slots[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void *dlopen(const char *file, int mode) {
  void *(*next)(const char *, int) = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
  void *handle = next(file, mode);
  if (handle == NULL) return NULL;
  pthread_mutex_lock(&lock);
  int free_slot = -1, seen = 0;
  for (int i = 0; i < SLOTS && !seen; i++) {
    if (slots[i].handle == handle) {
      slots[i].references++;
      seen = 1;
    } else if (slots[i].handle == NULL && free_slot == -1) {
      free_slot = i;
    }
  }
  if (!seen && free_slot >= 0) {
    slots[free_slot].handle = handle;
    slots[free_slot].references = 1;
  }
  pthread_mutex_unlock(&lock);
  return handle;
}

int dlclose(void *handle) {
  int (*next)(void *) = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
  pthread_mutex_lock(&lock);
  int spent = 0;
  for (int i = 0; i < SLOTS; i++) {
    if (slots[i].handle == handle) {
      // A slot stays when its count reaches 0: a later close of the handle is then seen.
      spent = slots[i].references == 0;
      if (!spent) slots[i].references--;
      break;
    }
  }
  pthread_mutex_unlock(&lock);
  if (spent) {
    fprintf(stderr, "close_count: dlclose(%p) with no reference left\n", handle);
    return 0;
  }
  return next(handle);
}
