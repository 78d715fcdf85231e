// Sums in double over rows of floats that do not depend on the thread
// count (BatchNorm, LayerNorm): kLanes partial sums, element i of a row
// always in lane i % kLanes, added up in a fixed order at the end. Unlike a
// single running sum (one dependent add per element, which made BatchNorm
// 4x slower than its memory traffic) the lanes are independent.
//
// Written with GCC/Clang vector types rather than left to the
// auto-vectoriser: its SLP pass vectorised some terms and ran others (a
// BatchNorm gradient masked by a fused ReLU) a float at a time, three times
// slower, depending on what else the loop held.
#pragma once

#include <cstdint>
#include <cstring>

namespace dc {

using f4 = float __attribute__((vector_size(16)));
using d4 = double __attribute__((vector_size(32)));

inline d4 widen(f4 v) {
  return __builtin_convertvector(v, d4);
}
inline double widen(float v) {
  return v;
}

struct Lanes {
  static constexpr int64_t kLanes = 16;
  d4 v[kLanes / 4] = {};

  // Adds term(at) for i in [0, n), element i to lane i % kLanes. The term
  // reads its arrays through `at`: at(p) is p[i..i+3] (an f4) in the body
  // and p[i] (a float) in the tail, so one generic lambda serves both and
  // returns a d4 or a double. ahead(i) runs once per kLanes elements (a
  // cache line of floats): to prefetch the next row while this one is
  // summed.
  template <class Term, class Ahead>
  void add(int64_t n, Term term, Ahead ahead) {
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      ahead(i);
      for (int64_t k = 0; k < kLanes / 4; ++k) {
        const int64_t b = i + 4 * k;
        v[k] += term([b](const float* p) {
          f4 x;
          std::memcpy(&x, p + b, sizeof x);
          return x;
        });
      }
    }
    for (int64_t j = 0; i < n; ++i, ++j)
      v[j / 4][j % 4] += term([i](const float* p) { return p[i]; });
  }
  template <class Term>
  void add(int64_t n, Term term) {
    add(n, term, [](int64_t) {});
  }

  double total() const {
    double t = 0;
    for (int64_t j = 0; j < kLanes; ++j) t += v[j / 4][j % 4];
    return t;
  }
};

}  // namespace dc
