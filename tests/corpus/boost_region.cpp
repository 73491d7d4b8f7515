// Boost.Exception inside a region (error_info_container_impl and the exception classes are
// polymorphic), Boost's string algorithms beside it, both used by host code. (Boost.Math's
// constants cannot be in a region: stock clang refuses their thread_local caches in device code.)
#include <boost/algorithm/string/case_conv.hpp>
#include <cstdio>
#include <string>
#pragma omp begin declare target
#include <boost/exception/all.hpp>
#pragma omp end declare target

struct Failure : virtual boost::exception, virtual std::exception {};
typedef boost::error_info<struct tag_code, int> code_info;

int main() {
  int code = 0;
  try {
    throw Failure() << code_info(7);
  } catch (const Failure &e) {
    code = *boost::get_error_info<code_info>(e);
  }
  double area = 0;
#pragma omp target map(tofrom : area)
  area = 3.25 * 2.0 * 2.0;
  std::string name = boost::algorithm::to_upper_copy(std::string("boost_region"));
  std::printf("boost_region: code %d, area %.2f, %s\n", code, area, name.c_str());
  return 0;
}
