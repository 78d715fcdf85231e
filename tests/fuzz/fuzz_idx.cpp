// IDX files, raw and gzip: the input is read as the labels file (with valid
// images) when its header says rank 1, or a gzip input has an odd length,
// and otherwise as the images file (with valid labels); the bytes
// themselves are untouched.
#include <deepcanvas/data.h>

#include "fuzz_util.h"

namespace {

std::string g_images, g_labels;

std::string write(const std::string& name, const std::string& bytes) {
  return dc::fuzz::write_scratch(name, reinterpret_cast<const uint8_t*>(bytes.data()),
                                 bytes.size());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Two 2x2 images and their two labels.
  g_images = write("valid-images", std::string("\0\0\x08\x03\0\0\0\x02\0\0\0\x02\0\0\0\x02"
                                               "\x01\x02\x03\x04\x05\x06\x07\x08",
                                               24));
  g_labels = write("valid-labels", std::string("\0\0\x08\x01\0\0\0\x02\x00\x01", 10));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = dc::fuzz::write_scratch("input-idx", data, size);
  dc::fuzz::expect_clean([&] {
    const bool gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    const bool labels = gzip ? size % 2 == 1 : size >= 4 && data[3] == 1;
    if (labels)
      dc::load_idx(g_images, path);
    else
      dc::load_idx(path, g_labels);
  });
  return 0;
}
