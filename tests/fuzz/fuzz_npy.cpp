// NumPy .npy arrays (the input of `deepcanvas-cli run`): parse the bytes;
// whatever parses must write back and re-read to the same shape and values,
// so the writer and reader agree on every header the reader accepts.
#include <deepcanvas/npy.h>

#include <cstdlib>
#include <cstring>

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  dc::fuzz::expect_clean([&] {
    dc::NpyArray a = dc::parse_npy(bytes, "fuzz input");
    dc::NpyArray b = dc::parse_npy(dc::npy_bytes(a.data, a.shape), "round trip");
    // Bitwise comparison: NaN payloads must survive too.
    if (b.shape != a.shape || b.data.bytes() != a.data.bytes()) std::abort();
    if (a.data.bytes() > 0 && std::memcmp(b.data.raw(), a.data.raw(), a.data.bytes()) != 0)
      std::abort();
  });
  return 0;
}
