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
  augment_batch(a, sample, AugmentLevels{{pad_value}, {white_value}}, seed, x, n);
}

void augment_batch(const AugmentConfig& a, const Shape& sample, const AugmentLevels& levels,
                   uint64_t seed, float* x, int64_t n) {
  if (!a.enabled()) return;
  const aug::Params p = augment_params(a, sample, 0.f);
  const size_t nb = levels.black.size(), nw = levels.white.size();
  if ((nb != 1 && nb != size_t(p.C)) || (nw != 1 && nw != size_t(p.C)))
    throw DataError(
        "augmentation needs one black and one white level, or one per channel, for "
        "samples of " +
        sample.str() + "; got " + std::to_string(nb) + " and " + std::to_string(nw));
  // A pixel of channel c reads channel c only, so each channel's parameters
  // carry that channel's black and white; the draw does not use them.
  std::vector<aug::Params> pc(static_cast<size_t>(p.C), p);
  for (size_t c = 0; c < pc.size(); ++c) {
    pc[c].black = levels.black[nb == 1 ? 0 : c];
    pc[c].white = levels.white[nw == 1 ? 0 : c];
  }
  const int64_t F = int64_t(p.C) * p.H * p.W;
  if (p.max_deg <= 0 && p.brightness <= 0 && p.pad == 0 && p.max_tx == 0 && p.max_ty == 0) {
    // Flips alone: aug::pixel reduces to a mirrored copy, so mirror the rows
    // in place (the same values, without a fetch per pixel: the per-pixel
    // path was an eighth of the image input pipeline in perf).
    for (int64_t i = 0; i < n; ++i) {
      const aug::Draw d = aug::draw(p, seed, i);
      for (int c = 0; c < p.C; ++c) {
        float* plane = x + i * F + int64_t(c) * p.H * p.W;
        if (d.flip)
          for (int y = 0; y < p.H; ++y)
            std::reverse(plane + int64_t(y) * p.W, plane + int64_t(y + 1) * p.W);
        if (d.vflip)
          for (int y = 0; y < p.H / 2; ++y)
            std::swap_ranges(plane + int64_t(y) * p.W, plane + int64_t(y + 1) * p.W,
                             plane + int64_t(p.H - 1 - y) * p.W);
      }
    }
    return;
  }
  std::vector<float> src(static_cast<size_t>(F));
  auto at = [&src](int64_t off) { return src[size_t(off)]; };
  for (int64_t i = 0; i < n; ++i) {
    float* s = x + i * F;
    std::copy(s, s + F, src.begin());
    const aug::Draw d = aug::draw(p, seed, i);
    for (int c = 0; c < p.C; ++c)
      for (int y = 0; y < p.H; ++y)
        for (int xo = 0; xo < p.W; ++xo)
          s[(int64_t(c) * p.H + y) * p.W + xo] = aug::pixel(pc[size_t(c)], d, c, y, xo, at);
  }
}

AugmentLevels augment_levels(const Dataset& d) {
  // What gather() makes of bytes 0 and 255 (normalize_pixel.h), per channel
  // with per-channel statistics. Float data has no white to cap brightness
  // at; pictures decoded from files are bytes as IDX images are. The CUDA
  // plan computes its levels here too.
  const norm::Params p = normalisation(d);
  AugmentLevels l;
  for (int c = 0; c < std::max(p.channels, 1); ++c) {
    l.black.push_back(norm::apply(p, 0.0f, c * p.plane));
    l.white.push_back(d.is_bytes() ? norm::apply(p, 1.0f, c * p.plane) : INFINITY);
  }
  return l;
}

}  // namespace dc
