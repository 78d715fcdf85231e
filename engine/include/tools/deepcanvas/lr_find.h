#pragma once
// Choosing the learning rate and the batch before a run: Smith's learning-
// rate range test, the learning-rate rules for a changed batch and the
// largest batch that fits a device. The CLI's lr-find and batch-fit and the
// app's Training tab use these, so they give the same numbers.
#include <deepcanvas/data.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/tensor.h>
#include <deepcanvas/train_config.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace dc {

struct LrFindOptions {
  double start = 1e-7, end = 10;  // learning rates of the first and the last step
  int steps = 100;
  // Smoothing of the loss: an exponential moving average with this decay,
  // bias-corrected as Adam's moments are (fastai's 0.98).
  double beta = 0.98;
  // Stop when the smoothed loss exceeds this multiple of its minimum.
  double diverge_factor = 4.0;
};

struct LrFindResult {
  std::vector<double> lrs, losses, smoothed;  // one entry per step taken
  // min_lr / 10, where min_lr has the lowest smoothed loss: the learning
  // rate that is still clearly on the falling side of the curve (Smith 2017;
  // fastai's "lr_min"). steepest_lr (where the smoothed loss falls fastest
  // against log lr) is reported beside it; it is noisier on short runs, so
  // it is not the suggestion.
  double suggested_lr = 0, min_lr = 0, steepest_lr = 0;
  bool diverged = false;  // stopped early: smoothed loss > diverge_factor x minimum, or NaN/Inf
  std::string note;       // why it stopped, or why the suggestion is uncertain
};

// Trains a copy of g on the CPU for o.steps steps with c's optimizer, loss,
// batch and seed, raising the learning rate exponentially from o.start to
// o.end, and records the loss of every step. The weights start from
// `initial` when given (a caller's own weights; the app and the CLI pass
// none, so the range test starts from the network's initial weights), else
// from c.seed; the
// caller's weights and `train` are never changed (normalisation is computed
// on a copy, as the Trainer would). progress(step, lr, smoothed) may return
// false to stop. Throws Error for bad options and what Plan/Loss throw.
LrFindResult lr_find(const Graph& g, const TrainConfig& c, const Dataset& train,
                     const LrFindOptions& o = {},
                     const std::vector<std::pair<std::string, Tensor>>* initial = nullptr,
                     const std::function<bool(int, double, double)>& progress = {});

// What the learning rate should become when the batch changes from
// old_batch to new_batch: the linear rule (Goyal et al. 2017, SGD) and the
// square-root rule (Krizhevsky 2014; closer for Adam), with a warm-up over
// about 5 of 90 epochs' worth of steps (Goyal et al.) when the batch grows.
struct BatchLrAdvice {
  double linear_lr = 0, sqrt_lr = 0;
  int64_t warmup_steps = 0;  // suggested schedule.warmup_steps (0: none needed)
  std::string text;          // one paragraph for the hint and the CLI
};
BatchLrAdvice batch_lr_advice(const TrainConfig& c, int64_t old_batch, int64_t new_batch,
                              int64_t train_samples);

// The largest batch whose predicted training memory fits in
// available_bytes, for a run with c's optimizer, device and precision. The
// prediction is the advisor's calibrated memory model
// (advisor::predict_memory, within -5 %/+10 % of the measured peak), so
// batch-fit, the Training tab, train's memory check, the Model Summary and
// `advise` agree. 0 when not even one sample fits; `pow2` is that rounded
// down to a power of two. bytes_per_sample and fixed_bytes describe the
// prediction as a line (its slope from batch 1 to 2, and the rest), for
// printing; batch_bytes is the prediction at c.batch.
struct BatchFit {
  int64_t max_batch = 0, pow2 = 0;
  int64_t bytes_per_sample = 0, fixed_bytes = 0, available_bytes = 0;
  int64_t batch_bytes = 0;
};
BatchFit largest_batch(const Graph& g, int64_t available_bytes, const TrainConfig& c = {});

}  // namespace dc
