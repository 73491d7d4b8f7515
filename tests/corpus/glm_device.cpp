// glm inside a region, used by device code; a polymorphic class of the program's own beside it.
#include <cstdio>
#pragma omp begin declare target
#include <glm/glm.hpp>
struct Light {
  virtual ~Light() {}
  virtual float shade(const glm::vec3 &n) const = 0;
};
struct Sun : Light {
  glm::vec3 dir{0.f, 0.f, 1.f};
  float shade(const glm::vec3 &n) const override { return glm::max(glm::dot(n, dir), 0.f); }
};
#pragma omp end declare target

int main() {
  float out[4] = {0, 0, 0, 0};
#pragma omp target map(tofrom : out)
  {
    Sun sun;
    const Light &light = sun;
    glm::vec3 a(1.f, 2.f, 3.f), b(4.f, 5.f, 6.f);
    glm::vec3 c = glm::cross(a, b);
    out[0] = c.x, out[1] = c.y, out[2] = c.z;
    out[3] = light.shade(glm::normalize(glm::vec3(0.f, 0.f, 2.f)));
  }
  std::printf("glm_device: cross %g %g %g, shade %g\n", out[0], out[1], out[2], out[3]);
  return 0;
}
