// In-memory datasets: gathering normalised batches, statistics, splits and
// the IDX folder layout.
#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/image_data.h>
#include <deepcanvas/rng.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "work_pool.h"

namespace dc {

namespace {

// Every gather: with `drop`, samples whose picture turned out bad are left
// out and the rest written contiguously; without, they stay (black). The
// samples go normalised to x, or (xb instead, byte data only) as bytes.
int64_t gather_samples(const Dataset& d, const int64_t* idx, int64_t n, float* x, uint8_t* xb,
                       int32_t* out_labels, uint64_t draw_seed, WorkPool* pool, bool drop) {
  const int64_t per = d.sample_shape.numel();
  const int64_t count = d.size();
  const bool u8 = d.is_bytes();
  const int64_t stored = d.images || d.windows ? count * per
                         : u8                  ? static_cast<int64_t>(d.pixels.size())
                                               : static_cast<int64_t>(d.values.size());
  if (stored != count * per || (d.images && d.images->size() != count))
    throw DataError(d.source + ": the dataset holds " + std::to_string(stored) + " values for " +
                    std::to_string(count) + " samples of " + d.sample_shape.str() +
                    "; it was not loaded correctly");
  for (int64_t i = 0; i < n; ++i)
    if (idx[i] < 0 || idx[i] >= count)
      throw DataError(d.source + ": sample index " + std::to_string(idx[i]) +
                      " is outside the dataset (" + std::to_string(count) + " samples)");
  if (xb) d.require_bytes();
  // One table lookup per byte instead of a divide: the same float result
  // for every occurrence of a byte value, one table per channel with
  // per-channel statistics (a pretrained base's).
  const norm::Params np = normalisation(d);
  const bool per_channel = u8 && np.channels > 0;
  const int64_t tables = per_channel ? np.channels : 1, plane = per_channel ? np.plane : per;
  std::vector<float> luts;
  if (u8) {
    luts.resize(size_t(256 * tables));
    for (int64_t k = 0; k < tables; ++k)
      for (int v = 0; v < 256; ++v)
        luts[size_t(k * 256 + v)] = norm::apply(np, float(v) / 255.0f, k * plane);
  }
  auto convert = [&](const uint8_t* src, float* dst) {
    // Plane by plane, each with its table (one plane of the whole sample and
    // one table without per-channel statistics).
    for (int64_t t = 0; t < tables; ++t) {
      const float* lut = luts.data() + t * 256;
      for (int64_t k = t * plane; k < (t + 1) * plane; ++k) dst[k] = lut[src[k]];
    }
  };
  if (d.images) {
    // Each picture is drawn and converted on the pool (when there is one)
    // into its own place in the batch, through a per-thread scratch sample:
    // the conversion was the loader thread's serial share of every batch,
    // and a fresh batch-sized staging buffer cost page faults each time.
    std::vector<char> ok(size_t(n), 1);
    auto one = [&](int64_t i) {
      if (xb) {
        ok[size_t(i)] = d.images->sample(idx[i], draw_seed, xb + i * per) ? 1 : 0;
        return;
      }
      thread_local std::vector<uint8_t> scratch;
      if (int64_t(scratch.size()) < per) scratch.resize(size_t(per));
      ok[size_t(i)] = d.images->sample(idx[i], draw_seed, scratch.data()) ? 1 : 0;
      convert(scratch.data(), x + i * per);
    };
    if (pool)
      pool->run(n, one);
    else
      for (int64_t i = 0; i < n; ++i) one(i);
    int64_t out = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (drop && !ok[size_t(i)]) continue;
      if (out != i && xb)
        std::memmove(xb + out * per, xb + i * per, size_t(per));
      else if (out != i)
        std::memmove(x + out * per, x + i * per, size_t(per) * sizeof(float));
      if (out_labels) out_labels[out] = d.labels[static_cast<size_t>(idx[i])];
      ++out;
    }
    return out;
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t s = idx[i];
    if (xb) {  // x is null then: no pointer into it is formed
      std::memcpy(xb + i * per, d.pixels.data() + s * per, size_t(per));
    } else if (u8) {
      convert(d.pixels.data() + s * per, x + i * per);
    } else {
      // normalisation() keeps float data on the shared form.
      float* dst = x + i * per;
      // Windows are written in place first; values has no data then (no
      // pointer into it may be formed).
      const float* src = dst;
      if (d.windows)
        d.windows->write(s, dst);
      else
        src = d.values.data() + s * per;
      const float m = np.mean, inv = np.inv_std;
      for (int64_t k = 0; k < per; ++k) dst[k] = (src[k] - m) * inv;
    }
    if (out_labels) out_labels[i] = d.labels[static_cast<size_t>(s)];
  }
  return n;
}

}  // namespace

