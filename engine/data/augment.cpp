// Image augmentation on normalised batches (data.h). The draw and the pixel
// arithmetic are augment_pixel.h's, which cuda/data.cu compiles as well, so
// a step's batch is augmented the same way on either device. This file is
// built with -ffp-contract=off (engine/CMakeLists.txt): a fused multiply-add
// here would round differently from the device's separate _rn operations.
#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/settings.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace dc {

std::string augment_problem(const AugmentConfig& a) {
  // The ranges are the settings table's (settings.cpp); every other setting
  // of a default configuration is valid, so a problem is the augmentation's.
  TrainConfig c;
  c.augment = a;
  const std::vector<std::string> problems = validate(c);
  return problems.empty() ? "" : problems.front();
}

aug::Params augment_params(const AugmentConfig& a, const Shape& sample, float black, float white) {
  if (sample.rank() != 3)
    throw DataError("augmentation needs images (channels×height×width) but the samples are " +
                    sample.str());
  if (std::string why = augment_problem(a); !why.empty()) throw Error(why);
  aug::Params p;
  p.C = int(sample[0]);
  p.H = int(sample[1]);
  p.W = int(sample[2]);
  p.pad = a.crop_padding;
  p.flip = a.flip;
  p.vflip = a.vflip;
  p.max_deg = float(a.rotate);
  // The epsilon keeps 0.3 * 10 = 2.9999... from losing a pixel.
  p.max_tx = int(std::floor(a.translate * double(p.W) + 1e-9));
  p.max_ty = int(std::floor(a.translate * double(p.H) + 1e-9));
  p.brightness = float(a.brightness);
  p.black = black;
  p.white = white;
  return p;
}

AugmentDraw augment_draw(const AugmentConfig& a, const Shape& sample, uint64_t seed, int64_t i) {
  return aug::draw(augment_params(a, sample, 0.f), seed, i);
}

void augment_batch(const AugmentConfig& a, const Shape& sample, float pad_value, uint64_t seed,
                   float* x, int64_t n, float white_value) {
  if (!a.enabled()) return;
  const aug::Params p = augment_params(a, sample, pad_value, white_value);
  const int64_t F = int64_t(p.C) * p.H * p.W;
  std::vector<float> src(static_cast<size_t>(F));
  auto at = [&src](int64_t off) { return src[size_t(off)]; };
  for (int64_t i = 0; i < n; ++i) {
    float* s = x + i * F;
    std::copy(s, s + F, src.begin());
    const aug::Draw d = aug::draw(p, seed, i);
    for (int c = 0; c < p.C; ++c)
      for (int y = 0; y < p.H; ++y)
        for (int xo = 0; xo < p.W; ++xo)
          s[(int64_t(c) * p.H + y) * p.W + xo] = aug::pixel(p, d, c, y, xo, at);
  }
}

}  // namespace dc
