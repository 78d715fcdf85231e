#include <deepcanvas/errors.h>
#include <deepcanvas/metrics.h>

#include <cmath>
#include <string>

#include "stepper.h"

namespace dc {

void HostStepTally::add(float l, float shown, const ClassificationMetrics& m, int64_t n, int epoch,
                        int64_t step) {
  if (!std::isfinite(l))
    throw Error("the loss became " + std::string(std::isnan(l) ? "NaN" : "infinite") +
                " at epoch " + std::to_string(epoch) + ", step " + std::to_string(step + 1) +
                "; training stopped and the last good weights were kept. Lower the "
                "learning rate, normalise the inputs or add BatchNorm");
  stats_.loss_sum += double(shown) * double(n);
  stats_.correct += m.top1_hits();
  stats_.samples += n;
}

CpuStepper::CpuStepper(Plan& plan, Loss& loss, Optimizer& opt, const Dataset& train,
                       const std::vector<int64_t>& train_idx, const TrainConfig& cfg)
    : plan_(plan),
      opt_(opt),
      train_(train),
      cfg_(cfg),
      loader_(train, train_idx, cfg.batch, /*shuffle=*/true, /*drop_last=*/false, cfg.seed,
              /*prefetch=*/3, /*training_draws=*/true),
      params_(plan.trainable()),
      dout_(plan.output_shape().with_batch(cfg.batch)),
      rng_(cfg.seed),
      scorer_(loss, scores_every_step(train, plan.output_shape())) {
  for (Param* p : params_) good_.emplace_back(p->value.shape());
}

void CpuStepper::start_epoch(int epoch) {
  epoch_ = epoch;
  loader_.start_epoch(epoch);
}

int64_t CpuStepper::step(int64_t step, double lr) {
  Batch& b = batch_;
  const uint64_t seed = step_seed(cfg_.seed, step);
  rng_.reseed(seed);
  // The CUDA plan augments with the same step seed. Black and white are what
  // pixel values 0 and 1 normalise to, per channel with per-channel
  // normalisation; float data has no white to cap brightness at.
  if (cfg_.augment.enabled())
    augment_batch(cfg_.augment, train_.sample_shape, augment_levels(train_), seed, b.x.f32(), b.n);
  RunContext ctx{true, &rng_};
  const Tensor& out = plan_.forward(b.x, ctx);
  Tensor db = dout_.narrow_batch(b.n);
  ClassificationMetrics m;
  float shown = 0;
  const float l = scorer_.train(out, b.x, b.labels.data(), db, &m, &shown);
  if (!std::isfinite(l))
    for (size_t k = 0; k < params_.size(); ++k) params_[k]->value.copy_from(good_[k]);
  tally_.add(l, shown, m, b.n, epoch_, step);
  plan_.zero_grad();
  plan_.backward(db, ctx);
  for (size_t k = 0; k < params_.size(); ++k) good_[k].copy_from(params_[k]->value);
  opt_.step(params_, lr);
  return b.n;
}

DeviceStepStats CpuStepper::take_stats(int64_t) {
  return tally_.take();
}

}  // namespace dc
