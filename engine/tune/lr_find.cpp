// Smith's learning-rate range test ("Cyclical Learning Rates for Training
// Neural Networks", 2017, section 3.3) as fastai runs it: one short run with
// the learning rate growing exponentially, the loss smoothed, stopped once
// it blows up.
#include <deepcanvas/advisor/memory_model.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/lr_find.h>
#include <deepcanvas/next_token.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/sequence_data.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace dc {

LrFindResult lr_find(const Graph& g, const TrainConfig& c, const Dataset& train_in,
                     const LrFindOptions& o,
                     const std::vector<std::pair<std::string, Tensor>>* initial,
                     const std::function<bool(int, double, double)>& progress) {
  if (!(o.start > 0) || !(o.end > o.start) || !std::isfinite(o.end))
    throw Error("lr-find: the start learning rate must be positive and below the end (got " +
                std::to_string(o.start) + " to " + std::to_string(o.end) + ")");
  if (o.steps < 5 || o.steps > 100000)
    throw Error("lr-find: steps must be in [5, 100000], got " + std::to_string(o.steps));
  if (train_in.size() == 0) throw DataError("lr-find: the training set is empty");

  Plan plan(g, c.batch);
  // A copy, so the caller's dataset keeps its normalisation and layout.
  Dataset train = train_in;
  images_as_row_sequences(train, plan.input_shape());
  if (c.normalize) {
    compute_normalization(train);
  } else {
    train.mean = 0.0f;
    train.stddev = 1.0f;
  }
  plan.init_params(c.seed);
  if (initial) plan.load_state(*initial, "current weights");
  auto loss = make_loss(c.loss, float(c.label_smoothing));
  auto opt = make_optimizer(c.optimizer);
  BatchLoader loader(train, all_indices(train.size()), c.batch, /*shuffle=*/true,
                     /*drop_last=*/true, c.seed,
                     /*prefetch=*/3, /*training_draws=*/true);
  int epoch = 1;
  loader.start_epoch(epoch);
  const std::vector<Param*> params = plan.trainable();
  Tensor dout(plan.output_shape().with_batch(c.batch));
  BatchScorer scorer(*loss, scores_every_step(train, plan.output_shape()));
  Rng rng(c.seed);
  Batch b;

  LrFindResult r;
  const double ratio = std::log(o.end / o.start);
  double avg = 0, best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < o.steps; ++i) {
    if (!loader.next(b)) {
      loader.start_epoch(++epoch);
      if (!loader.next(b)) throw DataError("lr-find: the training set is smaller than one batch");
    }
    const double lr = o.start * std::exp(ratio * double(i) / double(o.steps - 1));
    rng.reseed(step_seed(c.seed, i));
    RunContext ctx{true, &rng};
    const Tensor& out = plan.forward(b.x, ctx);
    Tensor db = dout.narrow_batch(b.n);
    const double l = scorer.train(out, b.x, b.labels.data(), db, nullptr, nullptr);
    if (!std::isfinite(l)) {
      r.diverged = true;
      r.note = "the loss became " + std::string(std::isnan(l) ? "NaN" : "infinite") +
               " at learning rate " + std::to_string(lr);
      break;
    }
    avg = o.beta * avg + (1 - o.beta) * l;
    const double smooth = avg / (1 - std::pow(o.beta, i + 1));
    r.lrs.push_back(lr);
    r.losses.push_back(l);
    r.smoothed.push_back(smooth);
    best = std::min(best, smooth);
    if (progress && !progress(i, lr, smooth)) break;
    if (i > 0 && smooth > o.diverge_factor * best) {
      r.diverged = true;
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "stopped at learning rate %.3g: the smoothed loss %.4g is more than %g times "
                    "its minimum %.4g",
                    lr, smooth, o.diverge_factor, best);
      r.note = buf;
      break;
    }
    plan.zero_grad();
    plan.backward(db, ctx);
    opt->step(params, lr);
  }
  if (r.lrs.empty()) throw Error("lr-find: " + r.note + " at the first step; nothing to suggest");
  const size_t n = r.lrs.size();
  const size_t at_min =
      size_t(std::min_element(r.smoothed.begin(), r.smoothed.end()) - r.smoothed.begin());
  r.min_lr = r.lrs[at_min];
  r.suggested_lr = r.min_lr / 10;
  // Steepest descent against log lr, up to the minimum; the first tenth of
  // the points is skipped because the bias-corrected average is still
  // settling there.
  double steepest = 0;
  r.steepest_lr = r.suggested_lr;
  for (size_t i = std::max<size_t>(1, n / 10); i <= at_min && i < n; ++i) {
    const double slope = (r.smoothed[i] - r.smoothed[i - 1]) / std::log(r.lrs[i] / r.lrs[i - 1]);
    if (slope < steepest) {
      steepest = slope;
      r.steepest_lr = r.lrs[i];
    }
  }
  if (at_min + 1 == n && !r.diverged && r.note.empty())
    r.note =
        "the loss was still falling at the end learning rate; raise the end learning rate to see "
        "the "
        "minimum";
  if (r.suggested_lr < o.start * 10 && r.note.empty())
    r.note = "the loss was lowest near the start learning rate; lower the start learning rate";
  return r;
}

