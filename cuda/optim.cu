// Fused optimizer updates over every parameter at once (they live in one
// contiguous buffer): one launch per step instead of one per tensor. The
// arithmetic is torch.optim's, as in the CPU optimizers.
#include "kernels.h"

namespace dc::cuda {
namespace {

__global__ void k_adam(float* w, const float* g, float* m, float* v, const uint8_t* decay,
                       int64_t n, AdamArgs a, const int* skip, const AdamArgs* dyn) {
  if (skip && *skip) return;
  if (dyn) a = *dyn;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float wd = decay[i] ? a.weight_decay : 0.f;
    const float l2 = a.decoupled ? 0.f : wd;
    const float shrink = a.decoupled ? 1.f - a.lr * wd : 1.f;
    float wi = w[i];
    float gi = g[i] + l2 * wi;
    float mi = a.beta1 * m[i] + (1.f - a.beta1) * gi;
    float vi = a.beta2 * v[i] + (1.f - a.beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float denom = sqrtf(vi) * a.inv_sqrt_bc2 + a.eps;
    w[i] = wi * shrink - (a.lr / a.bc1) * mi / denom;
  }
}

__global__ void k_sgd(float* w, const float* g, float* buf, const uint8_t* decay, int64_t n,
                      float lr, float mu, float wd, bool nesterov, bool first, const int* skip,
                      const float* dyn_lr) {
  if (skip && *skip) return;
  if (dyn_lr) lr = *dyn_lr;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float d = g[i] + (decay[i] ? wd : 0.f) * w[i];
    if (mu == 0.f) {
      w[i] -= lr * d;
      continue;
    }
    float vi = first ? d : mu * buf[i] + d;
    buf[i] = vi;
    w[i] -= lr * (nesterov ? d + mu * vi : vi);
  }
}

int blocks(int64_t n) {
  int64_t b = (n + 255) / 256;
  return int(b < 4096 ? (b > 0 ? b : 1) : 4096);
}

}  // namespace

void adam_step(float* w, const float* g, float* m, float* v, const uint8_t* decay, int64_t n,
               const AdamArgs& a, cudaStream_t s, const int* skip, const AdamArgs* dyn) {
  k_adam<<<blocks(n), 256, 0, s>>>(w, g, m, v, decay, n, a, skip, dyn);
}
void sgd_step(float* w, const float* g, float* buf, const uint8_t* decay, int64_t n, float lr,
              float mu, float wd, bool nesterov, bool first, cudaStream_t s, const int* skip,
              const float* dyn_lr) {
  k_sgd<<<blocks(n), 256, 0, s>>>(w, g, buf, decay, n, lr, mu, wd, nesterov, first, skip, dyn_lr);
}

}  // namespace dc::cuda
