// What every CUDA op shares: the cuDNN workspace grown on demand.
#include "ops.h"

namespace dc::cuda {

float* OpContext::ws(size_t bytes, const std::string& what) {
  if (workspace->bytes() < bytes) {
    workspace->reset();
    *workspace = DeviceBuffer(*alloc, bytes, "cuDNN workspace of " + what);
    ++ws_generation;
  }
  return workspace->get();
}

}  // namespace dc::cuda
