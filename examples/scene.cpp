/* A C++ scene built on the host and rendered on an OpenMP device. Shapes and materials are
 * classes with virtual functions; only host code constructs them (placement new into an arena
 * that one map clause copies to the device), and device code calls them through base pointers.
 * With this project's configuration file nothing else is needed: the frontend plugin gives the
 * device its own copies of these classes' vtables, the pass plugin and the runtime pair them with
 * the host's, and every virtual call on the device runs a device copy.
 *
 * Build and run (clang 22 and its stock libomptarget; `cargo xtask demo` does this):
 *   clang++-22 --config=<prefix>/share/omptarget-indirect/clang-22.cfg -fopenmp \
 *     -fopenmp-targets=x86_64-pc-linux-gnu -O2 scene.cpp -o scene
 *   OMP_TARGET_OFFLOAD=MANDATORY ./scene scene.ppm [host.ppm]
 * It writes the device's render (and the host's, if asked), checks that the two are equal and
 * that the device ran its own copies, and prints how often each device copy was called.
 *
 * Without the configuration file the program builds, but device code reads the host's vtables:
 * a GPU faults there, and the strict device (LD_PRELOAD=libomptarget-indirect-strict.so) stops
 * it with one line naming the vtable. */
#include <new>
#include <omp.h>
#include <stdio.h>

enum { WIDTH = 192, HEIGHT = 108 };

