// An in-class (inline) member function declared indirect, whose address only host code takes:
// stock clang emits no device definition for it, yet the host registers an indirect entry (clang
// 19 crashes, clang 22 stops). The frontend plugin keeps it.
#pragma omp begin declare target indirect
struct Ops {
  static int twice(int x) { return 2 * x; }
};
#pragma omp end declare target

int (*host_pointer())(int) { return &Ops::twice; }