BatchLrAdvice batch_lr_advice(const TrainConfig& c, int64_t old_batch, int64_t new_batch,
                              int64_t train_samples) {
  if (old_batch < 1 || new_batch < 1) throw Error("batch sizes must be at least 1");
  BatchLrAdvice a;
  const double k = double(new_batch) / double(old_batch);
  a.linear_lr = c.optimizer.lr * k;
  a.sqrt_lr = c.optimizer.lr * std::sqrt(k);
  const int64_t steps_per_epoch = std::max<int64_t>(1, (train_samples + new_batch - 1) / new_batch);
  const int64_t total = steps_per_epoch * c.epochs;
  if (k > 1) a.warmup_steps = std::max<int64_t>(1, int64_t(std::ceil(double(total) * 5.0 / 90.0)));
  const bool adam = c.optimizer.type != OptimizerType::Sgd;
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "Batch %lld -> %lld (x%.3g): linear rule lr %.3g, square-root rule lr %.3g (now %.3g). "
      "%s%s",
      (long long)old_batch, (long long)new_batch, k, a.linear_lr, a.sqrt_lr, c.optimizer.lr,
      adam ? "For Adam the square-root rule is usually closer. "
           : "For SGD the linear rule is the usual choice. ",
      k > 1 ? ("Warm up over the first " + std::to_string(a.warmup_steps) +
               " steps (about 5 of 90 epochs, Goyal et al.) so the larger rate does not diverge "
               "early.")
                  .c_str()
            : "A smaller batch needs no warm-up.");
  a.text = buf;
  return a;
}

BatchFit largest_batch(const Graph& g, int64_t available_bytes, const TrainConfig& c) {
  advisor::MemoryOptions o;
  o.optimizer = c.optimizer;
  o.precision = c.precision;
  o.backend = c.device.cuda ? advisor::Backend::Cuda : advisor::Backend::Cpu;
  BatchFit f;
  f.available_bytes = available_bytes;
  o.batch = std::max<int64_t>(1, c.batch);
  f.batch_bytes = advisor::predict_memory(g, o).total;
  o.batch = 1;
  const int64_t one = advisor::predict_memory(g, o).total;
  o.batch = 2;
  f.bytes_per_sample = advisor::predict_memory(g, o).total - one;
  f.fixed_bytes = one - f.bytes_per_sample;
  f.max_batch = advisor::max_batch_that_fits(g, o, available_bytes);
  f.pow2 = f.max_batch >= 1 ? int64_t(1) << int(std::floor(std::log2(double(f.max_batch)))) : 0;
  return f;
}

}  // namespace dc
