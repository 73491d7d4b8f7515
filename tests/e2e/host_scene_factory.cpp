// The factory, in a translation unit of its own: the scene's objects are constructed here, on the
// host, and nowhere else. It also defines Sphere's key function, so Sphere's vtable is emitted
// only in this unit (host and device). With -DSCENE_USM (host_scene_usm.cpp's build) it also
// makes the scene as standard containers of unique_ptrs.
#ifdef SCENE_USM
#pragma omp requires unified_shared_memory
#endif

#include <new>

#include "host_scene.h"

#if defined(__AMDGPU__)
// The pure virtual bases' vtables name __cxa_pure_virtual, which no AMDGPU device library here
// defines (the C++ runtime calls it for a pure virtual call, which this program never makes).
#pragma omp begin declare target
extern "C" void __cxa_pure_virtual() { __builtin_trap(); }
#pragma omp end declare target
#endif

#pragma omp begin declare target
bool Sphere::hit(const Ray &ray, Hit &h) const {
  note_device_copy();
  int dx = ray.x - cx, dy = 2 * (ray.y - cy);
  int d2 = dx * dx + dy * dy;
  if (d2 > r * r)
    return false;
  h.depth = 2000 + r * r - d2;
  h.u = dx + r;
  h.v = dy + r;
  return true;
}

int checker(int u, int v) { return ((u / 4 + v / 4) % 2) ? 160 : 60; }
int stripes(int u, int v) { return (v % 6) < 3 ? 90 : 30 + u % 8; }
#pragma omp end declare target

namespace {
// Placement new at the next aligned offset of the arena.
template <class T, class... Args> long place(char *arena, long &used, Args... args) {
  long at = (used + 15) & ~15L;
  new (arena + at) T(args...);
  used = at + (long)sizeof(T);
  return at;
}
} // namespace

int build_scene(char *arena, long size, long *offsets) {
  long used = 0;
  long matte = place<Matte>(arena, used, checker, 9);
  long metal = place<Metal>(arena, used, stripes, 3);
  long glow = place<Matte>(arena, used, stripes, 14);
  int n = 0;
  offsets[n++] = place<Plane>(arena, used, matte, 17);
  offsets[n++] = place<Sphere>(arena, used, metal, 14, 9, 7);
  offsets[n++] = place<Sphere>(arena, used, matte, 30, 11, 6);
  offsets[n++] = place<Lamp>(arena, used, glow, 38, 5, 4, 120);
  return used <= size ? n : -1;
}

#ifdef SCENE_USM
// The same scene, each object and material its own heap allocation.
Scene make_scene() {
  Scene scene;
  auto material = [&](Material *m) {
    scene.materials.emplace_back(m);
    return (long)m;
  };
  long matte = material(new Matte(checker, 9));
  long metal = material(new Metal(stripes, 3));
  long glow = material(new Matte(stripes, 14));
  scene.objects.emplace_back(new Plane(matte, 17));
  scene.objects.emplace_back(new Sphere(metal, 14, 9, 7));
  scene.objects.emplace_back(new Sphere(matte, 30, 11, 6));
  scene.objects.emplace_back(new Lamp(glow, 38, 5, 4, 120));
  return scene;
}
#endif
