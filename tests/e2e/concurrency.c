/* Concurrency on every device, written as an OpenMP program would be: `./concurrency [ROUNDS]`.
 *
 * First, once per process: 16 host threads released together by a barrier launch their first
 * target region on device `t % omp_get_num_devices()`, so that every device's first launch (the
 * image load, the table built for it) races with the others and with a 17th thread launching
 * the region of a shared library with its own device image (CONCURRENCY_LIBRARY, from the
 * executable's directory), loaded before. Then ROUNDS times (1 by default):
 *   - the 16 threads launch 8 regions each, spread over every device;
 *   - 64 `nowait` target tasks with `depend` chains over 4 slots, spread over every device;
 *   - 4 threads each map a buffer with `target enter data nowait`, update it in a `nowait`
 *     region and bring it back with `target exit data nowait`, one device each;
 *   - 4 threads each copy a buffer to memory of `omp_target_alloc` with `omp_target_memcpy`,
 *     update it there (`is_device_ptr`) and copy it back, one device each.
 * Every region calls `declare target indirect` functions through their host addresses, picked
 * per element from a mapped table: each returns -1 where its host copy runs instead of the
 * device's. Every result is checked against the same arithmetic on the host.
 *
 * UNORDERED_CHAINS (the stress step's control): the `nowait` tasks drop their `depend` clauses,
 * a race of the program's own that the checks must catch. */
#include "beside_executable.h"

#include <omp.h>
#include <stdlib.h>

#include "check.h"

#pragma omp begin declare target indirect
int add_seven(int x) { return omp_is_initial_device() ? -1 : x + 7; }
int triple(int x) { return omp_is_initial_device() ? -1 : 3 * x; }
int square_mod(int x) { return omp_is_initial_device() ? -1 : (x * x) % 1009; }
#pragma omp end declare target

typedef int (*operation)(int);

enum { OPERATIONS = 3, THREADS = 16, LAUNCHES = 8, TASKS = 64, SLOTS = 4, BUFFER = 256, MODULUS = 1009 };

static operation operations[OPERATIONS] = {add_seven, triple, square_mod};

/* The host's answer, computed without calling the functions. */
static int expected(int k, int x) {
  switch (k) {
  case 0:
    return x + 7;
  case 1:
    return 3 * x;
  default:
    return (x * x) % MODULUS;
  }
}

/* Each region keeps values small: results stay below MODULUS, whatever the order. */
static int step(int k, int x) { return expected(k, x) % MODULUS; }

typedef int (*library_entry)(int device, int x);

static void first_launches(int devices) {
  int results[THREADS];
  int library_result = 0, library_expected = 0, library_loaded = 0;
  /* Loaded before the threads start: a dlopen while other threads launch can hang the x86_64
   * device's stock runtimes (docs/concurrency.md). */
#ifdef CONCURRENCY_LIBRARY
  library_entry entry = (library_entry)symbol_beside_executable(CONCURRENCY_LIBRARY, "concurrency_library_apply");
  library_loaded = entry != 0;
#else
  library_entry entry = 0;
  library_loaded = 1;
#endif
#pragma omp parallel num_threads(THREADS + 1)
  {
    int t = omp_get_thread_num();
#pragma omp barrier
    if (t < THREADS) {
      int k = t % OPERATIONS, x = 100 + t, r = 0;
#pragma omp target device(t % devices) map(to : operations[0 : OPERATIONS]) map(from : r)
      r = operations[k](x);
      results[t] = r;
    } else if (entry) {
      library_result = entry(devices - 1, 21);
      library_expected = 21 * 21 - 21;
    }
  }
  for (int t = 0; t < THREADS; t++)
    EXPECT(results[t] == expected(t % OPERATIONS, 100 + t), "first launch of thread %d on device %d: %d",
           t, t % devices, results[t]);
  EXPECT(library_loaded, "the library was not loaded");
  EXPECT(library_result == library_expected, "the library's region: %d, expected %d", library_result,
         library_expected);
}

static void many_launches(int devices, int round) {
  int wrong[THREADS] = {0};
#pragma omp parallel num_threads(THREADS)
  {
    int t = omp_get_thread_num();
    for (int i = 0; i < LAUNCHES; i++) {
      int k = (t + i + round) % OPERATIONS, x = t * LAUNCHES + i + round, r = 0;
#pragma omp target device((t + i) % devices) map(to : operations[0 : OPERATIONS]) map(from : r)
      r = operations[k](x);
      if (r != expected(k, x))
        wrong[t]++;
    }
  }
  for (int t = 0; t < THREADS; t++)
    EXPECT(wrong[t] == 0, "round %d: %d of thread %d's launches wrong", round, wrong[t], t);
}

