// The classes of the virtual-call benchmark, and its loop, compiled twice (virtual_loops.cpp).
#ifndef VIRTUAL_OPS_H
#define VIRTUAL_OPS_H

#pragma omp begin declare target indirect
struct Op {
  long k = 0;
  virtual long apply(long x) const;
};
struct AddOp : Op {
  long apply(long x) const override;
};
struct XorOp : Op {
  long apply(long x) const override;
};
#pragma omp end declare target

#pragma omp begin declare target
// Calls objects[i % count]->apply(i) for i < calls and sums the results.
long virtual_loop_plain(const Op *const *objects, long count, long calls);
long virtual_loop_translated(const Op *const *objects, long count, long calls);
#pragma omp end declare target

#endif
