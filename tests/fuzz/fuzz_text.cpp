// Text corpora (UTF-8, next-character windows); the window length comes
// from the input's length so every byte stays part of the file.
#include <deepcanvas/sequence_data.h>

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = dc::fuzz::write_scratch("input.txt", data, size);
  dc::TextOptions o;
  o.window = 1 + int64_t(size % 8);
  o.stride = 1 + int64_t(size % 3);
  dc::fuzz::expect_clean([&] { dc::load_text_dataset(path, o); });
  return 0;
}
