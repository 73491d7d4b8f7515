// A large C++ unit with no OpenMP in its classes, for the frontend plugin's policy benchmark
// (`cargo xtask bench`, bench/src/frontend.rs): a hierarchy of 50 dynamic classes
// (chains, a second base, class templates), whose virtual functions use the C++ library
// (<string>, <vector>, <map>, <functional>, <memory>) and, for some, <iostream> (host-only: the
// device gets a trapping stub). One target region makes virtual calls through base pointers.
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

struct Node {
  virtual ~Node() {}
  virtual double eval(double x) const = 0;
  virtual std::string name() const { return "node"; }
  virtual void print(std::ostream &out) const { out << name(); }
  virtual int weight() const { return 1; }
};

struct Tagged {
  virtual ~Tagged() {}
  virtual int tag() const = 0;
  std::map<std::string, int> tags;
};

template <class T> struct Leaf : Node {
  explicit Leaf(T v) : value(v) {}
  double eval(double x) const override { return double(value) * x; }
  std::string name() const override { return "leaf"; }
  T value;
};

#define NODE(N, BASE)                                                                              \
  struct Node##N : BASE {                                                                          \
    std::vector<double> samples{1.0 * N, 2.0 * N};                                                 \
    std::function<double(double)> shape = [](double x) { return x + N; };                          \
    double eval(double x) const override {                                                         \
      double sum = 0;                                                                              \
      for (double s : samples)                                                                     \
        sum += s * x;                                                                              \
      return sum + shape(x);                                                                       \
    }                                                                                              \
    std::string name() const override { return "node" + std::to_string(N); }                       \
    int weight() const override { return N + BASE::weight(); }                                     \
  };

#define TAGGED(N, BASE)                                                                            \
  struct Node##N : BASE, Tagged {                                                                  \
    double eval(double x) const override { return BASE::eval(x) * 2; }                             \
    int tag() const override { return N; }                                                         \
    void print(std::ostream &out) const override { out << "tagged " << N; }                        \
  };

NODE(1, Node) NODE(2, Node1) NODE(3, Node2) NODE(4, Node3) NODE(5, Node4)
TAGGED(6, Node5) NODE(7, Node) NODE(8, Node7) NODE(9, Node8) NODE(10, Node9)
NODE(11, Node10) TAGGED(12, Node11) NODE(13, Node) NODE(14, Node13) NODE(15, Node14)
NODE(16, Node15) NODE(17, Node16) TAGGED(18, Node17) NODE(19, Node) NODE(20, Node19)
NODE(21, Node20) NODE(22, Node21) NODE(23, Node22) TAGGED(24, Node23) NODE(25, Node)
NODE(26, Node25) NODE(27, Node26) NODE(28, Node27) NODE(29, Node28) TAGGED(30, Node29)
NODE(31, Node) NODE(32, Node31) NODE(33, Node32) NODE(34, Node33) NODE(35, Node34)
TAGGED(36, Node35) NODE(37, Node) NODE(38, Node37) NODE(39, Node38) NODE(40, Node39)
NODE(41, Node40) TAGGED(42, Node41) NODE(43, Node) NODE(44, Node43) NODE(45, Node44)
NODE(46, Node45) NODE(47, Node46)

// 47 classes above, Node, Tagged, and two Leaf specializations: 51.
std::vector<std::unique_ptr<Node>> build() {
  std::vector<std::unique_ptr<Node>> nodes;
  nodes.push_back(std::make_unique<Node47>());
  nodes.push_back(std::make_unique<Node42>());
  nodes.push_back(std::make_unique<Leaf<int>>(3));
  nodes.push_back(std::make_unique<Leaf<double>>(0.5));
  return nodes;
}

double evaluate(const unsigned char *arena, const long *offsets, int count) {
  double sum = 0;
#pragma omp target map(to : arena[0 : 4096], offsets[0 : count]) map(tofrom : sum)
  for (int i = 0; i < count; i++)
    sum += reinterpret_cast<const Node *>(arena + offsets[i])->eval(1.0);
  return sum;
}
