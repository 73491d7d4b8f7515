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

  int differ = 0, lit = 0;
  for (int p = 0; p < PIXELS; p++) {
    differ += image[p] != expected[p];
    lit += image[p] != 0;
  }
  EXPECT(differ == 0, "%d of %d pixels differ from the host's render", differ, PIXELS);
  EXPECT(lit > PIXELS / 4, "only %d pixels lit: the scene did not render", lit);
  expect_device_copies(host_calls);
  // Print the picture small, so a failure shows what went wrong.
  if (check_failures)
    for (int y = 0; y < HEIGHT; y += 2, printf("\n"))
      for (int x = 0; x < WIDTH; x++)
        putchar(" .:-=+*#%@"[image[y * WIDTH + x] * 9 / 400 % 10]);
  return finish("host_scene");
}
