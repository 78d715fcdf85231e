// ONNX import from bytes: parsing, the checker, initializer data against
// its dims, constant folding and the op-to-layer patterns. Anything but a
// dc::Error (a crash, a sanitizer report, another exception) is a finding.
#include <deepcanvas/onnx.h>

#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dc::fuzz::expect_clean([&] {
    dc::onnx_import_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx");
  });
  return 0;
}
