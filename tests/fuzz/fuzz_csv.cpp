// CSV sequence files (sliding windows over numeric rows); the window length
// comes from the input's length so every byte stays part of the file.
#include <deepcanvas/sequence_data.h>

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = dc::fuzz::write_scratch("input.csv", data, size);
  dc::CsvSequenceOptions o;
  o.window = 1 + int64_t(size % 4);
  dc::fuzz::expect_clean([&] { dc::load_csv_sequences(path, o); });
  return 0;
}