void SequenceWindows::write(int64_t sample, float* out) const {
  const int64_t p = first + sample * stride;
  for (int64_t k = 0; k < window; ++k) {
    const int64_t at = p - window + k;
    if (ids) {
      out[k] = at < 0 ? 0.f : float((*ids)[size_t(at)]);
    } else if (at < 0) {
      std::fill(out + k * width, out + (k + 1) * width, 0.f);
    } else {
      std::copy(rows->begin() + at * width, rows->begin() + (at + 1) * width, out + k * width);
    }
  }
}

int64_t SequenceWindows::readers(int64_t step, int64_t samples) const {
  // Sample i reads steps [first + i*stride - window, first + i*stride).
  auto floor_div = [](int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); };
  const int64_t lo = std::max<int64_t>(0, -floor_div(first - step - 1, stride));
  const int64_t hi = std::min<int64_t>(samples - 1, floor_div(step + window - first, stride));
  return std::max<int64_t>(0, hi - lo + 1);
}

void Dataset::copy_values(int64_t begin, int64_t n, float* out) const {
  const int64_t per = sample_shape.numel();
  if (begin < 0 || n < 0 || begin + n > size())
    throw DataError(source + ": samples " + std::to_string(begin) + " to " +
                    std::to_string(begin + n) + " are outside the dataset (" +
                    std::to_string(size()) + " samples)");
  if (windows) {
    for (int64_t i = 0; i < n; ++i) windows->write(begin + i, out + i * per);
    return;
  }
  if (is_bytes() || int64_t(values.size()) != size() * per)
    throw DataError(source + ": the dataset holds no float values to copy");
  std::copy(values.begin() + begin * per, values.begin() + (begin + n) * per, out);
}

void Dataset::require_bytes() const {
  if (!is_bytes())
    throw DataError((source.empty() ? std::string("dataset") : source) +
                    ": its samples are numbers, not image bytes");
}

void Dataset::gather(const int64_t* idx, int64_t n, float* x, int32_t* out_labels) const {
  gather_samples(*this, idx, n, x, nullptr, out_labels, 0, nullptr, false);
}

int64_t Dataset::gather(const int64_t* idx, int64_t n, float* x, int32_t* out_labels,
                        uint64_t draw_seed, WorkPool* pool) const {
  return gather_samples(*this, idx, n, x, nullptr, out_labels, draw_seed, pool, true);
}

int64_t Dataset::gather_bytes(const int64_t* idx, int64_t n, uint8_t* x, int32_t* out_labels,
                              uint64_t draw_seed, WorkPool* pool) const {
  return gather_samples(*this, idx, n, nullptr, x, out_labels, draw_seed, pool, true);
}

norm::Params normalisation(const Dataset& d) {
  norm::Params p;
  p.mean = d.mean;
  p.inv_std = 1.0f / (d.stddev > 0 ? d.stddev : 1.0f);
  // Per-channel statistics apply to byte images; float data keeps the
  // shared mean and std.
  if (d.channel_mean.empty() || (d.pixels.empty() && !d.images)) return p;
  const int64_t c = int64_t(d.channel_mean.size());
  if (d.sample_shape.rank() != 3 || d.sample_shape[0] != c ||
      d.channel_std.size() != d.channel_mean.size())
    throw DataError(d.source + ": " + std::to_string(c) +
                    " per-channel mean/std values for samples of " + d.sample_shape.str());
  if (c > norm::kMaxChannels)
    throw DataError(d.source + ": per-channel normalisation handles up to " +
                    std::to_string(norm::kMaxChannels) + " channels, not " + std::to_string(c));
  p.channels = int(c);
  p.plane = d.sample_shape.numel() / c;
  for (int64_t k = 0; k < c; ++k) {
    p.channel_mean[k] = d.channel_mean[size_t(k)];
    p.channel_std[k] = d.channel_std[size_t(k)];
  }
  return p;
}

