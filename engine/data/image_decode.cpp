// Decoding one image file (image_data.h). A first version: helpers harden
// the header checks (sniff_image) and the conversions.
#include <deepcanvas/image_data.h>

#include <filesystem>
#include <fstream>

#ifdef DC_HAVE_OPENCV
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif
#ifdef DC_HAVE_OPENCV_VIDEOIO
#include <opencv2/videoio.hpp>
#endif

namespace dc {

namespace fs = std::filesystem;

const char* fault_name(ImageFault f) {
  switch (f) {
    case ImageFault::Unreadable:
      return "unreadable";
    case ImageFault::Empty:
      return "empty file";
    case ImageFault::NotAnImage:
      return "not an image";
    case ImageFault::Truncated:
      return "truncated";
    case ImageFault::Corrupt:
      return "corrupt";
    case ImageFault::TooLarge:
      return "too large";
  }
  return "bad";
}

ImageError::ImageError(std::string path, ImageFault fault, const std::string& detail)
    : DataError(path + ": " + detail), path_(std::move(path)), fault_(fault) {}

namespace {

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec || !fs::exists(st))
    throw ImageError(path, ImageFault::Unreadable, "cannot be read (" + ec.message() + ")");
  if (!fs::is_regular_file(st))
    throw ImageError(path, ImageFault::Unreadable, "is not a regular file");
  const auto size = fs::file_size(path, ec);
  if (ec) throw ImageError(path, ImageFault::Unreadable, "cannot be read (" + ec.message() + ")");
  if (size == 0) throw ImageError(path, ImageFault::Empty, "is empty (0 bytes)");
  if (int64_t(size) > kMaxImageFileBytes)
    throw ImageError(path, ImageFault::TooLarge,
                     "is larger than " + std::to_string(kMaxImageFileBytes >> 20) +
                         " MB; DeepCanvas does not read image files that large");
  std::ifstream f(path, std::ios::binary);
  std::vector<uint8_t> v(size);
  if (!f || !f.read(reinterpret_cast<char*>(v.data()), std::streamsize(size)))
    throw ImageError(path, ImageFault::Unreadable, "cannot be read (permission denied?)");
  return v;
}

}  // namespace

ImageHeader sniff_image(const uint8_t* data, size_t size, const std::string& name) {
  if (size == 0) throw ImageError(name, ImageFault::Empty, "is empty (0 bytes)");
  ImageHeader h;
  auto starts = [&](const char* magic, size_t n) {
    return size >= n && std::equal(magic, magic + n, reinterpret_cast<const char*>(data));
  };
  if (starts("\x89PNG\r\n\x1a\n", 8))
    h.format = "png";
  else if (starts("\xff\xd8\xff", 3))
    h.format = "jpeg";
  else if (starts("BM", 2))
    h.format = "bmp";
  else if (starts("RIFF", 4) && size >= 12 && std::equal(data + 8, data + 12, "WEBP"))
    h.format = "webp";
  else if (starts("II*\0", 4) || starts("MM\0*", 4))
    h.format = "tiff";
  else if (size >= 2 && data[0] == 'P' && data[1] >= '1' && data[1] <= '6')
    h.format = "pnm";
  else
    throw ImageError(name, ImageFault::NotAnImage,
                     "is not an image (not PNG, JPEG, BMP, WebP, TIFF or PNM data)");
  return h;
}

ImageHeader check_image_file(const std::string& path) {
  std::vector<uint8_t> b = read_bytes(path);
  return sniff_image(b.data(), b.size(), path);
}

#ifdef DC_HAVE_OPENCV
bool image_decoding_supported() {
  return true;
}

namespace {
Picture to_picture(cv::Mat img, int channels, const std::string& name) {
  if (img.empty()) throw ImageError(name, ImageFault::Corrupt, "cannot be decoded (corrupt data)");
  if (img.depth() == CV_16U)
    img.convertTo(img, CV_8U, 1.0 / 257.0);
  else if (img.depth() != CV_8U)
    img.convertTo(img, CV_8U);
  cv::Mat out;
  const int have = img.channels();
  if (channels == 1)
    out = have == 1
              ? img
              : (cv::cvtColor(img, out, have == 4 ? cv::COLOR_BGRA2GRAY : cv::COLOR_BGR2GRAY), out);
  else
    cv::cvtColor(img, out,
                 have == 1   ? cv::COLOR_GRAY2RGB
                 : have == 4 ? cv::COLOR_BGRA2RGB
                             : cv::COLOR_BGR2RGB);
  Picture p;
  p.h = out.rows;
  p.w = out.cols;
  p.c = channels;
  p.px.resize(size_t(p.bytes()));
  for (int y = 0; y < p.h; ++y)
    std::copy(out.ptr<uint8_t>(y), out.ptr<uint8_t>(y) + size_t(p.w) * p.c,
              p.px.data() + size_t(y) * p.w * p.c);
  return p;
}
}  // namespace

Picture decode_image_bytes(const uint8_t* data, size_t size, int channels,
                           const std::string& name) {
  if (channels != 1 && channels != 3)
    throw DataError("images are decoded to 1 or 3 channels, not " + std::to_string(channels));
  sniff_image(data, size, name);
  cv::Mat buf(1, int(size), CV_8U, const_cast<uint8_t*>(data));
  cv::Mat img = cv::imdecode(
      buf, (channels == 1 ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR) | cv::IMREAD_ANYDEPTH);
  return to_picture(img, channels, name);
}

Picture decode_image(const std::string& path, int channels) {
  std::vector<uint8_t> b = read_bytes(path);
  return decode_image_bytes(b.data(), b.size(), channels, path);
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
  if (frame.empty())
    throw IoError("the camera gave no picture (camera " + std::to_string(index) + ")");
  ImageTransform t;
  t.input = in;
  t.crop_fraction = 1.0;
  std::vector<uint8_t> out(size_t(in.numel()));
  picture_to_chw(to_picture(frame, int(in[0]), "camera"), t, 0, 0, out.data());
  return out;
#else
  (void)index;
  throw IoError("no camera support: this build's OpenCV has no videoio module");
#endif
}
#else
bool image_decoding_supported() {
  return false;
}
Picture decode_image_bytes(const uint8_t*, size_t, int, const std::string& name) {
  throw IoError("cannot read " + name + ": this build of DeepCanvas has no OpenCV");
}
Picture decode_image(const std::string& path, int) {
  throw IoError("cannot read " + path + ": this build of DeepCanvas has no OpenCV");
}
std::vector<uint8_t> capture_camera_chw(int, const Shape&) {
  throw IoError("no camera support: this build of DeepCanvas has no OpenCV");
}
#endif

}  // namespace dc
