// JPEG decoding through libjpeg's own API (jpeg_decode.h).
#include "jpeg_decode.h"

#if defined(DC_HAVE_OPENCV) && defined(DC_HAVE_LIBJPEG)

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

namespace dc {

namespace {

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

// Fatal errors come back to decode_jpeg through longjmp: libjpeg is C, and
// an exception thrown through its frames is not something it promises to
// survive.
[[noreturn]] void error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (extraneous bytes, a premature end that the tail check let
// through) are not printed: the picture is kept, as OpenCV keeps it.
void output_message(j_common_ptr) {}

uint16_t read16(const uint8_t* p, bool little) {
  return little ? uint16_t(p[0] | p[1] << 8) : uint16_t(p[0] << 8 | p[1]);
}
uint32_t read32(const uint8_t* p, bool little) {
  return little
             ? uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24
             : uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// The Orientation tag (0x0112) of IFD0 in an APP1 "Exif" segment; 1 (as
// stored) when absent or malformed. Every offset is checked against the
// segment: the file is untrusted.
int exif_orientation(const jpeg_decompress_struct& cinfo) {
  for (jpeg_saved_marker_ptr m = cinfo.marker_list; m; m = m->next) {
    if (m->marker != JPEG_APP0 + 1 || m->data_length < 14) continue;
    const uint8_t* d = m->data;
    if (std::memcmp(d, "Exif\0\0", 6) != 0) continue;
    const uint8_t* tiff = d + 6;
    const size_t n = m->data_length - 6;
    bool little;
    if (tiff[0] == 'I' && tiff[1] == 'I')
      little = true;
    else if (tiff[0] == 'M' && tiff[1] == 'M')
      little = false;
    else
      return 1;
    const uint32_t ifd = read32(tiff + 4, little);
    if (ifd > n || n - ifd < 2) return 1;
    const uint16_t entries = read16(tiff + ifd, little);
    for (uint32_t e = 0; e < entries; ++e) {
      const size_t at = size_t(ifd) + 2 + size_t(e) * 12;
      if (at + 12 > n) return 1;
      if (read16(tiff + at, little) != 0x0112) continue;
      const int v = read16(tiff + at + 8, little);  // a SHORT, left-justified
      return v >= 1 && v <= 8 ? v : 1;
    }
    return 1;
  }
  return 1;
}

// The same operations, in the same order, as OpenCV's ExifTransform, so
// either decoder turns a picture the same way.
void apply_orientation(cv::Mat& img, int orientation) {
  switch (orientation) {
    case 2:
      cv::flip(img, img, 1);
      break;
    case 3:
      cv::flip(img, img, -1);
      break;
    case 4:
      cv::flip(img, img, 0);
      break;
    case 5:
      cv::transpose(img, img);
      break;
    case 6:
      cv::transpose(img, img);
      cv::flip(img, img, 1);
      break;
    case 7:
      cv::transpose(img, img);
      cv::flip(img, img, -1);
      break;
    case 8:
      cv::transpose(img, img);
      cv::flip(img, img, 0);
      break;
    default:
      break;
  }
}

// The libjpeg part, in a function of its own with nothing to destroy in its
// frame, which is what setjmp/longjmp allow. `px` is sized by the caller
// from the output dimensions this reports through `begin`.
struct Decoded {
  int h = 0, w = 0, c = 0, orientation = 1;
};

JpegResult run_libjpeg(const uint8_t* data, size_t size, int channels, int at_least,
                       std::vector<uint8_t>& px, Decoded& info, char* message) {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = error_exit;
  err.pub.output_message = output_message;
  err.message[0] = '\0';
  // Volatile: changed between setjmp and a longjmp, read after it.
  volatile bool created = false;
  if (setjmp(err.jump)) {
    std::snprintf(message, JMSG_LENGTH_MAX, "%s", err.message);
    if (created) jpeg_destroy_decompress(&cinfo);
    return JpegResult::Corrupt;
  }
  jpeg_create_decompress(&cinfo);
  created = true;
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xFFFF);
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&cinfo);
    return JpegResult::Unsupported;
  }
  info.orientation = exif_orientation(cinfo);
  const bool grey_file = cinfo.jpeg_color_space == JCS_GRAYSCALE;
  // A colour file asked for grey is decoded in colour and converted by the
  // caller with OpenCV's weights (libjpeg's grey is the file's Y channel,
  // rounded differently).
  cinfo.out_color_space = grey_file && channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  cinfo.scale_num = 1;
  cinfo.scale_denom =
      static_cast<unsigned>(jpeg_reduction(cinfo.image_height, cinfo.image_width, at_least));
  jpeg_start_decompress(&cinfo);
  info.h = int(cinfo.output_height);
  info.w = int(cinfo.output_width);
  info.c = int(cinfo.output_components);
  const size_t stride = size_t(info.w) * size_t(info.c);
  px.resize(stride * size_t(info.h));
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = px.data() + size_t(cinfo.output_scanline) * stride;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return JpegResult::Decoded;
}

}  // namespace

JpegResult decode_jpeg(const uint8_t* data, size_t size, int channels, int at_least, Picture& out,
                       std::string& error) {
  std::vector<uint8_t> px;
  Decoded info;
  char message[JMSG_LENGTH_MAX] = {0};
  const JpegResult r = run_libjpeg(data, size, channels, at_least, px, info, message);
  if (r == JpegResult::Corrupt) error = message;
  if (r != JpegResult::Decoded) return r;
  cv::Mat img(info.h, info.w, info.c == 1 ? CV_8UC1 : CV_8UC3, px.data());
  if (info.c == 3 && channels == 1) {
    cv::Mat grey;
    cv::cvtColor(img, grey, cv::COLOR_RGB2GRAY);
    img = grey;
  }
  apply_orientation(img, info.orientation);
  out.h = img.rows;
  out.w = img.cols;
  out.c = channels;
  if (img.data == px.data() && img.isContinuous() && img.channels() == channels) {
    out.px = std::move(px);  // no turn, no conversion: the bytes as decoded
  } else {
    out.px.resize(size_t(out.bytes()));
    cv::Mat dst(out.h, out.w, img.type(), out.px.data());
    if (img.channels() == 1 && channels == 3)
      cv::cvtColor(img, dst, cv::COLOR_GRAY2RGB);
    else
      img.copyTo(dst);
    if (dst.data != out.px.data()) {
      error = "could not be converted";
      return JpegResult::Corrupt;
    }
  }
  return JpegResult::Decoded;
}

}  // namespace dc

#else

namespace dc {
JpegResult decode_jpeg(const uint8_t*, size_t, int, int, Picture&, std::string&) {
  return JpegResult::Unsupported;
}
}  // namespace dc

#endif

namespace dc {
int jpeg_reduction(int64_t h, int64_t w, int side) {
  const int64_t shorter = h < w ? h : w;
  if (side <= 0) return 1;
  for (int r : {8, 4, 2})
    if (shorter >= int64_t(side) * r) return r;
  return 1;
}
}  // namespace dc
