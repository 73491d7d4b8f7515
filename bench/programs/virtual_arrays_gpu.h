// The GPU array benchmark (virtual_arrays_gpu.cpp): its kernels, one per translation unit of
// virtual_sweeps_gpu.cpp, each summing objects[i % count]->apply(i) over i < calls in one
// `target teams distribute parallel for` over device pointers.
#ifndef VIRTUAL_ARRAYS_GPU_H
#define VIRTUAL_ARRAYS_GPU_H

#include "virtual_classes.h"

// Compiled without the pass plugin: device-built objects need no translation.
long gpu_sweep_plain(const Op *const *objects, long count, long calls);
// Compiled with the pass plugin: each call translates the object's vtable pointer (the loop cache).
long gpu_sweep_translated(const Op *const *objects, long count, long calls);
// Compiled with the pass plugin and its loop cache off (OMPTARGET_INDIRECT_LOOP_CACHE=0).
long gpu_sweep_uncached(const Op *const *objects, long count, long calls);
// Compiled without the pass plugin: each call translates the vtable pointer with the lookup LLVM
// ships (__llvm_omp_indirect_call_lookup, a binary search of the same table) and calls slot 0.
long gpu_sweep_llvm(const Op *const *objects, long count, long calls);

#endif
