/* Shared by every end-to-end program: EXPECT counts checks and prints one line per failure;
 * finish() prints the line the test runner reads ("<program>: N checks, M failed") and returns the
 * exit status. */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>

static int check_failures;
static int check_count;

#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    check_count++;                                                                                 \
    if (!(cond)) {                                                                                 \
      check_failures++;                                                                            \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                       \
      printf(__VA_ARGS__);                                                                         \
      printf("\n");                                                                                \
      fflush(stdout); /* a program gone wrong may die later: what it found reaches the pipe */    \
    }                                                                                              \
  } while (0)

/* One line a test runner can read, then the exit status. */
static inline int finish(const char *program) {
  if (check_count == 0) {
    printf("%s: no checks ran\n", program);
    return 2;
  }
  printf("%s: %d checks, %d failed\n", program, check_count, check_failures);
  fflush(stdout);
  return check_failures != 0;
}

#endif