static void task_chains(int devices, int round) {
  int chain[SLOTS], host[SLOTS];
  for (int s = 0; s < SLOTS; s++)
    chain[s] = host[s] = s + round;
  for (int i = 0; i < TASKS; i++)
    host[i % SLOTS] = step(i % OPERATIONS, host[i % SLOTS]);
#pragma omp parallel num_threads(SLOTS)
#pragma omp single
  for (int i = 0; i < TASKS; i++) {
    int k = i % OPERATIONS, s = i % SLOTS;
#ifdef UNORDERED_CHAINS
#pragma omp target nowait device(i % devices) map(to : operations[0 : OPERATIONS]) map(tofrom : chain[s : 1])
#else
#pragma omp target nowait device(i % devices) depend(inout : chain[s]) map(to : operations[0 : OPERATIONS])   \
    map(tofrom : chain[s : 1])
#endif
    chain[s] = operations[k](chain[s]) % MODULUS;
  }
  for (int s = 0; s < SLOTS; s++)
    EXPECT(chain[s] == host[s], "round %d: chain %d is %d, expected %d", round, s, chain[s], host[s]);
}

static void unstructured_nowait(int devices, int round) {
  int wrong[SLOTS] = {0};
#pragma omp parallel num_threads(SLOTS)
  {
    int t = omp_get_thread_num(), d = t % devices, k = (t + round) % OPERATIONS;
    int *buffer = malloc(BUFFER * sizeof *buffer);
    for (int i = 0; i < BUFFER; i++)
      buffer[i] = i + t;
#pragma omp target enter data nowait device(d) map(to : buffer[0 : BUFFER]) depend(out : buffer[0])
#pragma omp target nowait device(d) map(to : operations[0 : OPERATIONS]) depend(inout : buffer[0])
    for (int i = 0; i < BUFFER; i++)
      buffer[i] = operations[k](buffer[i]);
#pragma omp target exit data nowait device(d) map(from : buffer[0 : BUFFER]) depend(in : buffer[0])
#pragma omp taskwait
    for (int i = 0; i < BUFFER; i++)
      if (buffer[i] != expected(k, i + t))
        wrong[t]++;
    free(buffer);
  }
  for (int t = 0; t < SLOTS; t++)
    EXPECT(wrong[t] == 0, "round %d: %d elements of thread %d's buffer wrong", round, wrong[t], t);
}

static void device_memory(int devices, int round) {
  int wrong[SLOTS] = {0}, failed[SLOTS] = {0};
#pragma omp parallel num_threads(SLOTS)
  {
    int t = omp_get_thread_num(), d = (t + 1) % devices, k = (t + round + 1) % OPERATIONS;
    int host = omp_get_initial_device();
    int buffer[BUFFER];
    for (int i = 0; i < BUFFER; i++)
      buffer[i] = 2 * i + t;
    int *on_device = omp_target_alloc(sizeof buffer, d);
    if (!on_device || omp_target_memcpy(on_device, buffer, sizeof buffer, 0, 0, d, host) != 0) {
      failed[t] = 1;
    } else {
#pragma omp target device(d) is_device_ptr(on_device) map(to : operations[0 : OPERATIONS])
      for (int i = 0; i < BUFFER; i++)
        on_device[i] = operations[k](on_device[i]);
      if (omp_target_memcpy(buffer, on_device, sizeof buffer, 0, 0, host, d) != 0)
        failed[t] = 1;
      for (int i = 0; i < BUFFER; i++)
        if (buffer[i] != expected(k, 2 * i + t))
          wrong[t]++;
    }
    omp_target_free(on_device, d);
  }
  for (int t = 0; t < SLOTS; t++) {
    EXPECT(!failed[t], "round %d: thread %d's omp_target_alloc or omp_target_memcpy failed", round, t);
    EXPECT(wrong[t] == 0, "round %d: %d elements of thread %d's device buffer wrong", round, wrong[t], t);
  }
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 1;
  int devices = omp_get_num_devices();
  EXPECT(devices >= 1, "no device");
  if (devices < 1)
    return finish("concurrency");
  first_launches(devices);
  for (int round = 0; round < rounds; round++) {
    many_launches(devices, round);
    task_chains(devices, round);
    unstructured_nowait(devices, round);
    device_memory(devices, round);
  }
  return finish("concurrency");
}
