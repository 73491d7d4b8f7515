/* A plain C file, compiled without OpenMP: nothing here has a device copy. */
#include "host_calls.h"

static double quadruple(double x) { return 4 * x; }

scale_fn plain_scale(void) { return quadruple; }
