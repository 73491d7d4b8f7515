// Eigen's fixed-size types inside a region, used by device code (scalar code: Eigen's SSE and
// CUDA paths do not compile for an OpenMP GPU target, stock or not).
#include <cstdio>
#define EIGEN_NO_DEBUG
#define EIGEN_DONT_VECTORIZE
#define EIGEN_NO_CUDA
#pragma omp begin declare target
#include <eigen3/Eigen/Core>
#pragma omp end declare target

int main() {
  double out[3] = {0, 0, 0};
#pragma omp target map(tofrom : out)
  {
    Eigen::Matrix3d m;
    m << 1, 2, 3, 4, 5, 6, 7, 8, 10;
    Eigen::Vector3d v(1, 1, 1);
    Eigen::Vector3d r = m * v;
    out[0] = r(0), out[1] = r(1), out[2] = r(2);
  }
  std::printf("eigen_device: %g %g %g\n", out[0], out[1], out[2]);
  return 0;
}
