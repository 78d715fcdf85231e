// Listed image files as samples of the Input (image_data.h). A first
// version: pictures decoded into memory, the evaluation transform for every
// draw. The streaming path, the cache and the training transforms follow.
#include <deepcanvas/image_data.h>

#include <algorithm>
#include <cmath>

#ifdef DC_HAVE_OPENCV
#include <opencv2/imgproc.hpp>
#endif

namespace dc {

#ifdef DC_HAVE_OPENCV
void picture_to_chw(const Picture& p, const ImageTransform& t, uint64_t, int64_t, uint8_t* chw) {
  const int C = int(t.input[0]), H = int(t.input[1]), W = int(t.input[2]);
  if (p.c != C)
    throw DataError("a picture of " + std::to_string(p.c) + " channels for an Input of " +
                    std::to_string(C));
  cv::Mat src(p.h, p.w, C == 1 ? CV_8UC1 : CV_8UC3, const_cast<uint8_t*>(p.px.data()));
  // Cover H/f × W/f, then the centre H×W.
  const double scale = std::max(double(H) / p.h, double(W) / p.w) / t.crop_fraction;
  const int rw = std::max(W, int(std::lround(p.w * scale))),
            rh = std::max(H, int(std::lround(p.h * scale)));
  cv::Mat resized;
  cv::resize(src, resized, cv::Size(rw, rh), 0, 0, scale < 1 ? cv::INTER_AREA : cv::INTER_LINEAR);
  const int x0 = (rw - W) / 2, y0 = (rh - H) / 2;
  const int64_t hw = int64_t(H) * W;
  for (int y = 0; y < H; ++y) {
    const uint8_t* row = resized.ptr<uint8_t>(y0 + y) + size_t(x0) * C;
    for (int x = 0; x < W; ++x)
      for (int c = 0; c < C; ++c) chw[c * hw + int64_t(y) * W + x] = row[x * C + c];
  }
}
#else
void picture_to_chw(const Picture&, const ImageTransform&, uint64_t, int64_t, uint8_t*) {
  throw IoError("this build of DeepCanvas has no OpenCV");
}
#endif

namespace {

class MemorySamples : public ImageSamples {
 public:
  MemorySamples(std::vector<ImageItem> items, const ImageTransform& t, const ImageLoadOptions& o,
                const ImageProgress& progress)
      : items_(std::move(items)), t_(t) {
    pics_.resize(items_.size());
    for (size_t i = 0; i < items_.size(); ++i) {
      try {
        pics_[i] = decode_image(items_[i].path, int(t.input[0]));
      } catch (const ImageError& e) {
        if (o.bad_images_are_errors) throw;
        log_.count++;
        if (log_.files.size() < 100) log_.files.push_back({e.path(), fault_name(e.fault()), true});
      }
      if (progress && !progress(int64_t(i + 1), int64_t(items_.size()))) throw Error("cancelled");
    }
  }
  int64_t size() const override { return int64_t(items_.size()); }
  bool sample(int64_t i, uint64_t seed, uint8_t* chw) const override {
    const Picture& p = pics_.at(size_t(i));
    if (p.px.empty()) {
      std::fill(chw, chw + t_.input.numel(), uint8_t(0));
      return false;
    }
    picture_to_chw(p, t_, seed, i, chw);
    return true;
  }
  Picture picture(int64_t i) const override { return pics_.at(size_t(i)); }
  const ImageItem& item(int64_t i) const override { return items_.at(size_t(i)); }
  const ImageTransform& transform() const override { return t_; }
  bool streaming() const override { return false; }
  std::string mode_note() const override { return "held in memory"; }
  BadImageLog bad() const override { return log_; }

 private:
  std::vector<ImageItem> items_;
  ImageTransform t_;
  std::vector<Picture> pics_;
  BadImageLog log_;
};

}  // namespace

std::shared_ptr<ImageSamples> make_image_samples(std::vector<ImageItem> items,
                                                 const ImageTransform& t, const ImageLoadOptions& o,
                                                 const ImageProgress& progress) {
  if (t.input.rank() != 3 || (t.input[0] != 1 && t.input[0] != 3))
    throw DataError("the network's Input is " + t.input.str() +
                    "; images need channels×height×width with 1 or 3 channels");
  return std::make_shared<MemorySamples>(std::move(items), t, o, progress);
}

TrainTest load_image_dataset(const ImageList& list, const ImageTransform& t,
                             const ImageLoadOptions& o, ImageDataReport* report,
                             const ImageProgress& progress) {
  TrainTest tt;
  std::vector<ImageItem> train = list.train;
  std::vector<int64_t> validation;
  for (const ImageItem& v : list.val) {
    validation.push_back(int64_t(train.size()));
    train.push_back(v);
  }
  auto fill = [&](Dataset& d, std::vector<ImageItem> items) {
    d.sample_shape = t.input;
    d.num_classes = int(list.class_names.size());
    d.class_names = list.class_names;
    d.source = list.root;
    for (const ImageItem& it : items) d.labels.push_back(it.label);
    d.images = make_image_samples(std::move(items), t, o, progress);
  };
  fill(tt.train, std::move(train));
  tt.train.validation = std::move(validation);
  if (!list.test.empty()) fill(tt.test, list.test);
  if (report) {
    report->list = list;
    report->mode_note = tt.train.images->mode_note();
  }
  return tt;
}

std::vector<uint8_t> read_image_chw(const std::string& path, const Shape& in,
                                    double crop_fraction) {
  if (in.rank() != 3 || (in[0] != 1 && in[0] != 3))
    throw DataError("the network's input is " + in.str() +
                    ", not an image (channels×height×width with 1 or 3 channels)");
  ImageTransform t;
  t.input = in;
  t.crop_fraction = crop_fraction;
  std::vector<uint8_t> out(size_t(in.numel()));
  picture_to_chw(decode_image(path, int(in[0])), t, 0, 0, out.data());
  return out;
}

}  // namespace dc
