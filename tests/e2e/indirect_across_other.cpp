// The other file of indirect_across: takes the host addresses of the header's indirect functions,
// and calls through one on the device.
#include "indirect_across.h"

Taken taken_by_other_file() { return {twice<int>, twice<long>, thrice}; }

#pragma omp declare target
long apply_in_other_file(long (*f)(long), long x) { return f(x); }
#pragma omp end declare target
