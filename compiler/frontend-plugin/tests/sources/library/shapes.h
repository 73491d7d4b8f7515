// A library's header (a system header, as `-isystem` would make it): its classes go to the
// device only where the including file's own code constructs them.
#pragma GCC system_header
struct LibraryUnused {
  virtual int unused() const { return 1; }
};
struct LibraryBuilt {
  virtual int built() const { return 2; }
};
