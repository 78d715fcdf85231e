#include "gui/image_folder_dataset.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/rng.h>

#include <algorithm>
#include <filesystem>
#include <set>

#ifdef DC_HAVE_OPENCV
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif
#ifdef DC_HAVE_OPENCV_VIDEOIO
#include <opencv2/videoio.hpp>
#endif

namespace fs = std::filesystem;

namespace dc::gui {

namespace {

bool is_image_name(const fs::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), ::tolower);
  static const std::set<std::string> ok{".png", ".jpg", ".jpeg", ".bmp", ".pgm",
                                        ".ppm", ".tif", ".tiff", ".webp"};
  return ok.count(e) != 0;
}

std::string list_some(const std::vector<std::string>& v, size_t n = 5) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < n; ++i) s += (i ? ", " : "") + v[i];
  if (v.size() > n) s += " and " + std::to_string(v.size() - n) + " more";
  return s;
}

std::vector<fs::path> class_dirs(const fs::path& dir) {
  std::vector<fs::path> v;
  for (auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string()[0] != '.') v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

#ifdef DC_HAVE_OPENCV
bool image_folders_supported() {
  return true;
}

namespace {
// Decodes with the file's own channels so a mismatch can be reported, then
// converts to what the network reads.
bool convert(cv::Mat img, const Shape& in, std::vector<uint8_t>& out, bool* channels_differ);

bool decode(const std::string& path, const Shape& in, std::vector<uint8_t>& out,
            bool* channels_differ) {
  cv::Mat img = cv::imread(path, cv::IMREAD_UNCHANGED);
  if (img.empty()) return false;
  return convert(img, in, out, channels_differ);
}

bool convert(cv::Mat img, const Shape& in, std::vector<uint8_t>& out, bool* channels_differ) {
  if (img.depth() != CV_8U) img.convertTo(img, CV_8U, img.depth() == CV_16U ? 1.0 / 256 : 1.0);
  const int want = int(in[0]);
  int have = img.channels();
  if (channels_differ) *channels_differ = (have == 1) != (want == 1);
  cv::Mat conv;
  if (want == 1 && have == 1)
    conv = img;
  else if (want == 1)
    cv::cvtColor(img, conv, have == 4 ? cv::COLOR_BGRA2GRAY : cv::COLOR_BGR2GRAY);
  else
    cv::cvtColor(img, conv,
                 have == 1   ? cv::COLOR_GRAY2RGB
                 : have == 4 ? cv::COLOR_BGRA2RGB
                             : cv::COLOR_BGR2RGB);
  cv::Mat resized;
  cv::resize(conv, resized, cv::Size(int(in[2]), int(in[1])), 0, 0, cv::INTER_AREA);
  const int64_t hw = in[1] * in[2];
  out.assign(size_t(want * hw), 0);
  for (int64_t y = 0; y < in[1]; ++y) {
    const uint8_t* row = resized.ptr<uint8_t>(int(y));
    for (int64_t x = 0; x < in[2]; ++x)
      for (int c = 0; c < want; ++c) out[size_t(c * hw + y * in[2] + x)] = row[x * want + c];
  }
  return true;
}
}  // namespace

std::vector<uint8_t> read_image_chw(const std::string& path, const Shape& in) {
  if (in.rank() != 3 || (in[0] != 1 && in[0] != 3))
    throw DataError("the network's input is " + in.str() +
                    ", not an image (channels×height×width with 1 or 3 channels)");
  std::vector<uint8_t> v;
  if (!fs::is_regular_file(path)) throw IoError(path + ": no such file");
  if (!decode(path, in, v, nullptr))
    throw IoError(path + ": cannot be read as an image (corrupt, truncated or not an image)");
  return v;
}
std::vector<uint8_t> capture_camera_chw(int index, const Shape& in) {
  if (in.rank() != 3 || (in[0] != 1 && in[0] != 3))
    throw DataError("the network's input is " + in.str() + ", not an image");
#ifdef DC_HAVE_OPENCV_VIDEOIO
  cv::VideoCapture cam(index);
  if (!cam.isOpened()) throw IoError("no camera found (camera " + std::to_string(index) + ")");
  cv::Mat frame;
  // The first frames of many webcams are dark while exposure settles.
  for (int i = 0; i < 5; ++i) cam.read(frame);
  std::vector<uint8_t> v;
  if (frame.empty() || !convert(frame, in, v, nullptr))
    throw IoError("the camera gave no picture (camera " + std::to_string(index) + ")");
  return v;
#else
  (void)index;
  throw IoError("no camera support: this build's OpenCV has no videoio module");
#endif
}
#else
bool image_folders_supported() {
  return false;
}
namespace {
bool decode(const std::string&, const Shape&, std::vector<uint8_t>&, bool*) {
  return false;
}
}  // namespace
std::vector<uint8_t> read_image_chw(const std::string& path, const Shape&) {
  throw IoError("cannot read " + path + ": this build of DeepCanvas has no OpenCV");
}
std::vector<uint8_t> capture_camera_chw(int, const Shape&) {
  throw IoError("no camera support: this build of DeepCanvas has no OpenCV");
}
#endif

TrainTest load_image_folder(const std::string& dir, const Shape& in, double test_fraction,
                            uint64_t seed, ImageFolderReport* report) {
  ImageFolderReport local;
  ImageFolderReport& r = report ? *report : local;
  r = {};
  if (!image_folders_supported())
    throw DataError("image folders need OpenCV, which this build of DeepCanvas lacks");
  if (in.rank() != 3 || (in[0] != 1 && in[0] != 3))
    throw DataError("the network's Input is " + in.str() +
                    "; an image folder needs channels×height×width with 1 or 3 channels");
  if (!fs::is_directory(dir)) throw IoError("'" + dir + "' is not a folder");
  fs::path root(dir);
  bool presplit = fs::is_directory(root / "train") && fs::is_directory(root / "test");
  auto classes = class_dirs(presplit ? root / "train" : root);
  if (classes.empty())
    throw DataError("'" + dir +
                    "' has no class folders: put the images of each class in a subfolder "
                    "named after the class (e.g. cats/, dogs/)");
  for (auto& c : classes) r.classes.push_back(c.filename().string());
  r.counts.assign(classes.size(), 0);

  TrainTest tt;
  for (Dataset* d : {&tt.train, &tt.test}) {
    d->sample_shape = in;
    d->num_classes = int(classes.size());
    d->class_names = r.classes;
    d->source = dir;
  }
  std::vector<uint8_t> px;
  auto read_class = [&](const fs::path& cdir, int label, Dataset& into, bool count) {
    std::vector<fs::path> files;
    for (auto& e : fs::recursive_directory_iterator(cdir))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::vector<std::pair<std::vector<uint8_t>, int>> loaded;
    for (auto& f : files) {
      std::string rel = fs::relative(f, root).string();
      if (!is_image_name(f)) {
        r.skipped.push_back(rel);
        continue;
      }
      bool differ = false;
      if (!decode(f.string(), in, px, &differ)) {
        r.unreadable.push_back(rel);
        continue;
      }
      if (differ) {
        r.channel_mismatch.push_back(rel);
        continue;
      }
      into.pixels.insert(into.pixels.end(), px.begin(), px.end());
      into.labels.push_back(label);
      if (count) ++r.counts[label];
    }
  };
  for (size_t c = 0; c < classes.size(); ++c) {
    read_class(classes[c], int(c), tt.train, true);
    if (presplit && fs::is_directory(root / "test" / classes[c].filename()))
      read_class(root / "test" / classes[c].filename(), int(c), tt.test, false);
  }
  if (!r.unreadable.empty())
    throw DataError(std::to_string(r.unreadable.size()) +
                    " file(s) cannot be read as images (corrupt or truncated): " +
                    list_some(r.unreadable) + ". Remove or replace them.");
  if (!r.channel_mismatch.empty())
    throw DataError(std::to_string(r.channel_mismatch.size()) + " image(s) are " +
                    (in[0] == 1 ? "colour" : "greyscale") + " but the network's Input has " +
                    std::to_string(in[0]) + " channel(s): " + list_some(r.channel_mismatch) +
                    ". Convert them, or change the Input's shape to " + (in[0] == 1 ? "3" : "1") +
                    "×" + std::to_string(in[1]) + "×" + std::to_string(in[2]) + ".");
  for (size_t c = 0; c < classes.size(); ++c)
    if (r.counts[c] == 0)
      throw DataError("class folder '" + r.classes[c] + "' has no readable images");
  if (!presplit && test_fraction > 0) {
    // Per class, so every class is in the test set in proportion.
    Dataset all = std::move(tt.train);
    tt.train.pixels.clear();
    tt.train.labels.clear();
    const int64_t per = in.numel();
    Rng rng(seed);
    std::vector<std::vector<int64_t>> by_class(classes.size());
    for (int64_t i = 0; i < all.size(); ++i) by_class[all.labels[i]].push_back(i);
    std::fill(r.counts.begin(), r.counts.end(), 0);
    for (size_t c = 0; c < by_class.size(); ++c) {
      auto& v = by_class[c];
      for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
      size_t n_test = size_t(double(v.size()) * test_fraction + 0.5);
      if (n_test >= v.size()) n_test = v.size() - 1;  // keep at least one for training
      for (size_t i = 0; i < v.size(); ++i) {
        Dataset& d = i < n_test ? tt.test : tt.train;
        d.pixels.insert(d.pixels.end(), all.pixels.begin() + v[i] * per,
                        all.pixels.begin() + (v[i] + 1) * per);
        d.labels.push_back(int32_t(c));
        if (i >= n_test) ++r.counts[c];
      }
    }
    tt.train.sample_shape = tt.test.sample_shape = in;
    tt.train.num_classes = tt.test.num_classes = int(classes.size());
    tt.train.class_names = tt.test.class_names = r.classes;
    tt.train.source = tt.test.source = dir;
  }
  return tt;
}

}  // namespace dc::gui
