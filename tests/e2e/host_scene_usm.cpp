// The scene of tests/e2e/host_scene.h under `requires unified_shared_memory`: built on the host as
// standard containers of unique_ptrs (host_scene_factory.cpp), nothing mapped. Device code walks
// the vector's plain pointers and renders; the image must equal the host's render and every
// virtual call must run a device copy.
#pragma omp requires unified_shared_memory

#define SCENE_USM
#include "host_scene.h"

int main() {
  Scene scene = make_scene();
  int count = (int)scene.objects.size();
  const Hittable *objects[8];
  for (int i = 0; i < count; i++)
    objects[i] = scene.objects[i].get();
  auto material_at = [](long at) { return reinterpret_cast<const Material *>(at); };
  static int expected[PIXELS];
  for (int p = 0; p < PIXELS; p++)
    expected[p] = shade(objects, count, p % WIDTH, p / WIDTH, material_at);
  int host_calls = virtual_calls;

  // The vector's storage itself, a host allocation, is read on the device through its pointer.
  const std::unique_ptr<Hittable> *owned = scene.objects.data();
  int *image = new int[PIXELS];
#pragma omp target teams distribute parallel for firstprivate(owned, count) is_device_ptr(image)
  for (int p = 0; p < PIXELS; p++) {
    const Hittable *on_device[8];
    for (int i = 0; i < count; i++)
      on_device[i] = owned[i].get();
    image[p] = shade(on_device, count, p % WIDTH, p / WIDTH,
                     [](long at) { return reinterpret_cast<const Material *>(at); });
  }

  expect_render(image, expected, host_calls);
  delete[] image;
  return finish("host_scene_usm");
}