#pragma omp begin declare target
struct Vec {
  float x, y, z;
};
inline Vec operator+(Vec a, Vec b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
inline Vec operator-(Vec a, Vec b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
inline Vec operator*(Vec a, float s) { return {a.x * s, a.y * s, a.z * s}; }
inline float dot(Vec a, Vec b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
inline Vec normalize(Vec a) { return a * (1.0f / __builtin_sqrtf(dot(a, a))); }

/* How often each copy of a virtual function ran, counted by the copy that ran: the device's
 * copies count in the device's `calls`, the host's in the host's. */
enum Counted { SPHERE_HIT, PLANE_HIT, MATTE_SHADE, CHECKER_SHADE, GLOW_SHADE, COUNTED };
unsigned long calls[COUNTED];
inline void count(Counted what) {
#pragma omp atomic
  calls[what]++;
}

struct Hit {
  float t;
  Vec point, normal;
  long material; /* the offset of the shape's material in the arena */
};

struct Material {
  virtual ~Material() {}
  /* The colour of `hit` under `light` (0 in shadow to 1 facing the light). */
  virtual Vec shade(const Hit &hit, float light) const = 0;
};

struct Matte : Material {
  Vec color;
  explicit Matte(Vec color) : color(color) {}
  Vec shade(const Hit &, float light) const override {
    count(MATTE_SHADE);
    return color * (0.15f + 0.85f * light);
  }
};

struct Checker : Material {
  Vec dark, light_color;
  float size;
  Checker(Vec dark, Vec light_color, float size) : dark(dark), light_color(light_color), size(size) {}
  Vec shade(const Hit &hit, float light) const override {
    count(CHECKER_SHADE);
    int u = (int)(hit.point.x / size + 1000.0f), v = (int)(hit.point.z / size + 1000.0f);
    return ((u + v) % 2 ? light_color : dark) * (0.2f + 0.8f * light);
  }
};

struct Glow : Material {
  Vec color;
  explicit Glow(Vec color) : color(color) {}
  Vec shade(const Hit &, float) const override {
    count(GLOW_SHADE);
    return color;
  }
};

struct Shape {
  long material;
  explicit Shape(long material) : material(material) {}
  virtual ~Shape() {}
  /* The nearest hit of the ray from `origin` along `dir` (unit length) closer than `hit.t`. */
  virtual bool hit(Vec origin, Vec dir, Hit &hit) const = 0;
};

struct Sphere : Shape {
  Vec center;
  float radius;
  Sphere(Vec center, float radius, long material) : Shape(material), center(center), radius(radius) {}
  bool hit(Vec origin, Vec dir, Hit &hit) const override {
    count(SPHERE_HIT);
    Vec to = origin - center;
    float b = dot(to, dir), c = dot(to, to) - radius * radius, d = b * b - c;
    if (d < 0)
      return false;
    float t = -b - __builtin_sqrtf(d);
    if (t < 1e-3f || t >= hit.t)
      return false;
    hit.t = t;
    hit.point = origin + dir * t;
    hit.normal = (hit.point - center) * (1.0f / radius);
    hit.material = material;
    return true;
  }
};

struct Plane : Shape {
  float height;
  Plane(float height, long material) : Shape(material), height(height) {}
  bool hit(Vec origin, Vec dir, Hit &hit) const override {
    count(PLANE_HIT);
    if (dir.y > -1e-4f && dir.y < 1e-4f)
      return false;
    float t = (height - origin.y) / dir.y;
    if (t < 1e-3f || t >= hit.t)
      return false;
    hit.t = t;
    hit.point = origin + dir * t;
    hit.normal = {0, 1, 0};
    hit.material = material;
    return true;
  }
};

/* The scene: its objects in one arena, which is copied to the device as it is. Objects refer to
 * each other by offsets in the arena, so that the device's copy is whole without a pointer fixed. */
struct Scene {
  enum { BYTES = 2048, MAX_SHAPES = 8 };
  alignas(16) unsigned char arena[BYTES];
  long used = 0;
  long shapes[MAX_SHAPES];
  int count = 0;

  const Shape *shape(int i) const { return reinterpret_cast<const Shape *>(arena + shapes[i]); }
  const Material *material(long at) const { return reinterpret_cast<const Material *>(arena + at); }

  /* The colour of pixel (px, py): the nearest shape's material, lit by one light, with shadows. */
  Vec trace(int px, int py) const {
    Vec eye = {0, 1.2f, -4.5f};
    Vec dir = normalize({(px - WIDTH / 2) / (float)HEIGHT, (HEIGHT / 2 - py) / (float)HEIGHT, 1.1f});
    Hit hit = {1e30f, {0, 0, 0}, {0, 0, 0}, -1};
    for (int i = 0; i < count; i++)
      shape(i)->hit(eye, dir, hit);
    if (hit.material < 0)
      return Vec{0.55f, 0.7f, 0.95f} * (0.6f + 0.4f * dir.y);
    Vec to_light = normalize(Vec{-3, 5, -2} - hit.point);
    float light = dot(hit.normal, to_light);
    Hit shadow = {1e30f, {0, 0, 0}, {0, 0, 0}, -1};
    for (int i = 0; i < count && light > 0; i++)
      if (shape(i)->hit(hit.point, to_light, shadow))
        light = 0;
    return material(hit.material)->shade(hit, light > 0 ? light : 0);
  }
};

inline unsigned char channel(float v) { return (unsigned char)(v <= 0 ? 0 : v >= 1 ? 255 : v * 255.0f + 0.5f); }
#pragma omp end declare target

/* Host code only: places a T at the next 16-byte boundary of the arena; its offset, or -1. */
template <class T, class... Args> long make(Scene &scene, Args... args) {
  long at = (scene.used + 15) & ~15L;
  if (at + (long)sizeof(T) > Scene::BYTES)
    return -1;
  new (scene.arena + at) T(args...);
  scene.used = at + (long)sizeof(T);
  return at;
}

static bool build(Scene &scene) {
  long floor = make<Checker>(scene, Vec{0.15f, 0.15f, 0.2f}, Vec{0.9f, 0.9f, 0.85f}, 0.75f);
  long red = make<Matte>(scene, Vec{0.9f, 0.2f, 0.15f});
  long teal = make<Matte>(scene, Vec{0.1f, 0.6f, 0.6f});
  long lamp = make<Glow>(scene, Vec{1.0f, 0.85f, 0.4f});
  long shapes[] = {make<Plane>(scene, 0.0f, floor), make<Sphere>(scene, Vec{-1.1f, 1.0f, 1.5f}, 1.0f, red),
                   make<Sphere>(scene, Vec{1.2f, 0.7f, 0.8f}, 0.7f, teal),
                   make<Sphere>(scene, Vec{0.3f, 0.35f, -0.4f}, 0.35f, lamp)};
  for (long at : shapes) {
    if (at < 0 || floor < 0 || red < 0 || teal < 0 || lamp < 0)
      return false;
    scene.shapes[scene.count++] = at;
  }
  return true;
}

static int write_ppm(const char *path, const unsigned char *rgb) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return 0;
  fprintf(f, "P6\n%d %d\n255\n", WIDTH, HEIGHT);
  size_t written = fwrite(rgb, 1, WIDTH * HEIGHT * 3, f);
  return (fclose(f) == 0) & (written == WIDTH * HEIGHT * 3);
}

int main(int argc, char **argv) {
  static Scene scene;
  if (argc < 2 || !build(scene)) {
    fprintf(stderr, "usage: %s DEVICE.ppm [HOST.ppm] (and the scene must fit its arena)\n", argv[0]);
    return 2;
  }
  static unsigned char host[WIDTH * HEIGHT * 3], device[WIDTH * HEIGHT * 3];
  for (int p = 0; p < WIDTH * HEIGHT; p++) {
    Vec c = scene.trace(p % WIDTH, p / WIDTH);
    host[3 * p] = channel(c.x), host[3 * p + 1] = channel(c.y), host[3 * p + 2] = channel(c.z);
  }
  unsigned long host_calls[COUNTED];
  for (int i = 0; i < COUNTED; i++)
    host_calls[i] = calls[i];

#pragma omp target teams distribute parallel for map(to : scene) map(from : device)
  for (int p = 0; p < WIDTH * HEIGHT; p++) {
    Vec c = scene.trace(p % WIDTH, p / WIDTH);
    device[3 * p] = channel(c.x), device[3 * p + 1] = channel(c.y), device[3 * p + 2] = channel(c.z);
  }
#pragma omp target update from(calls)

  int differ = 0;
  for (int i = 0; i < WIDTH * HEIGHT * 3; i++)
    differ += device[i] != host[i];
  if (!write_ppm(argv[1], device) || (argc > 2 && !write_ppm(argv[2], host))) {
    fprintf(stderr, "cannot write %s\n", argc > 2 ? "the pictures" : argv[1]);
    return 1;
  }
  const char *names[COUNTED] = {"Sphere::hit", "Plane::hit", "Matte::shade", "Checker::shade", "Glow::shade"};
  int copies_ok = 1;
  printf("device copies called:");
  for (int i = 0; i < COUNTED; i++) {
    printf(" %s %lu%s", names[i], calls[i], i + 1 < COUNTED ? "," : "\n");
    copies_ok &= calls[i] == host_calls[i] && calls[i] > 0;
  }
  if (differ || !copies_ok) {
    printf("FAILED: %d of %d colour values differ from the host's render; the device copies %s the host's calls\n",
           differ, WIDTH * HEIGHT * 3, copies_ok ? "made" : "did not make");
    return 1;
  }
  printf("rendered %dx%d on the device into %s: the same as the host's render\n", WIDTH, HEIGHT, argv[1]);
  return 0;
}