void compute_normalization(Dataset& d) {
  if (d.tokens) {
    d.mean = 0.f;
    d.stddev = 1.f;
    return;
  }
  double mean = 0, var = 0;
  if (!d.pixels.empty() || d.images) {
    // A histogram makes this exact and independent of summation order.
    std::vector<uint64_t> hist(256, 0);
    double count = static_cast<double>(d.pixels.size());
    for (uint8_t p : d.pixels) ++hist[p];
    if (d.images) {
      // Evenly spaced samples stand for a folder too large to decode twice.
      // Each chunk counts into its own histogram, so the sum does not
      // depend on which thread ran which chunk.
      const int64_t n = d.size(), take = std::min<int64_t>(n, 1000), per = d.sample_shape.numel();
      const int64_t chunk = 25, chunks = (take + chunk - 1) / chunk;
      std::vector<std::vector<uint64_t>> part(size_t(chunks), std::vector<uint64_t>(256, 0));
      std::vector<int64_t> used(size_t(chunks), 0);
      WorkPool pool(d.images->workers());
      pool.run(chunks, [&](int64_t c) {
        std::vector<uint8_t> buf(static_cast<size_t>(per));
        for (int64_t k = c * chunk; k < std::min(take, (c + 1) * chunk); ++k) {
          // A bad file is black bytes, not a picture: left out.
          if (!d.images->sample(k * n / take, 0, buf.data())) continue;
          for (uint8_t p : buf) ++part[size_t(c)][p];
          ++used[size_t(c)];
        }
      });
      int64_t pictures = 0;
      for (int64_t c = 0; c < chunks; ++c) {
        for (int v = 0; v < 256; ++v) hist[size_t(v)] += part[size_t(c)][size_t(v)];
        pictures += used[size_t(c)];
      }
      count = static_cast<double>(pictures * per);
    }
    if (count == 0) count = 1;
    for (int v = 0; v < 256; ++v) mean += static_cast<double>(hist[v]) * (v / 255.0);
    mean /= count;
    for (int v = 0; v < 256; ++v) {
      double diff = v / 255.0 - mean;
      var += static_cast<double>(hist[v]) * diff * diff;
    }
    var /= count;
  } else if (d.windows && d.windows->rows && d.size() > 0) {
    // As if every window were stored (as they once were, and as the PyTorch
    // export's loader stores them): a step counts once for each window that
    // reads it, padding as zeros.
    const SequenceWindows& w = *d.windows;
    const int64_t n = d.size();
    const int64_t last = w.first + (n - 1) * w.stride;  // one past the last step read
    const double count = double(n) * double(w.window) * double(w.width);
    double read = 0;
    for (int64_t step = std::max<int64_t>(0, w.first - w.window); step < last; ++step) {
      const double c = double(w.readers(step, n));
      if (c == 0) continue;
      read += c * double(w.width);
      for (int64_t f = 0; f < w.width; ++f) mean += c * (*w.rows)[size_t(step * w.width + f)];
    }
    mean /= count;
    for (int64_t step = std::max<int64_t>(0, w.first - w.window); step < last; ++step) {
      const double c = double(w.readers(step, n));
      for (int64_t f = 0; f < w.width && c > 0; ++f) {
        const double diff = (*w.rows)[size_t(step * w.width + f)] - mean;
        var += c * diff * diff;
      }
    }
    var = (var + (count - read) * mean * mean) / count;
  } else if (!d.values.empty()) {
    const double count = static_cast<double>(d.values.size());
    for (float v : d.values) mean += v;
    mean /= count;
    for (float v : d.values) var += (v - mean) * (v - mean);
    var /= count;
  }
  double sd = std::sqrt(var);
  d.mean = static_cast<float>(mean);
  // Constant data would divide by zero; leave its scale alone instead.
  d.stddev = sd > 1e-6 ? static_cast<float>(sd) : 1.0f;
}

