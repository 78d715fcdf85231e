// A seeded photo-like image folder written with libjpeg alone, for machines
// without Python's imaging packages (the lent GPU machine, where
// installer/gpu/run-on-gpu.sh measures the photo-folder path on the GPU).
// The recipe of bench/make_image_folder.py: OUT/<class>/<n>.jpg, COUNT
// JPEGs (quality 90) of 256-500 px per side in 10 classes, each a
// horizontal colour gradient with Gaussian noise (sd 12) and the class's
// shape at a random place, size and colour. The draws are this program's
// own (dc::Rng seeded with seed and n), so the bytes differ from the Python
// script's; what a JPEG of that size and content costs to decode does not.
//
//   make_jpeg_folder OUT [--count 20000] [--seed 1] [--jobs N]
#include <deepcanvas/rng.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <jpeglib.h>

namespace {

const char* const kShapes[] = {"disc",  "square", "triangle", "ring", "hbars",
                               "vbars", "cross",  "diamond",  "dots", "frame"};

// Whether (dx, dy) from the shape's centre is inside the shape of radius r.
bool inside(int kind, int dx, int dy, int r, const std::vector<std::pair<int, int>>& dots) {
  const int ax = std::abs(dx), ay = std::abs(dy);
  switch (kind) {
    case 0:
      return dx * dx + dy * dy <= r * r;
    case 1:
      return ax <= r && ay <= r;
    case 2:
      return dy >= -r && dy <= r && 2 * ax <= dy + r;
    case 3: {
      const int t = std::max(3, r / 4), d2 = dx * dx + dy * dy;
      return d2 <= r * r && d2 >= (r - t) * (r - t);
    }
    case 4:
    case 5: {
      const int along = kind == 4 ? ax : ay, across = kind == 4 ? dy : dx;
      if (along > r) return false;
      for (int k = -2; k <= 2; ++k)
        if (std::abs(across - int(k * r / 2.5)) <= r / 10) return true;
      return false;
    }
    case 6:
      return (ay <= r / 5 && ax <= r) || (ax <= r / 5 && ay <= r);
    case 7:
      return ax + ay <= r;
    case 8:
      for (const auto& [x, y] : dots) {
        const int ex = dx - x, ey = dy - y, q = r / 6;
        if (ex * ex + ey * ey <= q * q) return true;
      }
      return false;
    default: {
      const int t = std::max(3, r / 5);
      return ax <= r && ay <= r && !(ax <= r - t && ay <= r - t);
    }
  }
}

bool write_one(const std::string& out, uint64_t seed, int64_t n) {
  dc::Rng rng(dc::splitmix64_at(seed, uint64_t(n)));
  const int kind = int(n % 10);
  const int w = 256 + int(rng.below(245)), h = 256 + int(rng.below(245));
  float c0[3], c1[3], colour[3];
  for (float* c : {c0, c1, colour})
    for (int k = 0; k < 3; ++k) c[k] = float(rng.below(256));
  const int r =
      std::min(w, h) / 8 + int(rng.below(uint64_t(std::min(w, h) / 3 - std::min(w, h) / 8)));
  const int cx = r + int(rng.below(uint64_t(w - 2 * r))),
            cy = r + int(rng.below(uint64_t(h - 2 * r)));
  std::vector<std::pair<int, int>> dots;
  for (int i = 0; i < 7; ++i)
    dots.emplace_back(int(rng.below(uint64_t(2 * r + 1))) - r,
                      int(rng.below(uint64_t(2 * r + 1))) - r);
  std::vector<uint8_t> px(size_t(w) * size_t(h) * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const bool shape = inside(kind, x - cx, y - cy, r, dots);
      const float t = float(x) / float(w - 1);
      for (int k = 0; k < 3; ++k) {
        const float v = shape ? colour[k] : c0[k] * (1 - t) + c1[k] * t + 12.0f * rng.normal();
        px[(size_t(y) * size_t(w) + size_t(x)) * 3 + size_t(k)] =
            uint8_t(std::clamp(std::lround(v), 0L, 255L));
      }
    }
  char name[32];
  std::snprintf(name, sizeof name, "%06lld.jpg", static_cast<long long>(n));
  const std::string path = out + "/" + kShapes[kind] + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);  // exits on an encoder error: a bench tool
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, f);
  c.image_width = JDIMENSION(w);
  c.image_height = JDIMENSION(h);
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 90, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = &px[size_t(c.next_scanline) * size_t(w) * 3];
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  return std::fclose(f) == 0;
}

int usage() {
  std::fprintf(stderr, "usage: make_jpeg_folder OUT [--count N] [--seed S] [--jobs J]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  int64_t count = 20000;
  uint64_t seed = 1;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--count" && i + 1 < argc)
      count = std::atoll(argv[++i]);
    else if (a == "--seed" && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--jobs" && i + 1 < argc)
      jobs = unsigned(std::max(1, std::atoi(argv[++i])));
    else if (out.empty() && a[0] != '-')
      out = a;
    else
      return usage();
  }
  if (out.empty() || count < 1) return usage();
  for (const char* k : kShapes) std::filesystem::create_directories(out + "/" + k);
  std::atomic<int64_t> next{0};
  std::atomic<bool> ok{true};
  std::vector<std::thread> pool;
  for (unsigned j = 0; j < jobs; ++j)
    pool.emplace_back([&] {
      for (int64_t n; (n = next++) < count;)
        if (!write_one(out, seed, n)) ok = false;
    });
  for (auto& t : pool) t.join();
  if (!ok) {
    std::fprintf(stderr, "make_jpeg_folder: cannot write into %s\n", out.c_str());
    return 1;
  }
  std::printf("%lld JPEGs in %s\n", static_cast<long long>(count), out.c_str());
  return 0;
}
