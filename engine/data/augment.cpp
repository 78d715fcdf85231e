// Image augmentation on normalised batches (data.h). The draw is integer
// arithmetic only (splitmix64), which cuda/data.cu repeats on the device,
// so a step's batch is augmented the same way on either.
#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>

#include <algorithm>
#include <vector>

namespace dc {

AugmentDraw augment_draw(const AugmentConfig& a, uint64_t seed, int64_t i) {
  uint64_t z = (seed ^ 0xA0761D6478BD642Full) + 0x9E3779B97F4A7C15ull * (uint64_t(i) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const uint64_t span = uint64_t(2 * a.crop_padding + 1);
  AugmentDraw d;
  d.flip = a.flip && (z >> 63) != 0;
  d.dy = int(((z >> 32) & 0x7FFFFFFFull) % span);
  d.dx = int((z & 0xFFFFFFFFull) % span);
  return d;
}

void augment_batch(const AugmentConfig& a, const Shape& sample, float pad_value, uint64_t seed,
                   float* x, int64_t n) {
  if (!a.enabled()) return;
  if (sample.rank() != 3)
    throw DataError("augmentation needs images (channels×height×width) but the samples are " +
                    sample.str());
  const int64_t C = sample[0], H = sample[1], W = sample[2], p = a.crop_padding;
  std::vector<float> src(size_t(C * H * W));
  for (int64_t i = 0; i < n; ++i) {
    float* s = x + i * C * H * W;
    std::copy(s, s + C * H * W, src.begin());
    const AugmentDraw d = augment_draw(a, seed, i);
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t xo = 0; xo < W; ++xo) {
          // Output column xo comes from column W-1-xo of the crop when flipped.
          const int64_t xc = d.flip ? W - 1 - xo : xo;
          const int64_t sy = y + d.dy - p, sx = xc + d.dx - p;
          s[(c * H + y) * W + xo] = sy >= 0 && sy < H && sx >= 0 && sx < W
                                        ? src[size_t((c * H + sy) * W + sx)]
                                        : pad_value;
        }
  }
}

}  // namespace dc
