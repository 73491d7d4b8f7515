// The other file of indirect_across: takes the host addresses of the header's indirect functions.
#include "indirect_across.h"

Taken taken_by_other_file() { return {twice<int>, twice<long>, thrice}; }
