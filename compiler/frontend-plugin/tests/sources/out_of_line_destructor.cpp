// A virtual destructor defined out of its class: every variant the device vtable names (the
// complete and deleting destructors, the complete one an alias of the base one) must be emitted
// for the device, or the alias points to nothing (clang 19 crashes).
struct Base {
  virtual ~Base();
  virtual int value() const { return 1; }
};
Base::~Base() {}

int call(const Base *base) {
  int n = 0;
#pragma omp target map(to : base[0 : 1]) map(from : n)
  n = base->value();
  return n;
}
