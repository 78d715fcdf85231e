#pragma once
// Asynchronous successive halving (ASHA; Li et al., "A System for Massively
// Parallel Hyperparameter Tuning", MLSys 2020). Rungs sit at resources
// r_k = min_resource * eta^k up to max_resource; a trial is promoted from
// rung k when it is among the top floor(n_k / eta) of the n_k trials that
// have completed rung k. Resources are reals (epochs in a sweep), so the
// first rung may sit at a fraction of an epoch: Hyperband's most aggressive
// bracket has min_resource = max_resource / eta^2.
//
// Two forms of the same rung bookkeeping:
// - next_job()/record(): the paper's Algorithm 2 scheduler (promote the
//   best not yet promoted candidate of the highest rung that has one, else
//   start a new trial at the bottom rung). Tests check it against the rule.
// - report(): the pruner form the sweeps use, because a trial there runs on
//   in its own Trainer and cannot be paused: at each rung a trial continues
//   only if it is in the top floor(n_k / eta) of the rung so far; while
//   floor(n_k / eta) is 0 (the first eta - 1 trials at a rung) it continues
//   only if it is the best at that rung so far. That is Optuna's
//   SuccessiveHalvingPruner, which documents the same departure.
#include <cstddef>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

namespace dc {

class Asha {
 public:
  // Throws Error unless 0 < min_resource < max_resource and eta >= 2.
  Asha(double min_resource, double max_resource, int eta);

  const std::vector<double>& rungs() const { return rungs_; }
  // The rung at `resource` (equal within 1e-9 relative); -1 when none.
  int rung_of(double resource) const;
  int eta() const { return eta_; }

  // Pruner: the trial's value (lower is better) after `resource`. True: go on.
  bool report(int trial, double resource, double value);

  // Scheduler: what to run next; trial -1 means a new trial at rung 0.
  struct Job {
    int trial = -1;
    int rung = 0;
  };
  Job next_job();
  // The value of `trial` after running to rung `rung`'s resource.
  void record(int trial, int rung, double value);

  // (trial, value) pairs recorded at each rung, in arrival order.
  const std::vector<std::vector<std::pair<int, double>>>& results() const { return results_; }
  // Whether `trial` ranks within the top k of rung `rung` (value, then trial id).
  bool in_top(int rung, int trial, size_t k) const;

 private:
  std::vector<double> rungs_;
  int eta_;
  std::vector<std::vector<std::pair<int, double>>> results_;
  std::vector<std::set<int>> promoted_;
};

}  // namespace dc
