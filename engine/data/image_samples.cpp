// Listed image files as samples of the Input (image_data.h): the stored
// resolution, torchvision's evaluation and training transforms, and the
// two ways of holding pictures (decoded into memory up front, or streamed
// from disk through a cache), chosen within a memory budget.
#include <deepcanvas/image_data.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/sysinfo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "picture_cache.h"
#include "work_pool.h"

#ifdef DC_HAVE_OPENCV
#include <opencv2/imgproc.hpp>
#endif

namespace dc {

namespace {

// Draws per sample: 4 for each of RandomResizedCrop's 10 attempts, then
// the colour jitter's 3 factors.
constexpr uint64_t kDrawsPerSample = 64;
constexpr uint64_t kJitterDraw = 40;

double uniform_draw(uint64_t seed, int64_t i, uint64_t k) {
  return double(splitmix64_at(seed, uint64_t(i) * kDrawsPerSample + k) >> 11) * 0x1p-53;
}

std::string size_words(double bytes) {
  char buf[32];
  if (bytes >= 1e9)
    std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  else
    std::snprintf(buf, sizeof buf, "%.0f MB", std::max(1.0, bytes / 1e6));
  return buf;
}

// The stored size of an h×w picture.
void stored_dims(int64_t h, int64_t w, int S, int64_t& sh, int64_t& sw) {
  const double shorter = double(std::min(h, w)), longer = double(std::max(h, w));
  const double scale = std::min({1.0, S / shorter, 4.0 * S / longer});
  sh = scale < 1 ? std::max<int64_t>(1, std::llround(double(h) * scale)) : h;
  sw = scale < 1 ? std::max<int64_t>(1, std::llround(double(w) * scale)) : w;
}

}  // namespace

bool picture_shape(const Shape& input) {
  return input.rank() == 3 && (input[0] == 1 || input[0] == 3);
}

int stored_side(const ImageTransform& t) {
  const double f = t.crop_fraction > 0 && t.crop_fraction <= 1 ? t.crop_fraction : 1.0;
  return int(std::ceil(double(std::max(t.input[1], t.input[2])) / f - 1e-9));
}

CropBox random_resized_crop_box(int height, int width, uint64_t seed, int64_t i) {
  const double area = double(height) * width;
  const double lr0 = std::log(3.0 / 4.0), lr1 = std::log(4.0 / 3.0);
  CropBox b;
  for (uint64_t a = 0; a < 10; ++a) {
    const double target = area * (0.08 + 0.92 * uniform_draw(seed, i, a * 4));
    const double ratio = std::exp(lr0 + (lr1 - lr0) * uniform_draw(seed, i, a * 4 + 1));
    // Python's round() rounds halves to even, as nearbyint does.
    const int w = int(std::nearbyint(std::sqrt(target * ratio)));
    const int h = int(std::nearbyint(std::sqrt(target / ratio)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      b.w = w;
      b.h = h;
      b.y = int(uniform_draw(seed, i, a * 4 + 2) * (height - h + 1));
      b.x = int(uniform_draw(seed, i, a * 4 + 3) * (width - w + 1));
      b.y = std::min(b.y, height - h);
      b.x = std::min(b.x, width - w);
      return b;
    }
  }
  // torchvision's fallback: the centre, the ratio clamped into range.
  const double in_ratio = double(width) / height;
  b.w = width;
  b.h = height;
  if (in_ratio < 3.0 / 4.0)
    b.h = std::max(1, int(std::nearbyint(width / (3.0 / 4.0))));
  else if (in_ratio > 4.0 / 3.0)
    b.w = std::max(1, int(std::nearbyint(height * (4.0 / 3.0))));
  b.h = std::min(b.h, height);
  b.w = std::min(b.w, width);
  b.y = (height - b.h) / 2;
  b.x = (width - b.w) / 2;
  return b;
}

#ifdef DC_HAVE_OPENCV
Picture store_picture(Picture p, const ImageTransform& t) {
  int64_t sh, sw;
  stored_dims(p.h, p.w, stored_side(t), sh, sw);
  if (sh == p.h && sw == p.w) return p;
  cv::Mat src(p.h, p.w, p.c == 1 ? CV_8UC1 : CV_8UC3, p.px.data());
  Picture out;
  out.h = int(sh);
  out.w = int(sw);
  out.c = p.c;
  out.px.resize(size_t(out.bytes()));
  cv::Mat dst(out.h, out.w, src.type(), out.px.data());
  // Area averaging where it matters, below half size (aliasing); above it
  // bilinear gives nearly the same picture and OpenCV's area resampling
  // at fractional factors cost a third of the input pipeline in perf.
  const bool shrink_much = sh * 2 <= p.h && sw * 2 <= p.w;
  cv::resize(src, dst, dst.size(), 0, 0, shrink_much ? cv::INTER_AREA : cv::INTER_LINEAR);
  return out;
}

namespace {

// ColorJitter's brightness, contrast and saturation, in that order, on an
// H×W×C u8 picture; each step clamped to [0, 255] as torchvision's blend is.
void color_jitter(cv::Mat& hwc, double j, uint64_t seed, int64_t i) {
  const int C = hwc.channels();
  const int64_t n = int64_t(hwc.rows) * hwc.cols;
  double f[3];
  for (uint64_t k = 0; k < 3; ++k)
    f[k] = std::max(0.0, 1 - j + 2 * j * uniform_draw(seed, i, kJitterDraw + k));
  std::vector<float> v(size_t(n * C));
  const uint8_t* src = hwc.ptr<uint8_t>(0);
  auto clamp = [](double x) { return float(std::min(255.0, std::max(0.0, x))); };
  auto grey = [&](int64_t p) {
    return C == 1 ? double(v[size_t(p)])
                  : 0.299 * v[size_t(p * 3)] + 0.587 * v[size_t(p * 3 + 1)] +
                        0.114 * v[size_t(p * 3 + 2)];
  };
  for (int64_t k = 0; k < n * C; ++k) v[size_t(k)] = clamp(src[k] * f[0]);
  double mean = 0;
  for (int64_t p = 0; p < n; ++p) mean += grey(p);
  mean /= double(std::max<int64_t>(1, n));
  for (float& x : v) x = clamp(f[1] * x + (1 - f[1]) * mean);
  if (C == 3)
    for (int64_t p = 0; p < n; ++p) {
      const double g = grey(p);
      for (int c = 0; c < 3; ++c) {
        float& x = v[size_t(p * 3 + c)];
        x = clamp(f[2] * x + (1 - f[2]) * g);
      }
    }
  uint8_t* dst = hwc.ptr<uint8_t>(0);
  for (int64_t k = 0; k < n * C; ++k) dst[k] = uint8_t(std::lround(v[size_t(k)]));
}

}  // namespace

void picture_to_chw(const Picture& p, const ImageTransform& t, uint64_t draw_seed, int64_t i,
                    uint8_t* chw) {
  const int C = int(t.input[0]), H = int(t.input[1]), W = int(t.input[2]);
  if (p.c != C)
    throw DataError("a picture of " + std::to_string(p.c) + " channels for an Input of " +
                    std::to_string(C));
  if (p.h < 1 || p.w < 1 || int64_t(p.px.size()) != p.bytes())
    throw DataError("an empty or inconsistent picture");
  const int type = C == 1 ? CV_8UC1 : CV_8UC3;
  cv::Mat src(p.h, p.w, type, const_cast<uint8_t*>(p.px.data()));
  cv::Mat out;  // H×W×C
  if (draw_seed != 0 && t.random_resized_crop) {
    const CropBox b = random_resized_crop_box(p.h, p.w, draw_seed, i);
    cv::resize(src(cv::Rect(b.x, b.y, b.w, b.h)), out, cv::Size(W, H), 0, 0, cv::INTER_LINEAR);
  } else {
    // Cover H/f × W/f, then the centre H×W.
    const double scale = std::max(double(H) / p.h, double(W) / p.w) / t.crop_fraction;
    const int rw = std::max(W, int(std::lround(p.w * scale))),
              rh = std::max(H, int(std::lround(p.h * scale)));
    cv::Mat resized;
    cv::resize(src, resized, cv::Size(rw, rh), 0, 0, scale < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
    resized(cv::Rect((rw - W) / 2, (rh - H) / 2, W, H)).copyTo(out);
  }
  if (draw_seed != 0 && t.color_jitter > 0) color_jitter(out, t.color_jitter, draw_seed, i);
  // Straight into the sample's planes: OpenCV's split is vectorised, where
  // the per-byte loop it replaces was a fifth of a cached epoch (perf).
  const int64_t hw = int64_t(H) * W;
  if (C == 1) {
    out.copyTo(cv::Mat(H, W, CV_8UC1, chw));
  } else {
    cv::Mat planes[3] = {cv::Mat(H, W, CV_8UC1, chw), cv::Mat(H, W, CV_8UC1, chw + hw),
                         cv::Mat(H, W, CV_8UC1, chw + 2 * hw)};
    cv::split(out, planes);
    // split reallocates a plane rather than fail on a disagreement; the
    // sample must hold what it wrote.
    for (int c = 0; c < 3; ++c)
      if (planes[c].data != chw + c * hw) throw DataError("a picture could not be converted");
  }
}
#else
Picture store_picture(Picture, const ImageTransform&) {
  throw IoError("this build of DeepCanvas has no OpenCV");
}
void picture_to_chw(const Picture&, const ImageTransform&, uint64_t, int64_t, uint8_t*) {
  throw IoError("this build of DeepCanvas has no OpenCV");
}
#endif

namespace {

// What both ways of holding pictures share: the items, the transform, the
// count of bad files and the decoding counters.
class SamplesBase : public ImageSamples {
 public:
  SamplesBase(std::vector<ImageItem> items, const ImageTransform& t, const ImageLoadOptions& o)
      : items_(std::move(items)),
        t_(t),
        errors_(o.bad_images_are_errors),
        workers_(o.workers),
        bad_flags_(std::make_unique<std::atomic<uint8_t>[]>(items_.size())) {
    for (size_t k = 0; k < items_.size(); ++k) bad_flags_[k].store(0);
  }
  int64_t size() const override { return int64_t(items_.size()); }
  const ImageItem& item(int64_t i) const override { return items_.at(size_t(i)); }
  const ImageTransform& transform() const override { return t_; }
  BadImageLog bad() const override {
    std::lock_guard<std::mutex> l(log_mu_);
    return log_;
  }
  int64_t decodes() const override { return decodes_.load(); }
  int64_t cache_hits() const override { return cache_hits_.load(); }
  int workers() const override { return workers_; }

 protected:
  Picture load(int64_t i) const {
    decodes_.fetch_add(1);
    return store_picture(decode_image(items_.at(size_t(i)).path, int(t_.input[0]), stored_side(t_)),
                         t_);
  }
  // Counted once per file, however many epochs meet it.
  void record_bad(int64_t i, const ImageError& e) const {
    if (bad_flags_[size_t(i)].exchange(1) != 0) return;
    std::lock_guard<std::mutex> l(log_mu_);
    log_.count++;
    if (log_.files.size() < 100)
      log_.files.push_back(
          {e.path(), std::string(fault_name(e.fault())) + ": " + e.detail(), true});
  }
  bool known_bad(int64_t i) const { return bad_flags_[size_t(i)].load() != 0; }
  bool black(uint8_t* chw) const {
    std::fill(chw, chw + t_.input.numel(), uint8_t(0));
    return false;
  }

  std::vector<ImageItem> items_;
  ImageTransform t_;
  bool errors_;
  int workers_;
  mutable std::atomic<int64_t> decodes_{0}, cache_hits_{0};

 private:
  std::unique_ptr<std::atomic<uint8_t>[]> bad_flags_;
  mutable std::mutex log_mu_;
  mutable BadImageLog log_;
};

class MemorySamples : public SamplesBase {
 public:
  MemorySamples(std::vector<ImageItem> items, const ImageTransform& t, const ImageLoadOptions& o,
                const ImageProgress& progress, const std::string& why)
      : SamplesBase(std::move(items), t, o) {
    pics_.resize(items_.size());
    const int64_t n = size();
    WorkPool pool(o.workers);
    // In rounds, so progress and cancelling are answered on this thread.
    const int64_t round = std::max<int64_t>(16, int64_t(pool.size()) * 8);
    for (int64_t start = 0; start < n; start += round) {
      const int64_t count = std::min(round, n - start);
      pool.run(count, [&](int64_t k) {
        const int64_t i = start + k;
        try {
          pics_[size_t(i)] = load(i);
        } catch (const ImageError& e) {
          if (errors_) throw;
          record_bad(i, e);
        }
      });
      if (progress && !progress(start + count, n)) throw Error("cancelled");
    }
    int64_t bytes = 0;
    for (const Picture& p : pics_) bytes += p.bytes();
    note_ = "held in memory (" + size_words(double(bytes)) + ")" + why;
  }
  bool sample(int64_t i, uint64_t seed, uint8_t* chw) const override {
    const Picture& p = pics_.at(size_t(i));
    if (p.px.empty()) return black(chw);
    picture_to_chw(p, t_, seed, i, chw);
    return true;
  }
  Picture picture(int64_t i) const override { return pics_.at(size_t(i)); }
  bool streaming() const override { return false; }
  std::string mode_note() const override { return note_; }

 private:
  std::vector<Picture> pics_;
  std::string note_;
};

class StreamSamples : public SamplesBase {
 public:
  StreamSamples(std::vector<ImageItem> items, const ImageTransform& t, const ImageLoadOptions& o,
                int64_t estimate, const std::string& why)
      : SamplesBase(std::move(items), t, o), why_(why) {
    cache_ = std::make_unique<PictureCache>(o.cache_dir, items_, int(t.input[0]), stored_side(t),
                                            estimate);
  }
  bool sample(int64_t i, uint64_t seed, uint8_t* chw) const override {
    if (i < 0 || i >= size())
      throw DataError("image sample " + std::to_string(i) + " of " + std::to_string(size()));
    Picture p;
    if (cache_->get(i, p)) {
      cache_hits_.fetch_add(1);
    } else {
      if (known_bad(i)) return black(chw);
      try {
        p = load(i);
      } catch (const ImageError& e) {
        if (errors_) throw;
        record_bad(i, e);
        cache_->mark_bad(i);
        return black(chw);
      }
      cache_->put(i, p);
    }
    picture_to_chw(p, t_, seed, i, chw);
    return true;
  }
  Picture picture(int64_t i) const override {
    Picture p;
    if (cache_->get(i, p)) return p;
    return load(i);
  }
  bool streaming() const override { return true; }
  std::string mode_note() const override {
    return "streamed from disk" + why_ + "; " + cache_->note();
  }

 private:
  std::string why_;
  std::unique_ptr<PictureCache> cache_;
};

// The headers of up to 64 evenly spaced files (no pixel decoded); a bad
// file's is left empty (w = 0).
std::vector<ImageHeader> sample_headers(const std::vector<ImageItem>& items) {
  const int64_t n = int64_t(items.size());
  const int64_t take = std::min<int64_t>(n, 64);
  std::vector<ImageHeader> hs(static_cast<size_t>(take));
  for (int64_t k = 0; k < take; ++k) {
    try {
      hs[size_t(k)] = check_image_file(items[size_t(k * n / take)].path);
    } catch (const ImageError&) {
    }
  }
  return hs;
}

// The stored bytes of n files from a sample of their headers.
int64_t estimate_stored_bytes(const std::vector<ImageHeader>& sampled, int64_t n,
                              const ImageTransform& t) {
  if (sampled.empty()) return 0;
  const int S = stored_side(t);
  // A file whose header gives no size (or that is bad) counts as an S×S
  // square, the stored size of a square picture.
  const double square = double(S) * S * double(t.input[0]);
  double sum = 0;
  for (const ImageHeader& h : sampled) {
    double bytes = square;
    if (h.w > 0 && h.h > 0) {
      int64_t sh, sw;
      stored_dims(h.h, h.w, S, sh, sw);
      bytes = double(sh * sw * t.input[0]);
    }
    sum += bytes;
  }
  return int64_t(sum / double(sampled.size()) * double(n));
}

int64_t estimate_stored_bytes(const std::vector<ImageItem>& items, const ImageTransform& t) {
  return estimate_stored_bytes(sample_headers(items), int64_t(items.size()), t);
}

int64_t memory_budget(const ImageLoadOptions& o) {
  if (o.memory_budget > 0) return o.memory_budget;
  const int64_t avail = available_memory_bytes();
  return avail > 0 ? avail / 4 : int64_t(1) << 30;
}

void check_input(const ImageTransform& t) {
  if (!picture_shape(t.input))
    throw DataError("the network's Input is " + t.input.str() +
                    "; images need channels×height×width with 1 or 3 channels");
}

// `mode` Memory or Stream; `estimate` the stored bytes of these items and
// `why` the reason for the mode, worded for the log.
std::shared_ptr<ImageSamples> make_samples(std::vector<ImageItem> items, const ImageTransform& t,
                                           const ImageLoadOptions& o, const ImageProgress& progress,
                                           ImageLoadOptions::Mode mode, int64_t estimate,
                                           const std::string& why) {
  if (mode == ImageLoadOptions::Mode::Stream)
    return std::make_shared<StreamSamples>(std::move(items), t, o, estimate, why);
  return std::make_shared<MemorySamples>(std::move(items), t, o, progress, why);
}

// Auto's choice for datasets of `estimate` stored bytes together.
ImageLoadOptions::Mode choose(const ImageLoadOptions& o, int64_t estimate, std::string& why) {
  if (o.mode != ImageLoadOptions::Mode::Auto) {
    why = o.mode == ImageLoadOptions::Mode::Memory ? " (mode memory)" : " (mode stream)";
    return o.mode;
  }
  const int64_t budget = memory_budget(o);
  const bool fits = estimate <= budget;
  // The estimate covers every split chosen together; a set held in memory
  // then says its own size, so the estimate is named only when it decides
  // against memory.
  why = fits ? ": fits the " + size_words(double(budget)) + " budget"
             : ": about " + size_words(double(estimate)) + " decoded exceeds the " +
                   size_words(double(budget)) + " budget";
  return fits ? ImageLoadOptions::Mode::Memory : ImageLoadOptions::Mode::Stream;
}

}  // namespace

std::shared_ptr<ImageSamples> make_image_samples(std::vector<ImageItem> items,
                                                 const ImageTransform& t, const ImageLoadOptions& o,
                                                 const ImageProgress& progress) {
  check_input(t);
  const int64_t estimate = estimate_stored_bytes(items, t);
  std::string why;
  const ImageLoadOptions::Mode mode = choose(o, estimate, why);
  return make_samples(std::move(items), t, o, progress, mode, estimate, why);
}

TrainTest load_image_dataset(const ImageList& list, const ImageTransform& t,
                             const ImageLoadOptions& o, ImageDataReport* report,
                             const ImageProgress& progress) {
  check_input(t);
  TrainTest tt;
  std::vector<ImageItem> train = list.train;
  std::vector<int64_t> validation;
  for (const ImageItem& v : list.val) {
    validation.push_back(int64_t(train.size()));
    train.push_back(v);
  }
  // One choice for both splits: together they must fit the budget.
  const std::vector<ImageHeader> sampled = sample_headers(train);
  const int64_t train_bytes = estimate_stored_bytes(sampled, int64_t(train.size()), t),
                test_bytes = estimate_stored_bytes(list.test, t);
  std::string why;
  const ImageLoadOptions::Mode mode = choose(o, train_bytes + test_bytes, why);
  auto fill = [&](Dataset& d, std::vector<ImageItem> items, int64_t estimate) {
    d.sample_shape = t.input;
    d.num_classes = int(list.class_names.size());
    d.class_names = list.class_names;
    d.source = list.root;
    for (const ImageItem& it : items) d.labels.push_back(it.label);
    d.images = make_samples(std::move(items), t, o, progress, mode, estimate, why);
  };
  fill(tt.train, std::move(train), train_bytes);
  tt.train.validation = std::move(validation);
  if (!list.test.empty()) fill(tt.test, list.test, test_bytes);
  if (report) {
    report->list = list;
    report->mode_note = tt.train.images->mode_note();
    report->picture_note = picture_note(sampled, t.input);
    report->suggested_input = suggested_input(sampled, t.input);
  }
  return tt;
}

namespace {

// What up to 64 files' headers say, for picture_note and suggested_input.
struct PictureSurvey {
  int64_t files = 0;     // headers that gave a size
  int64_t w = 0, h = 0;  // median width and height
  int colour = 0, grey = 0;
  // The Input throws away colour the files hold, or most of their detail.
  bool colour_lost(const Shape& in) const { return in[0] == 1 && colour * 2 > colour + grey; }
  bool detail_lost(const Shape& in) const {
    return std::max(in[1], in[2]) < 64 && std::min(w, h) >= 4 * std::max(in[1], in[2]);
  }
};

PictureSurvey survey(const std::vector<ImageHeader>& sampled) {
  PictureSurvey s;
  std::vector<int64_t> ws, hs;
  for (const ImageHeader& h : sampled) {
    if (h.w <= 0 || h.h <= 0) continue;
    ws.push_back(h.w);
    hs.push_back(h.h);
    s.colour += h.channels == 3;
    s.grey += h.channels == 1;
  }
  s.files = int64_t(ws.size());
  if (ws.empty()) return s;
  auto median = [](std::vector<int64_t>& v) {
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  s.w = median(ws);
  s.h = median(hs);
  return s;
}

}  // namespace

std::string picture_note(const std::vector<ImageHeader>& sampled, const Shape& input) {
  const PictureSurvey s = survey(sampled);
  if (s.files == 0) return {};
  const int known = s.colour + s.grey;
  std::string note = "about " + std::to_string(s.w) + "×" + std::to_string(s.h) + " px";
  if (known > 0)
    note += s.colour == known ? ", in colour"
            : s.grey == known
                ? ", grey"
                : ", " + std::to_string(s.colour) + " of " + std::to_string(known) + " in colour";
  note += " (the median of " + std::to_string(s.files) + " files' headers)";
  if (!picture_shape(input)) return note;
  // Advice only where the Input loses what the files hold; a deliberate
  // small Input for large photos (transfer at 224 px) is left alone.
  if (s.colour_lost(input))
    note +=
        "; a 1-channel Input sees them grey: set the Input layer's channels to 3 to learn "
        "from their colour";
  if (s.detail_lost(input))
    note += "; at " + std::to_string(input[2]) + "×" + std::to_string(input[1]) +
            " px the Input keeps little of their detail: a larger Input (64 or 128) keeps more, "
            "at more memory and time";
  return note;
}

Shape suggested_input(const std::vector<ImageHeader>& sampled, const Shape& input) {
  const PictureSurvey s = survey(sampled);
  if (s.files == 0 || !picture_shape(input)) return {};
  const bool colour = s.colour_lost(input), detail = s.detail_lost(input);
  if (!colour && !detail) return {};
  const int64_t side = detail ? 64 : std::max(input[1], input[2]);
  return Shape{colour ? 3 : input[0], detail ? side : input[1], detail ? side : input[2]};
}

std::vector<uint8_t> read_image_chw(const std::string& path, const Shape& in,
                                    double crop_fraction) {
  if (!picture_shape(in))
    throw DataError("the network's input is " + in.str() +
                    ", not an image (channels×height×width with 1 or 3 channels)");
  ImageTransform t;
  t.input = in;
  t.crop_fraction = crop_fraction;
  std::vector<uint8_t> out(size_t(in.numel()));
  picture_to_chw(store_picture(decode_image(path, int(in[0]), stored_side(t)), t), t, 0, 0,
                 out.data());
  return out;
}

}  // namespace dc
