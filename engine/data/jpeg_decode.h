#pragma once
// JPEG decoding straight through libjpeg(-turbo), for image folders. OpenCV
// 4.6 decodes a JPEG to RGB, swaps it to BGR with a byte-by-byte loop and
// leaves the swap back to RGB to us: two passes over every full-size
// picture that were a fifth of the input pipeline (perf, issue 31). Here
// libjpeg writes RGB (or grey) into the picture itself. Internal to the data
// library.
#include <deepcanvas/image_data.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace dc {

enum class JpegResult {
  Decoded,
  Unsupported,  // left to OpenCV: CMYK and YCCK (Adobe) files
  Corrupt,      // `error` says why
};

// Decodes to `channels` (1: grey, 3: RGB) with the EXIF orientation applied
// as OpenCV applies it. A colour file asked for grey goes through RGB and
// the same weights as OpenCV's, so either decoder gives the same bytes.
// With `at_least` > 0 the picture may come out 2, 4 or 8 times smaller in
// each direction, scaled in the DCT, as long as its shorter side stays at
// least that many pixels (jpeg_reduction).
JpegResult decode_jpeg(const uint8_t* data, size_t size, int channels, int at_least, Picture& out,
                       std::string& error);

// The largest of 1, 2, 4 and 8 that keeps an h×w JPEG's shorter side at
// least `side` pixels when decoded that much smaller (1 when side is 0).
int jpeg_reduction(int64_t h, int64_t w, int side);

}  // namespace dc
