#include "gui/augmentation.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace dc::gui {

void augment_sample(const uint8_t* src, uint8_t* dst, const Shape& s, const AugmentOptions& o,
                    Rng& rng) {
  const int c = s.rank() == 3 ? int(s[0]) : 1;
  const int h = int(s[s.rank() - 2]), w = int(s[s.rank() - 1]);
  // Draw every random number up front, in a fixed order, so a seed gives the
  // same copy whatever options are switched off later in the pipeline.
  const bool fx = o.hflip && rng.uniform() < 0.5f;
  const bool fy = o.vflip && rng.uniform() < 0.5f;
  const int dx = o.pad > 0 ? int(rng.below(uint64_t(2 * o.pad + 1))) - o.pad : 0;
  const int dy = o.pad > 0 ? int(rng.below(uint64_t(2 * o.pad + 1))) - o.pad : 0;
  const double ang = o.rotate_deg > 0 ? rng.uniform(-1.f, 1.f) * o.rotate_deg : 0.0;
  const double gain = o.brightness > 0 ? 1.0 + rng.uniform(-1.f, 1.f) * o.brightness : 1.0;
  const double rad = ang * std::numbers::pi / 180.0;
  const double ca = std::cos(rad), sa = std::sin(rad);
  const double cx = (w - 1) / 2.0, cy = (h - 1) / 2.0;
  // Inverse mapping: for each output pixel, where it comes from in the
  // source (bilinear); outside the source is black, like zero padding.
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      double ox = x - dx, oy = y - dy;
      double rx = ca * (ox - cx) + sa * (oy - cy) + cx;
      double ry = -sa * (ox - cx) + ca * (oy - cy) + cy;
      if (fx) rx = (w - 1) - rx;
      if (fy) ry = (h - 1) - ry;
      const int x0 = int(std::floor(rx)), y0 = int(std::floor(ry));
      const double ax = rx - x0, ay = ry - y0;
      for (int k = 0; k < c; ++k) {
        const uint8_t* p = src + size_t(k) * h * w;
        auto at = [&](int xx, int yy) -> double {
          return xx < 0 || yy < 0 || xx >= w || yy >= h ? 0.0 : p[size_t(yy) * w + xx];
        };
        double v = (1 - ay) * ((1 - ax) * at(x0, y0) + ax * at(x0 + 1, y0)) +
                   ay * ((1 - ax) * at(x0, y0 + 1) + ax * at(x0 + 1, y0 + 1));
        dst[size_t(k) * h * w + size_t(y) * w + x] =
            uint8_t(std::clamp(v * gain + 0.5, 0.0, 255.0));
      }
    }
}

Dataset augmented_dataset(const Dataset& d, const AugmentOptions& o, uint64_t seed) {
  if (!o.enabled() || d.pixels.empty() || d.sample_shape.rank() < 2) return d;
  Dataset out = d;
  const int64_t n = d.size(), per = d.sample_shape.numel();
  out.pixels.resize(size_t(n * per * (1 + o.copies)));
  out.labels.resize(size_t(n * (1 + o.copies)));
  Rng rng(seed ^ 0xA5A5A5A5ull);
  for (int k = 1; k <= o.copies; ++k)
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = k * n + i;
      augment_sample(d.pixels.data() + i * per, out.pixels.data() + j * per, d.sample_shape, o,
                     rng);
      out.labels[size_t(j)] = d.labels[size_t(i)];
    }
  return out;
}

}  // namespace dc::gui
