// A small polymorphic scene, as renderers write it: shapes and materials with virtual functions,
// multiple inheritance (a lamp is a sphere and an emitter), virtual destructors, a texture
// function pointer in each material. Only host code constructs these objects (placement new into
// a byte arena, or unique_ptrs under unified shared memory); device code calls them through base
// pointers and never names a derived class. The frontend plugin makes the device module define
// their vtables; the pass plugin and the table pair them with the host's.
//
// Integer arithmetic only: the device's image must equal the host's bit for bit.
#ifndef HOST_SCENE_H
#define HOST_SCENE_H

#include <omp.h>
#include <stdio.h>

#include "check.h"

enum { WIDTH = 48, HEIGHT = 24, PIXELS = WIDTH * HEIGHT };

// Every virtual call counts in `virtual_calls`, and a host copy's (one that finds itself on the
// initial device: an untranslated host pointer) also in `host_copy_calls`.
#pragma omp begin declare target
inline int virtual_calls;
inline int host_copy_calls;
static inline void note_device_copy() {
  int on_host = omp_is_initial_device();
#pragma omp atomic
  virtual_calls++;
  if (on_host) {
#pragma omp atomic
    host_copy_calls++;
  }
}
#pragma omp end declare target

// After the host rendered (`host_calls` virtual calls, all host copies) and the device rendered
// the same scene: the device made the same calls, each of them a device copy.
static inline void expect_device_copies(int host_calls) {
  EXPECT(host_copy_calls == host_calls, "%d virtual calls on the device ran the host's copy",
         host_copy_calls - host_calls);
#ifdef SCENE_USM
  // Under unified shared memory the device's declare target variables are the host's.
  int device_calls = virtual_calls - host_calls;
#else
#pragma omp target update from(virtual_calls)
  int device_calls = virtual_calls;
#endif
  EXPECT(device_calls == host_calls, "the device copies ran %d virtual calls, the host's render %d", device_calls,
         host_calls);
}

// The device's render `image` against the host's `expected`, then the calls (see above); on a
// failure the picture, small, shows what went wrong.
static inline void expect_render(const int *image, const int *expected, int host_calls) {
  int differ = 0, lit = 0;
  for (int p = 0; p < PIXELS; p++) {
    differ += image[p] != expected[p];
    lit += image[p] != 0;
  }
  EXPECT(differ == 0, "%d of %d pixels differ from the host's render", differ, PIXELS);
  EXPECT(lit > PIXELS / 4, "only %d pixels lit: the scene did not render", lit);
  expect_device_copies(host_calls);
  if (check_failures)
    for (int y = 0; y < HEIGHT; y += 2, printf("\n"))
      for (int x = 0; x < WIDTH; x++)
        putchar(" .:-=+*#%@"[image[y * WIDTH + x] * 9 / 400 % 10]);
}

// Not declare target, and describe() reaches host-only code (stdio's stderr): the device does
// not compile it, its slot holds a stub that traps naming it. Device code only calls it when the
// program is asked to (`call-host-only`).
struct Describable {
  virtual ~Describable() {}
  virtual void describe() const { fputs("a describable object\n", stderr); }
};

#pragma omp begin declare target indirect
// Textures: functions the host stores in materials, called on the device through the pointer.
int checker(int u, int v);
int stripes(int u, int v);
#pragma omp end declare target

#pragma omp begin declare target
struct Ray {
  int x, y;
};
struct Hit {
  int depth, u, v;
};

typedef int (*Texture)(int u, int v);

struct Material : Describable {
  Texture texture;
  explicit Material(Texture t) : texture(t) {}
  virtual ~Material() {}
  virtual int albedo(const Hit &h) const = 0;
  virtual int scatter(int light) const { return light / 2; }
};

struct Matte : Material {
  int shade;
  Matte(Texture t, int s) : Material(t), shade(s) {}
  int albedo(const Hit &h) const override {
    note_device_copy();
    return texture(h.u, h.v) * shade / 16;
  }
};

struct Metal : Material {
  int fuzz;
  Metal(Texture t, int f) : Material(t), fuzz(f) {}
  int albedo(const Hit &h) const override {
    note_device_copy();
    return 200 - texture(h.u, h.v) / (fuzz + 1);
  }
  int scatter(int light) const override {
    note_device_copy();
    return light - fuzz;
  }
};

struct Emitter {
  int power;
  explicit Emitter(int p) : power(p) {}
  virtual ~Emitter() {}
  virtual int emitted(const Hit &h) const = 0;
};

// Objects refer to their material by its offset in the arena (or a pointer under USM).
struct Hittable {
  long material;
  explicit Hittable(long m) : material(m) {}
  virtual ~Hittable() {}
  virtual bool hit(const Ray &r, Hit &h) const = 0;
  virtual const Emitter *emitter() const { return nullptr; }
};

struct Sphere : Hittable {
  int cx, cy, r;
  Sphere(long m, int x, int y, int radius) : Hittable(m), cx(x), cy(y), r(radius) {}
  // The key function: defined in host_scene_factory.cpp, where the vtable is emitted.
  bool hit(const Ray &ray, Hit &h) const override;
};

struct Plane : Hittable {
  int level;
  Plane(long m, int y) : Hittable(m), level(y) {}
  bool hit(const Ray &ray, Hit &h) const override {
    note_device_copy();
    if (ray.y < level)
      return false;
    h.depth = 1000 - ray.y;
    h.u = ray.x;
    h.v = ray.y - level;
    return true;
  }
};

// Two dynamic bases: emitter() returns the second base (this adjusted), whose vtable is the
// lamp's secondary one.
struct Lamp : Sphere, Emitter {
  Lamp(long m, int x, int y, int radius, int p) : Sphere(m, x, y, radius), Emitter(p) {}
  const Emitter *emitter() const override {
    note_device_copy();
    return this;
  }
  int emitted(const Hit &h) const override {
    note_device_copy();
    return power - h.u - h.v;
  }
};

// Shades one pixel: the nearest hit's material and light, plus what an emitter gives.
// `material_at` turns an object's material reference into a pointer.
template <class MaterialAt>
int shade(const Hittable *const *objects, int count, int x, int y, MaterialAt material_at) {
  Ray ray{x, y};
  Hit best{-1, 0, 0};
  const Hittable *nearest = nullptr;
  for (int i = 0; i < count; i++) {
    Hit h{};
    if (objects[i]->hit(ray, h) && h.depth > best.depth) {
      best = h;
      nearest = objects[i];
    }
  }
  if (!nearest)
    return 0;
  const Material *m = material_at(nearest->material);
  int color = m->scatter(m->albedo(best));
  if (const Emitter *e = nearest->emitter())
    color += e->emitted(best);
  return color;
}
#pragma omp end declare target

// host_scene_factory.cpp: builds the scene's objects (placement new) in `arena`, returns the
// objects' offsets in `offsets` and their count.
int build_scene(char *arena, long size, long *offsets);

#ifdef SCENE_USM
#include <memory>
#include <vector>
// Under unified shared memory: objects and materials owned by unique_ptrs, materials referred
// to by address.
struct Scene {
  std::vector<std::unique_ptr<Material>> materials;
  std::vector<std::unique_ptr<Hittable>> objects;
};
Scene make_scene();
#endif

#endif
