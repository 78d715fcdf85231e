#pragma once
// Deterministic random numbers. A fixed algorithm (not std::*_distribution,
// whose output differs between standard libraries) so that a seed gives the
// same run everywhere.
#include <cstdint>

namespace dc {

// splitmix64 at position i of the stream seeded with `seed`: a counter-based
// generator, so value i depends on i alone and a loop over i can run in any
// order or in parallel (Dropout's masks, TPE's per-trial seeds; the CUDA
// Dropout kernel computes the same in elementwise.cu).
inline uint64_t splitmix64_at(uint64_t seed, uint64_t i) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (i + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed = 0x9E3779B97F4A7C15ull) { reseed(seed); }
  void reseed(uint64_t seed);
  uint64_t next_u64();
  uint32_t next_u32() { return static_cast<uint32_t>(next_u64() >> 32); }
  // Uniform in [0, 1).
  float uniform() { return static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f); }
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
  float normal();  // standard normal (Box-Muller)
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n);

 private:
  uint64_t s_[4];
  bool has_spare_ = false;
  float spare_ = 0;
};

}  // namespace dc
