#pragma once
// Reading and writing mixed precision's 16-bit values as float32: widen
// any of float/bf16/fp16 to float; put a float into any of them (rounded
// to nearest even, as torch's .to(bfloat16) / .half() do; fp16 overflows
// to inf, which the loss scaler detects), added onto a float32 target when
// acc. Include from .cu files only.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace dc::cuda {

__device__ inline float widen(float v) {
  return v;
}
__device__ inline float widen(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ inline float widen(__half v) {
  return __half2float(v);
}
__device__ inline void put(float& d, float v, bool acc) {
  d = acc ? d + v : v;
}
__device__ inline void put(__nv_bfloat16& d, float v, bool) {
  d = __float2bfloat16_rn(v);
}
__device__ inline void put(__half& d, float v, bool) {
  d = __float2half_rn(v);
}

}  // namespace dc::cuda
