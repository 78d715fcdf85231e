// CSV sequence files (sliding windows over numeric rows); the window length
// comes from the input's length so every byte stays part of the file.
#include <deepcanvas/data.h>
#include <deepcanvas/sequence_data.h>

#include <vector>

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = dc::fuzz::write_scratch("input.csv", data, size);
  dc::CsvSequenceOptions o;
  o.window = 1 + int64_t(size % 4);
  dc::fuzz::expect_clean([&] {
    // What loads is also read: every window made (they are made from the
    // rows as they are read) and normalised over.
    dc::TrainTest tt = dc::load_csv_sequences(path, o);
    dc::compute_normalization(tt.train);
    for (const dc::Dataset* d : {&tt.train, &tt.test}) {
      std::vector<float> x(size_t(d->size() * d->sample_shape.numel()));
      d->copy_values(0, d->size(), x.data());
    }
  });
  return 0;
}