namespace {
std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

std::vector<int64_t> all_indices(int64_t n) {
  std::vector<int64_t> all(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  return all;
}

std::vector<int64_t> indices_or_all(const std::vector<int64_t>& indices, int64_t n) {
  return indices.empty() ? all_indices(n) : indices;
}

std::pair<std::vector<int64_t>, std::vector<int64_t>> split_indices(int64_t n, double val_fraction,
                                                                    uint64_t seed, bool ordered) {
  if (n < 0) throw DataError("cannot split a dataset of " + std::to_string(n) + " samples");
  if (!(val_fraction >= 0.0 && val_fraction < 1.0))
    throw DataError("the validation fraction must be at least 0 and below 1 (got " +
                    fmt(val_fraction) + ")");
  const int64_t val = std::llround(val_fraction * static_cast<double>(n));
  if (n > 0 && val >= n)
    throw DataError("a validation fraction of " + std::to_string(val_fraction) +
                    " leaves none of " + std::to_string(n) + " samples for training; lower it");
  std::vector<int64_t> perm = all_indices(n);
  if (ordered)
    return {std::vector<int64_t>(perm.begin(), perm.end() - val),
            std::vector<int64_t>(perm.end() - val, perm.end())};
  // Its own stream, so the split does not echo the loader's shuffle of the
  // same seed.
  Rng rng(seed ^ 0xA0761D6478BD642Full);
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(perm[static_cast<size_t>(i)], perm[rng.below(static_cast<uint64_t>(i) + 1)]);
  std::vector<int64_t> v(perm.begin(), perm.begin() + val), t(perm.begin() + val, perm.end());
  // Sorted, so evaluation walks memory in order.
  std::sort(v.begin(), v.end());
  std::sort(t.begin(), t.end());
  return {std::move(t), std::move(v)};
}

namespace {

namespace fs = std::filesystem;

// The name on the MNIST site unpacks to either spelling.
std::string find_idx(const fs::path& dir, const std::string& split, const std::string& kind) {
  for (const std::string& stem : {split + "-" + kind, split + "-" + kind.substr(0, kind.find('-')) +
                                                          "." + kind.substr(kind.find('-') + 1)})
    for (const char* ext : {".gz", ""}) {
      fs::path p = dir / (stem + ext);
      std::error_code ec;
      if (fs::is_regular_file(p, ec)) return p.string();
    }
  return {};
}

}  // namespace

TrainTest load_idx_folder(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw IoError("dataset folder '" + dir + "' does not exist");
  if (!fs::is_directory(dir, ec))
    throw IoError("dataset folder '" + dir +
                  "' is a file; choose the folder that holds the IDX files");

  const char* splits[2] = {"train", "t10k"};
  const char* kinds[2] = {"images-idx3-ubyte", "labels-idx1-ubyte"};
  std::string found[2][2];
  std::string missing;
  for (int s = 0; s < 2; ++s)
    for (int k = 0; k < 2; ++k) {
      found[s][k] = find_idx(dir, splits[s], kinds[k]);
      if (found[s][k].empty())
        missing +=
            (missing.empty() ? "" : ", ") + std::string(splits[s]) + "-" + kinds[k] + "[.gz]";
    }
  if (!missing.empty())
    throw IoError("dataset folder '" + dir + "' lacks " + missing +
                  "; an IDX dataset needs train-images-idx3-ubyte, train-labels-idx1-ubyte, "
                  "t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte (each may be .gz)");

  TrainTest tt;
  tt.train = load_idx(found[0][0], found[0][1]);
  tt.test = load_idx(found[1][0], found[1][1]);
  if (tt.train.sample_shape != tt.test.sample_shape)
    throw DataError("dataset folder '" + dir + "': the training images are " +
                    tt.train.sample_shape.str() + " but the test images are " +
                    tt.test.sample_shape.str() + "; both must have the same size");
  int classes = std::max(tt.train.num_classes, tt.test.num_classes);
  tt.train.num_classes = tt.test.num_classes = classes;
  return tt;
}

TrainTest load_fashion_mnist(const std::string& dir) {
  static const char* kNames[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                   "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  TrainTest tt = load_idx_folder(dir);
  if (tt.train.num_classes > 10)
    throw DataError("dataset folder '" + dir + "' has labels up to " +
                    std::to_string(tt.train.num_classes - 1) +
                    ", but Fashion-MNIST has 10 classes (0-9); is this another data set?");
  for (Dataset* d : {&tt.train, &tt.test}) {
    d->num_classes = 10;
    d->class_names.assign(kNames, kNames + 10);
  }
  return tt;
}

}  // namespace dc
