#include "image_input.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include <deepcanvas/errors.h>

#ifdef DC_HAVE_OPENCV
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace dc::cli {

std::vector<std::string> image_paths(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  static const std::set<std::string> kImageExtensions = {".png", ".jpg", ".jpeg", ".bmp",  ".pgm",
                                                         ".ppm", ".pbm", ".tif",  ".tiff", ".webp"};
  std::vector<std::string> out;
  for (const std::string& a : args) {
    std::error_code ec;
    if (!fs::is_directory(a, ec)) {
      out.push_back(a);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(a, ec)) {
      std::string ext = entry.path().extension().string();
      std::transform(ext.begin(), ext.end(), ext.begin(),
                     [](unsigned char ch) { return char(std::tolower(ch)); });
      if (entry.is_regular_file(ec) && kImageExtensions.count(ext))
        found.push_back(entry.path().string());
    }
    if (ec) throw IoError(a + ": cannot list the directory (" + ec.message() + ")");
    if (found.empty())
      throw IoError(a +
                    ": is a directory with no image files (.png, .jpg, .bmp, .pgm, .ppm, "
                    ".tif, .webp)");
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

#ifdef DC_HAVE_OPENCV
bool opencv_enabled() {
  return true;
}

Tensor load_image_input(const std::string& path, const Shape& in, float mean, float stddev,
                        const std::vector<float>& channel_mean,
                        const std::vector<float>& channel_std) {
  if (in.rank() != 3 || (in[0] != 1 && in[0] != 3))
    throw Error("the network's input is " + in.str() +
                ", not an image (channels×height×width with 1 or 3 channels)");
  // Checked first: OpenCV would also print its own warning for a missing file.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw IoError(path + ": no such file");
  cv::Mat resized;
  try {
    cv::Mat img = cv::imread(path, in[0] == 1 ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
    if (img.empty())
      throw IoError(path + ": cannot be read as an image (missing, unreadable or not an image)");
    cv::resize(img, resized, cv::Size(int(in[2]), int(in[1])), 0, 0, cv::INTER_AREA);
    if (in[0] == 3) cv::cvtColor(resized, resized, cv::COLOR_BGR2RGB);
  } catch (const cv::Exception& e) {
    // OpenCV refuses images above its pixel limit with an assertion text
    // that names neither the file nor the limit.
    throw IoError(path + ": cannot be read as an image (" + e.err +
                  "); images above OpenCV's limit of 2^30 pixels are refused");
  }
  const bool per_channel =
      int64_t(channel_mean.size()) == in[0] && channel_std.size() == channel_mean.size();
  Tensor x(in.with_batch(1));
  const int64_t hw = in[1] * in[2];
  for (int64_t y = 0; y < in[1]; ++y)
    for (int64_t xx = 0; xx < in[2]; ++xx)
      for (int64_t c = 0; c < in[0]; ++c) {
        float p = resized.ptr<uint8_t>(int(y))[xx * in[0] + c] / 255.0f;
        x.f32()[c * hw + y * in[2] + xx] =
            per_channel ? (p - channel_mean[size_t(c)]) / channel_std[size_t(c)]
                        : (p - mean) / stddev;
      }
  return x;
}
#else
bool opencv_enabled() {
  return false;
}

Tensor load_image_input(const std::string& path, const Shape&, float, float,
                        const std::vector<float>&, const std::vector<float>&) {
  throw Error("cannot read " + path +
              ": this build has no OpenCV; use --index N to predict a test sample");
}
#endif

}  // namespace dc::cli
