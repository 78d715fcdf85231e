#include <deepcanvas/rng.h>

#include <cmath>

namespace dc {

// xoshiro256** seeded through splitmix64: fast, well distributed, and fully
// specified, so runs repeat across compilers and platforms.
static uint64_t splitmix64(uint64_t& x) {
  const uint64_t z = splitmix64_at(x, 0);
  x += 0x9E3779B97F4A7C15ull;
  return z;
}

static inline uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

void Rng::reseed(uint64_t seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = splitmix64(x);
  has_spare_ = false;
}

uint64_t Rng::next_u64() {
  uint64_t result = rotl(s_[1] * 5, 7) * 9;
  uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

float Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  float u1 = uniform(), u2 = uniform();
  if (u1 < 1e-12f) u1 = 1e-12f;
  float r = std::sqrt(-2.0f * std::log(u1));
  float th = 6.2831853071795864f * u2;
  spare_ = r * std::sin(th);
  has_spare_ = true;
  return r * std::cos(th);
}

uint64_t Rng::below(uint64_t n) {
  // Lemire's unbiased bounded draw.
  if (n == 0) return 0;
  uint64_t threshold = (0 - n) % n;
  for (;;) {
    uint64_t r = next_u64();
    if (r >= threshold) return r % n;
  }
}

}  // namespace dc
