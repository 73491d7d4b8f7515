/* An unmodified program: function pointers reach the device every way a program passes them, and
 * device code calls them with no explicit translation. Compiled with the pass plugin, each call
 * runs the device copy; compiled without it (the negative control), the pointers that arrive as
 * host addresses run the host copies on x86_64 host offload (and would fault on a GPU). */
#include "device_copy.h"

typedef int (*unary)(int);

#pragma omp begin declare target indirect
int add_one(int x) {
  note_call(ADD_ONE);
  return x + 1;
}
int twice(int x) {
  note_call(TWICE);
  return 2 * x;
}
int square(int x) {
  note_call(SQUARE);
  return x * x;
}
int negate(int x) {
  note_call(NEGATE);
  return -x;
}
#pragma omp end declare target

#pragma omp begin declare target
/* The device image's own table: device addresses, which the translation returns unchanged. */
unary device_table[4] = {add_one, twice, square, negate};
static int apply_twice(unary f, int x) { return f(f(x)); }
static unary pick(const unary *table, int i) { return table[i & 3]; }
#pragma omp end declare target

struct op {
  unary apply;
  int arg;
};

static int reference(int k, int x) {
  const int results[4] = {x + 1, 2 * x, x * x, -x};
  return results[k];
}

int main(void) {
  unary funcs[4] = {add_one, twice, square, negate};
  int r[4] = {0};

  unary mapped = square;
#pragma omp target map(to : mapped) map(from : r[0 : 1])
  r[0] = mapped(7);
  EXPECT(r[0] == 49, "map(to:) pointer: %d", r[0]);
  expect_calls("pointer mapped with map(to:)", (int[FUNCTIONS]){[SQUARE] = 1}, (int[FUNCTIONS]){0});

#pragma omp target map(to : funcs[0 : 4]) map(from : r[0 : 4])
  for (int i = 0; i < 4; i++)
    r[i] = funcs[i](i + 3);
  for (int i = 0; i < 4; i++)
    EXPECT(r[i] == reference(i, i + 3), "array element %d: %d", i, r[i]);
  expect_calls("mapped array of pointers", (int[FUNCTIONS]){1, 1, 1, 1}, (int[FUNCTIONS]){0});

  struct op ops[2] = {{negate, 5}, {twice, 21}};
#pragma omp target map(to : ops[0 : 2]) map(from : r[0 : 2])
  for (int i = 0; i < 2; i++)
    r[i] = ops[i].apply(ops[i].arg);
  EXPECT(r[0] == -5 && r[1] == 42, "struct members: %d %d", r[0], r[1]);
  expect_calls("struct members", (int[FUNCTIONS]){[TWICE] = 1, [NEGATE] = 1}, (int[FUNCTIONS]){0});

#pragma omp target map(to : funcs[0 : 4]) map(from : r[0 : 2])
  {
    r[0] = apply_twice(funcs[1], 5);
    r[1] = pick(funcs, 6)(4);
  }
  EXPECT(r[0] == 20 && r[1] == 16, "through device functions: %d %d", r[0], r[1]);
  expect_calls("passed to and returned by device functions", (int[FUNCTIONS]){[TWICE] = 2, [SQUARE] = 1},
               (int[FUNCTIONS]){0});

  enum { N = 512 };
  static int out[N], chosen[N];
#pragma omp target teams distribute parallel for num_teams(4) thread_limit(64) map(to : funcs[0 : 4])     \
    map(from : out[0 : N], chosen[0 : N])
  for (int i = 0; i < N; i++) {
    int k = (omp_get_team_num() + omp_get_thread_num() + i) & 3;
    chosen[i] = k;
    out[i] = funcs[k](i);
  }
  int per_function[FUNCTIONS] = {0}, wrong = 0;
  for (int i = 0; i < N; i++) {
    per_function[chosen[i]]++;
    wrong += out[i] != reference(chosen[i], i);
  }
  EXPECT(wrong == 0, "per team and thread: %d wrong results", wrong);
  expect_calls("chosen per team and thread", per_function, (int[FUNCTIONS]){0});

#pragma omp target map(from : r[0 : 4])
  for (int i = 0; i < 4; i++)
    r[i] = device_table[i](10);
  for (int i = 0; i < 4; i++)
    EXPECT(r[i] == reference(i, 10), "device address %d: %d", i, r[i]);
  expect_calls("pointers that are already device addresses", (int[FUNCTIONS]){1, 1, 1, 1}, (int[FUNCTIONS]){0});

  unary maybe[2] = {NULL, add_one};
  int nulls = 0;
#pragma omp target map(to : maybe[0 : 2]) map(from : r[0 : 2]) map(tofrom : nulls)
  for (int i = 0; i < 2; i++) {
    unary f = maybe[i];
    if (f == NULL) {
      nulls++;
      r[i] = -1;
    } else {
      r[i] = f(1);
    }
  }
  EXPECT(nulls == 1 && r[0] == -1 && r[1] == 2, "NULL stays NULL: %d nulls, %d %d", nulls, r[0], r[1]);
  expect_calls("NULL beside a pointer", (int[FUNCTIONS]){[ADD_ONE] = 1}, (int[FUNCTIONS]){0});

  unary captured = negate;
#pragma omp target map(from : r[0 : 1])
  r[0] = captured(8);
  EXPECT(r[0] == -8, "captured: %d", r[0]);
  expect_calls("captured (translated by libomptarget at launch)", (int[FUNCTIONS]){[NEGATE] = 1},
               (int[FUNCTIONS]){0});

  return finish("unmodified");
}
