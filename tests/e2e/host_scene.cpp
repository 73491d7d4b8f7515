// A scene built on the host only (tests/e2e/host_scene.h), placement-new'ed by a factory in
// another translation unit into one byte arena, which is mapped as a whole. Device code forms
// base pointers into the mapped arena and renders; the image must equal the host's render of the
// same objects, and no virtual call may run a host copy.
//
// `call-host-only` (argument): device code also calls a virtual function the device does not
// compile (Describable::describe): its stub must stop the program naming it.
#include <string.h>

#include "host_scene.h"

enum { ARENA = 4096, MAX_OBJECTS = 8 };

int main(int argc, char **argv) {
  int call_host_only = argc > 1 && strcmp(argv[1], "call-host-only") == 0;
  alignas(16) static char arena[ARENA];
  long offsets[MAX_OBJECTS];
  int count = build_scene(arena, ARENA, offsets);
  EXPECT(count > 0, "the scene does not fit the arena");
  if (count <= 0)
    return finish("host_scene");

  auto host_material = [&](long at) { return reinterpret_cast<const Material *>(arena + at); };
  static int expected[PIXELS];
  const Hittable *host_objects[MAX_OBJECTS];
  for (int i = 0; i < count; i++)
    host_objects[i] = reinterpret_cast<const Hittable *>(arena + offsets[i]);
  for (int p = 0; p < PIXELS; p++)
    expected[p] = shade(host_objects, count, p % WIDTH, p / WIDTH, host_material);
  int host_calls = virtual_calls;

  static int image[PIXELS];
#pragma omp target teams distribute parallel for map(to : arena, offsets) map(from : image)
  for (int p = 0; p < PIXELS; p++) {
    const Hittable *objects[MAX_OBJECTS];
    for (int i = 0; i < count; i++)
      objects[i] = reinterpret_cast<const Hittable *>(arena + offsets[i]);
    image[p] = shade(objects, count, p % WIDTH, p / WIDTH,
                     [&](long at) { return reinterpret_cast<const Material *>(arena + at); });
  }
  if (call_host_only) {
#pragma omp target map(to : arena)
    reinterpret_cast<const Material *>(arena)->describe();
  }

  expect_render(image, expected, host_calls);
  return finish("host_scene");
}
