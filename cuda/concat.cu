// Concat: each input is a [outer, block] slab copied into columns
// [offset, offset + block) of the [outer, total] output.
#include "kernels.h"

namespace dc::cuda {
namespace {

__global__ void k_concat_fwd(const float* x, float* y, int64_t outer, int64_t block, int64_t total,
                             int64_t offset) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= outer * block) return;
  y[i / block * total + offset + i % block] = x[i];
}
__global__ void k_concat_bwd(const float* dy, float* dx, int64_t outer, int64_t block,
                             int64_t total, int64_t offset) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= outer * block) return;
  dx[i] += dy[i / block * total + offset + i % block];
}

}  // namespace

void concat_forward(const float* x, float* y, int64_t outer, int64_t block, int64_t total,
                    int64_t offset, cudaStream_t s) {
  int64_t n = outer * block;
  k_concat_fwd<<<int((n + 255) / 256), 256, 0, s>>>(x, y, outer, block, total, offset);
}
void concat_backward(const float* dy, float* dx, int64_t outer, int64_t block, int64_t total,
                     int64_t offset, cudaStream_t s) {
  int64_t n = outer * block;
  k_concat_bwd<<<int((n + 255) / 256), 256, 0, s>>>(dy, dx, outer, block, total, offset);
}

}  // namespace dc::cuda
