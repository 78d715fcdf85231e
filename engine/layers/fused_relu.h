// The ReLU or ReLU6 a layer applies to its own output when the plan fuses
// one into it (Layer::fuse_relu): Conv2D (and its oneDNN path), BatchNorm
// and Add.
// The arithmetic is the ReLU and ReLU6 layers' own (activation.cpp), so a
// fused network computes what the unfused one does, bit for bit.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "lanes.h"

namespace dc {

enum class Act { None, Relu, Relu6 };

// f(v): std::max/min return their first argument for NaN, so NaN stays NaN
// as in PyTorch.
template <Act A>
inline float act(float v, float cap) {
  if constexpr (A == Act::None) return v;
  if constexpr (A == Act::Relu) return std::max(v, 0.0f);
  if constexpr (A == Act::Relu6) return std::min(std::max(v, 0.0f), cap);
}

// f'(.) from the output y: 1 strictly inside (0, cap), as the layers' df.
template <Act A>
inline float act_grad(float y, float cap) {
  if constexpr (A == Act::None) return 1.0f;
  if constexpr (A == Act::Relu) return y > 0.0f ? 1.0f : 0.0f;
  if constexpr (A == Act::Relu6) return y > 0.0f && y < cap ? 1.0f : 0.0f;
}

// The same on four values at once (Lanes terms): 1 or 0 per element.
template <Act A>
inline f4 act_grad(f4 y, float cap) {
  const f4 one = f4{} + 1.0f, zero = f4{};
  if constexpr (A == Act::None) return one;
  if constexpr (A == Act::Relu) return y > 0.0f ? one : zero;
  if constexpr (A == Act::Relu6) return ((y > 0.0f) & (y < cap)) ? one : zero;
}

// dst = f(src), n values; dst may be src.
template <Act A>
inline void activate(const float* src, float* dst, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) dst[i] = act<A>(src[i], cap);
}

// g = dy * f'(y): the activation's backward from its output y. Inline with
// restrict pointers so that each caller's loop vectorises.
template <Act A>
inline void mask_grad(const float* __restrict dy, const float* __restrict y, float* __restrict g,
                      int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) g[i] = dy[i] * act_grad<A>(y[i], cap);
}

struct FusedRelu {
  Act kind = Act::None;
  float cap = std::numeric_limits<float>::infinity();

  // What Layer::fuse_relu asks for: a ReLU, or a ReLU6 when cap is finite.
  bool fuse(float c) {
    kind = std::isfinite(c) ? Act::Relu6 : Act::Relu;
    cap = c;
    return true;
  }

  bool on() const { return kind != Act::None; }

  // Calls f with the kind as a compile-time constant, so the loops inside
  // are instantiated per kind and vectorise without a branch per element.
  template <class F>
  decltype(auto) dispatch(F&& f) const {
    switch (kind) {
      case Act::Relu:
        return f(std::integral_constant<Act, Act::Relu>{});
      case Act::Relu6:
        return f(std::integral_constant<Act, Act::Relu6>{});
      default:
        return f(std::integral_constant<Act, Act::None>{});
    }
  }

  // The two loops above, for the kind this layer holds.
  void activate(const float* src, float* dst, int64_t n) const {
    dispatch([&](auto a) { dc::activate<decltype(a)::value>(src, dst, n, cap); });
  }
  void mask_grad(const float* dy, const float* y, float* g, int64_t n) const {
    dispatch([&](auto a) { dc::mask_grad<decltype(a)::value>(dy, y, g, n, cap); });
  }
};

}  // namespace dc
