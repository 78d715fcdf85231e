// Random search and TPE over a SearchSpace. Parameters are sampled in an
// internal coordinate: log(x) for Log, x for Float, x widened by half a step
// on each side for Int (so the end values are as likely as the others),
// the index for Choice.
#include <deepcanvas/errors.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/tpe.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace dc {

namespace {

double uniform01(Rng& r) {
  return double(r.next_u64() >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t trial_seed(uint64_t seed, int trial) {
  return splitmix64_at(seed, uint64_t(trial));  // independent streams per trial
}

struct Bounds {
  double a, b;
};

Bounds internal_bounds(const SearchParam& p) {
  switch (p.kind) {
    case SearchParam::Kind::Log:
      return {std::log(p.lo), std::log(p.hi)};
    case SearchParam::Kind::Int:
      return {p.lo - 0.5, p.hi + 0.5};
    case SearchParam::Kind::Float:
      return {p.lo, p.hi};
    case SearchParam::Kind::Choice:
      break;
  }
  return {0, double(p.choices.size())};
}

double to_internal(const SearchParam& p, double x) {
  return p.kind == SearchParam::Kind::Log ? std::log(x) : x;
}

double from_internal(const SearchParam& p, double u) {
  switch (p.kind) {
    case SearchParam::Kind::Log:
      return std::clamp(std::exp(u), p.lo, p.hi);
    case SearchParam::Kind::Int:
      return std::clamp(std::round(u), p.lo, p.hi);
    case SearchParam::Kind::Float:
      return std::clamp(u, p.lo, p.hi);
    case SearchParam::Kind::Choice:
      break;
  }
  return u;
}

double random_coordinate(const SearchParam& p, Rng& r) {
  if (p.kind == SearchParam::Kind::Choice) return double(r.below(p.choices.size()));
  const Bounds bd = internal_bounds(p);
  return from_internal(p, bd.a + (bd.b - bd.a) * uniform01(r));
}

double normal_cdf(double z) {
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

// A mixture of Gaussians truncated to [a, b]: one per observation and a
// prior centred on the range with its width as sigma (Optuna's form).
struct Parzen {
  std::vector<double> mu, sigma;
  double a = 0, b = 1;

  Parzen(std::vector<double> obs, double lo, double hi) : a(lo), b(hi) {
    const double width = b - a;
    obs.push_back(0.5 * (a + b));  // the prior
    std::vector<size_t> order(obs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return obs[x] < obs[y]; });
    mu = obs;
    sigma.assign(obs.size(), width);
    const double min_sigma = width / std::min(100.0, 1.0 + double(obs.size()));
    for (size_t r = 0; r < order.size(); ++r) {
      const size_t i = order[r];
      if (i + 1 == obs.size()) continue;  // the prior keeps the full width
      const double left = obs[i] - (r > 0 ? obs[order[r - 1]] : a);
      const double right = (r + 1 < order.size() ? obs[order[r + 1]] : b) - obs[i];
      sigma[i] = std::clamp(std::max(left, right), min_sigma, width);
    }
  }

  double log_pdf(double x) const {
    double s = 0;
    for (size_t i = 0; i < mu.size(); ++i) {
      const double z = (x - mu[i]) / sigma[i];
      const double mass = normal_cdf((b - mu[i]) / sigma[i]) - normal_cdf((a - mu[i]) / sigma[i]);
      s += std::exp(-0.5 * z * z) / (sigma[i] * std::sqrt(2 * M_PI) * std::max(mass, 1e-12));
    }
    return std::log(std::max(s / double(mu.size()), 1e-300));
  }

  double draw(Rng& r) const {
    const size_t i = size_t(r.below(mu.size()));
    for (int tries = 0; tries < 100; ++tries) {
      const double x = mu[i] + sigma[i] * double(r.normal());
      if (x >= a && x <= b) return x;
    }
    return std::clamp(mu[i], a, b);
  }
};

}  // namespace

SearchPoint RandomSampler::sample(const std::vector<SearchParam>& space,
                                  const std::vector<Observation>&, int trial) {
  Rng r(trial_seed(seed_, trial));
  SearchPoint x;
  for (const SearchParam& p : space) x.push_back(random_coordinate(p, r));
  return x;
}

SearchPoint TpeSampler::sample(const std::vector<SearchParam>& space,
                               const std::vector<Observation>& done, int trial) {
  if (int(done.size()) < n_startup_) return RandomSampler(seed_).sample(space, done, trial);
  Rng r(trial_seed(seed_ ^ 0x7470650000000000ull, trial));
  // Best first: further (more epochs) before better value; ties by arrival.
  std::vector<size_t> order(done.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t i, size_t j) {
    if (done[i].depth != done[j].depth) return done[i].depth > done[j].depth;
    return done[i].value < done[j].value;
  });
  const size_t n = done.size();
  // With one trial done (n_startup 0 or 1) all of it is "below"; the upper
  // bound must not fall under the lower.
  const size_t n_below = std::clamp<size_t>(size_t(std::ceil(0.1 * double(n))), 1,
                                            std::max<size_t>(1, std::min<size_t>(25, n - 1)));
  SearchPoint x;
  for (size_t d = 0; d < space.size(); ++d) {
    const SearchParam& p = space[d];
    if (p.kind == SearchParam::Kind::Choice) {
      // Category frequencies with a uniform prior of total weight 1.
      const size_t k = p.choices.size();
      std::vector<double> wl(k, 1.0 / double(k)), wg(k, 1.0 / double(k));
      for (size_t r2 = 0; r2 < n; ++r2) {
        const size_t c = size_t(std::clamp(done[order[r2]].x[d], 0.0, double(k - 1)));
        (r2 < n_below ? wl : wg)[c] += 1;
      }
      double sl = 0, sg = 0;
      for (size_t c = 0; c < k; ++c) sl += wl[c], sg += wg[c];
      double best = -std::numeric_limits<double>::infinity(), pick = 0;
      for (int i = 0; i < n_candidates_; ++i) {
        double u = uniform01(r) * sl;
        size_t c = 0;
        while (c + 1 < k && u >= wl[c]) u -= wl[c++];
        const double score = std::log(wl[c] / sl) - std::log(wg[c] / sg);
        if (score > best) best = score, pick = double(c);
      }
      x.push_back(pick);
      continue;
    }
    const Bounds bd = internal_bounds(p);
    std::vector<double> below, above;
    for (size_t r2 = 0; r2 < n; ++r2)
      (r2 < n_below ? below : above).push_back(to_internal(p, done[order[r2]].x[d]));
    const Parzen l(below, bd.a, bd.b), g(above, bd.a, bd.b);
    double best = -std::numeric_limits<double>::infinity(), pick = 0.5 * (bd.a + bd.b);
    for (int i = 0; i < n_candidates_; ++i) {
      const double u = l.draw(r);
      const double score = l.log_pdf(u) - g.log_pdf(u);
      if (score > best) best = score, pick = u;
    }
    x.push_back(from_internal(p, pick));
  }
  return x;
}

}  // namespace dc
