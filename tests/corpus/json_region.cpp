// nlohmann::json inside a region (its exception classes are polymorphic), used by host code only;
// device code does arithmetic on what the host parsed.
#include <cstdio>
#pragma omp begin declare target
#include <nlohmann/json.hpp>
#pragma omp end declare target

int main() {
  nlohmann::json doc = nlohmann::json::parse(R"({"scale": 3, "values": [1, 2, 3]})");
  int scale = doc["scale"].get<int>();
  int values[3];
  for (int i = 0; i < 3; ++i)
    values[i] = doc["values"][i].get<int>();
  int sum = 0;
#pragma omp target map(to : values, scale) map(tofrom : sum)
  for (int i = 0; i < 3; ++i)
    sum += scale * values[i];
  std::printf("json_region: %d, %s\n", sum, doc["values"].dump().c_str());
  return 0;
}
