#include <deepcanvas/asha.h>
#include <deepcanvas/attrs.h>
#include <deepcanvas/errors.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace dc {

namespace {

bool same_resource(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
}

}  // namespace

Asha::Asha(double min_resource, double max_resource, int eta) : eta_(eta) {
  if (!(min_resource > 0) || !(max_resource > min_resource) || !std::isfinite(max_resource) ||
      eta < 2)
    throw Error("ASHA needs 0 < min resource < max resource and eta >= 2 (got min " +
                attr_to_string(min_resource) + ", max " + attr_to_string(max_resource) + ", eta " +
                std::to_string(eta) + ")");
  // r * eta^k, each from the power (no accumulated rounding), snapped to a
  // whole number or max_resource when it lands there within rounding.
  for (int k = 0;; ++k) {
    double r = min_resource * std::pow(double(eta), k);
    if (const double whole = std::round(r); whole > 0 && same_resource(r, whole)) r = whole;
    if (same_resource(r, max_resource)) r = max_resource;
    if (r > max_resource) break;
    rungs_.push_back(r);
  }
  results_.resize(rungs_.size());
  promoted_.resize(rungs_.size());
}

int Asha::rung_of(double resource) const {
  // Rungs rise by a factor of eta >= 2, so only the two around `resource`
  // can match: a search, since a resumed sweep asks for every measurement.
  const auto it = std::lower_bound(rungs_.begin(), rungs_.end(), resource);
  for (auto k = it == rungs_.begin() ? it : it - 1; k != rungs_.end() && k <= it; ++k)
    if (same_resource(*k, resource)) return int(k - rungs_.begin());
  return -1;
}

bool Asha::in_top(int rung, int trial, size_t k) const {
  std::vector<std::pair<double, int>> v;
  for (auto [t, x] : results_[size_t(rung)]) v.emplace_back(x, t);
  std::sort(v.begin(), v.end());
  for (size_t i = 0; i < std::min(k, v.size()); ++i)
    if (v[i].second == trial) return true;
  return false;
}

bool Asha::report(int trial, double resource, double value) {
  const int k = rung_of(resource);
  if (k < 0) return true;
  auto& rung = results_[size_t(k)];
  // A resumed sweep replays what it recorded; a repeated report counts once.
  bool seen = false;
  for (auto& [t, x] : rung)
    if (t == trial) x = value, seen = true;
  if (!seen) rung.emplace_back(trial, value);
  const size_t top = std::max<size_t>(1, rung.size() / size_t(eta_));
  return in_top(k, trial, top);
}

Asha::Job Asha::next_job() {
  for (int k = int(rungs_.size()) - 2; k >= 0; --k) {
    const auto& rung = results_[size_t(k)];
    const size_t top = rung.size() / size_t(eta_);
    std::vector<std::pair<double, int>> v;
    for (auto [t, x] : rung) v.emplace_back(x, t);
    std::sort(v.begin(), v.end());
    for (size_t i = 0; i < top; ++i)
      if (!promoted_[size_t(k)].count(v[i].second)) {
        promoted_[size_t(k)].insert(v[i].second);
        return {v[i].second, k + 1};
      }
  }
  return {-1, 0};
}

void Asha::record(int trial, int rung, double value) {
  if (rung < 0 || rung >= int(rungs_.size())) throw Error("ASHA: no rung " + std::to_string(rung));
  results_[size_t(rung)].emplace_back(trial, value);
}

}  // namespace dc
