// Image preprocessing a project asks for: resize, grey -> RGB and fixed
// per-channel normalisation, so small grey datasets can feed a pretrained
// RGB base. Images stay bytes (a resized 10k test set at 3x128x128 is 490 MB
// as bytes, four times that as floats); normalisation happens when batches
// are gathered.
#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/sysinfo.h>

#include <algorithm>
#include <cmath>

namespace dc {

namespace {

constexpr int64_t kMaxPreprocessSize = 1024;

// Bilinear resampling with half-pixel centres (torchvision's and OpenCV's
// INTER_LINEAR without antialiasing), rounded back to bytes.
void resize_plane(const uint8_t* src, int64_t h, int64_t w, uint8_t* dst, int64_t oh, int64_t ow) {
  const float sy = float(h) / float(oh), sx = float(w) / float(ow);
  for (int64_t y = 0; y < oh; ++y) {
    const float fy = std::max(0.0f, (float(y) + 0.5f) * sy - 0.5f);
    const int64_t y0 = std::min<int64_t>(int64_t(fy), h - 1), y1 = std::min<int64_t>(y0 + 1, h - 1);
    const float wy = fy - float(y0);
    for (int64_t x = 0; x < ow; ++x) {
      const float fx = std::max(0.0f, (float(x) + 0.5f) * sx - 0.5f);
      const int64_t x0 = std::min<int64_t>(int64_t(fx), w - 1),
                    x1 = std::min<int64_t>(x0 + 1, w - 1);
      const float wx = fx - float(x0);
      const float top = float(src[y0 * w + x0]) * (1 - wx) + float(src[y0 * w + x1]) * wx;
      const float bot = float(src[y1 * w + x0]) * (1 - wx) + float(src[y1 * w + x1]) * wx;
      dst[y * ow + x] = uint8_t(std::clamp(std::lround(top * (1 - wy) + bot * wy), 0L, 255L));
    }
  }
}

// Output channels of an image with `c` channels under p; throws for RGB -> grey.
int64_t out_channels(int64_t c, const ImagePreprocess& p, const std::string& what) {
  if (p.channels == 0 || p.channels == c) return c;
  if (c == 1 && p.channels == 3) return 3;
  throw DataError(what + " has " + std::to_string(c) + "-channel images; preprocess.channels " +
                  std::to_string(p.channels) +
                  " can only turn grey (1 channel) into RGB (3); set it to 0 or 3");
}

}  // namespace

std::string preprocess_problem(const ImagePreprocess& p) {
  if (p.size < 0 || p.size > kMaxPreprocessSize)
    return "size must be in [0, " + std::to_string(kMaxPreprocessSize) + "] (0: keep the size)";
  if (p.channels != 0 && p.channels != 1 && p.channels != 3)
    return "channels must be 0 (keep), 1 or 3 (grey -> RGB)";
  if (p.mean.size() != p.std.size())
    return "mean and std need one value per channel each (got " + std::to_string(p.mean.size()) +
           " and " + std::to_string(p.std.size()) + ")";
  if (!p.mean.empty() && p.mean.size() != 1 && p.mean.size() != 3)
    return "mean and std need 1 or 3 values (one per channel)";
  if (p.channels != 0 && !p.mean.empty() && int64_t(p.mean.size()) != p.channels)
    return "mean and std have " + std::to_string(p.mean.size()) + " values but channels is " +
           std::to_string(p.channels);
  for (size_t i = 0; i < p.std.size(); ++i)
    if (!std::isfinite(p.mean[i]) || !(p.std[i] > 0) || !std::isfinite(p.std[i]))
      return "mean must be finite and std positive (channel " + std::to_string(i) + ")";
  return "";
}

std::vector<uint8_t> preprocess_image(const std::vector<uint8_t>& chw, Shape& shape,
                                      const ImagePreprocess& p) {
  if (shape.rank() != 3) throw DataError("image preprocessing needs channels x height x width");
  const int64_t c = shape[0], h = shape[1], w = shape[2];
  const int64_t oc = out_channels(c, p, "the image");
  const int64_t oh = p.size > 0 ? p.size : h, ow = p.size > 0 ? p.size : w;
  std::vector<uint8_t> out(size_t(oc * oh * ow));
  for (int64_t k = 0; k < c; ++k)
    resize_plane(chw.data() + k * h * w, h, w, &out[size_t(k * oh * ow)], oh, ow);
  for (int64_t k = c; k < oc; ++k)  // grey replicated into G and B
    std::copy_n(out.begin(), oh * ow, out.begin() + k * oh * ow);
  shape = Shape({oc, oh, ow});
  return out;
}

void preprocess_images(Dataset& d, const ImagePreprocess& p) {
  if (!p.active()) return;
  if (std::string why = preprocess_problem(p); !why.empty())
    throw DataError(d.source + ": dataset.preprocess: " + why);
  if (d.pixels.empty() || d.sample_shape.rank() != 3 || d.tokens)
    throw DataError(d.source +
                    ": dataset.preprocess (resize, grey -> RGB, per-channel normalisation) works "
                    "on images (bytes, channels x height x width) only; remove it for this data");
  const int64_t oc = out_channels(d.sample_shape[0], p, d.source);
  if (!p.mean.empty() && int64_t(p.mean.size()) != oc)
    throw DataError(d.source + ": dataset.preprocess has " + std::to_string(p.mean.size()) +
                    " mean/std values but the images end with " + std::to_string(oc) + " channels");
  if (p.size > 0 || oc != d.sample_shape[0]) {
    const int64_t per = d.sample_shape.numel(), n = d.size();
    // The size comes from the project file: refused before the reserve below
    // when the result cannot fit (60,000 images at 3x1024x1024 are 176 GiB).
    const int64_t oh = p.size > 0 ? p.size : d.sample_shape[1];
    const int64_t ow = p.size > 0 ? p.size : d.sample_shape[2];
    const int64_t bytes = n * oc * oh * ow, available = available_memory_bytes();
    if (available >= 0 && bytes > available)
      throw DataError(d.source + ": dataset.preprocess makes " + std::to_string(n) + " images of " +
                      std::to_string(oc) + "x" + std::to_string(oh) + "x" + std::to_string(ow) +
                      ", " + std::to_string(bytes >> 20) + " MiB, but " +
                      std::to_string(available >> 20) +
                      " MiB of memory is available; choose a smaller size");
    Shape out_shape = d.sample_shape;
    std::vector<uint8_t> out;
    std::vector<uint8_t> one(static_cast<size_t>(per));
    for (int64_t i = 0; i < n; ++i) {
      std::copy_n(d.pixels.begin() + i * per, per, one.begin());
      Shape s = d.sample_shape;
      std::vector<uint8_t> r = preprocess_image(one, s, p);
      if (i == 0) {
        out_shape = s;
        out.reserve(size_t(n) * r.size());
      }
      out.insert(out.end(), r.begin(), r.end());
    }
    d.pixels = std::move(out);
    d.pixels.shrink_to_fit();
    d.sample_shape = out_shape;
  }
  d.channel_mean = p.mean;
  d.channel_std = p.std;
}

}  // namespace dc
