// fmt (header-only) inside a region and spdlog beside it, used by host code; a class of the
// program's own with a virtual function in the region, used by device code. (spdlog cannot be in
// a region: stock clang refuses its thread_local state in device code.)
#define FMT_HEADER_ONLY
#define SPDLOG_HEADER_ONLY
#include <cstdio>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sstream>
#pragma omp begin declare target
#include <fmt/format.h>
struct Counter {
  virtual ~Counter() {}
  virtual int step(int x) const { return x + 1; }
};
#pragma omp end declare target

int main() {
  std::ostringstream text;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text);
  spdlog::logger log("corpus", sink);
  log.set_pattern("%v");
  int x = 0;
#pragma omp target map(tofrom : x)
  {
    Counter c;
    for (int i = 0; i < 5; ++i)
      x = c.step(x);
  }
  log.info("device counted to {}", x);
  std::printf("fmt_spdlog: %s", text.str().c_str());
  std::printf("fmt_spdlog: %s\n", fmt::format("{:>4}|", x).c_str());
  return 0;
}
