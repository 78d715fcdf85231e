#pragma once
// Samplers of a search space for sweeps: uniform random search and the
// Tree-structured Parzen Estimator (Bergstra et al. 2011), in Optuna's
// independent form: after n_startup random trials, the trials are split
// into the best gamma(n) = min(ceil(0.1 n), 25) ("below") and the rest;
// each parameter gets a Parzen density l(x) over the below trials and g(x)
// over the rest (truncated Gaussians at the observations plus a wide
// prior, bandwidth from the neighbours' distances as in Optuna), and of 24
// candidates drawn from l the one with the largest l(x)/g(x) is taken.
// Everything is drawn from dc::Rng seeded by (seed, trial), so a sweep
// repeats exactly and a resumed sweep samples what the uninterrupted one
// would have.
#include <deepcanvas/search_space.h>

#include <cstdint>
#include <vector>

namespace dc {

struct Observation {
  SearchPoint x;
  double value = 0;  // lower is better
  // How far the trial got (epochs); trials that got further rank first,
  // so a pruned trial never counts as better than a completed one.
  int64_t depth = 0;
};

class Sampler {
 public:
  virtual ~Sampler() = default;
  // The point of trial number `trial` given the finished trials so far.
  virtual SearchPoint sample(const std::vector<SearchParam>& space,
                             const std::vector<Observation>& done, int trial) = 0;
};

class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(uint64_t seed) : seed_(seed) {}
  SearchPoint sample(const std::vector<SearchParam>& space, const std::vector<Observation>& done,
                     int trial) override;

 private:
  uint64_t seed_;
};

class TpeSampler : public Sampler {
 public:
  explicit TpeSampler(uint64_t seed, int n_startup = 10, int n_candidates = 24)
      : seed_(seed), n_startup_(n_startup), n_candidates_(n_candidates) {}
  SearchPoint sample(const std::vector<SearchParam>& space, const std::vector<Observation>& done,
                     int trial) override;

 private:
  uint64_t seed_;
  int n_startup_, n_candidates_;
};

}  // namespace dc
