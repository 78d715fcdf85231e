#include "image_input.h"

#include <algorithm>
#include <filesystem>

#include <deepcanvas/errors.h>
#include <deepcanvas/image_data.h>

namespace dc::cli {

std::vector<std::string> image_paths(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const std::string& a : args) {
    std::error_code ec;
    if (!fs::is_directory(a, ec)) {
      out.push_back(a);
      continue;
    }
    const std::vector<std::string> found = image_files_in(a);
    if (found.empty()) {
      if (const std::string note = class_folders_note(a); !note.empty())
        throw IoError(note +
                      ": name one class folder, or evaluate on its test split with "
                      "`deepcanvas-cli eval PROJECT --checkpoint FILE --data " +
                      a + "`");
      std::string listed;
      for (const std::string& e : image_extensions()) listed += (listed.empty() ? "" : ", ") + e;
      throw IoError(a + ": is a directory with no image files (" + listed + ")");
    }
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

Tensor load_image_input(const std::string& path, const Shape& in, double crop_fraction, float mean,
                        float stddev, const std::vector<float>& channel_mean,
                        const std::vector<float>& channel_std) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw IoError(path + ": no such file");
  if (!image_decoding_supported())
    throw Error("cannot read " + path +
                ": this build has no OpenCV; use --index N to predict a test sample");
  // The engine's reader, as the Inference tab's: the same decoders, checks
  // and evaluation crop, so a picture predicts as evaluation saw it.
  std::vector<uint8_t> chw;
  try {
    chw = read_image_chw(path, in, crop_fraction);
  } catch (const ImageError& e) {
    throw IoError(path + ": cannot be read as an image (" + e.detail() + ")");
  }
  const bool per_channel =
      int64_t(channel_mean.size()) == in[0] && channel_std.size() == channel_mean.size();
  Tensor x(in.with_batch(1));
  const int64_t hw = in[1] * in[2];
  for (int64_t c = 0; c < in[0]; ++c)
    for (int64_t i = 0; i < hw; ++i) {
      const float p = chw[size_t(c * hw + i)] / 255.0f;
      x.f32()[c * hw + i] = per_channel ? (p - channel_mean[size_t(c)]) / channel_std[size_t(c)]
                                        : (p - mean) / stddev;
    }
  return x;
}

}  // namespace dc::cli
