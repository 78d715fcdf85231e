// The Trainer's epoch: the training steps through a Stepper (CPU or device)
// with their Step events, then evaluation, model selection, checkpoints and
// early stopping.
#include <deepcanvas/memstats.h>
#include <deepcanvas/trainer.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "stepper.h"

namespace dc {

using Clock = std::chrono::steady_clock;

// Where the run stands, as every Step and Epoch event reports it.
TrainEvent Trainer::progress_event(TrainEvent::Kind kind, int epoch, const RunState& r) const {
  TrainEvent e;
  e.kind = kind;
  e.epoch = epoch;
  e.epochs = cfg_.epochs;
  e.step = r.step;
  e.steps_total = r.total;
  return e;
}

EvalResult Trainer::evaluate_on(bool test_set, const std::vector<int64_t>& indices) {
  const Dataset& ds = test_set ? *test_ : *train_;
  if (dplan_)
    return evaluate_device(*dplan_, test_set ? dtest_ : dtrain_, ds, plan_->output_shape(), indices,
                           cfg_.batch, *loss_);
  return evaluate(*plan_, ds, indices, cfg_.batch, *loss_);
}

// The steps of one epoch. Statistics are read when the stepper says so
// (every step on the CPU, every few on a device), which is when Step events
// go out; training time counts from the first step after each read.
Trainer::EpochTotals Trainer::train_epoch(Stepper& stepper, int epoch, RunState& r) {
  EpochTotals t;
  stepper.start_epoch(epoch);
  const auto epoch_t0 = Clock::now();
  std::optional<Clock::time_point> t0;
  int64_t in_epoch = 0;
  // Since the previous Step event: steps, seconds waiting for the loader
  // and seconds inside step(). A pause is neither (it sits between them).
  int64_t window_steps = 0;
  double window_wait = 0, window_compute = 0;
  auto secs = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  // Validation points inside this epoch, by step (TrainConfig::validate_at).
  const std::vector<std::pair<int64_t, double>> points =
      validation_points(epoch, r.steps_per_epoch);
  size_t next_point = 0;
  while (in_epoch < r.steps_per_epoch) {
    const auto w0 = Clock::now();
    if (!stepper.next_batch()) break;
    const auto w1 = Clock::now();
    if (!wait_if_paused()) break;
    if (!t0) t0 = Clock::now();
    const double lr =
        schedule_lr(cfg_.schedule, cfg_.optimizer.lr, r.step, r.total, r.steps_per_epoch);
    const auto c0 = Clock::now();
    const int64_t n = stepper.step(r.step, lr);
    ++r.step;
    ++in_epoch;
    t.samples += n;
    ++window_steps;
    window_wait += secs(w0, w1);
    // A validation point reads the statistics first, so that evaluating is
    // never counted as training time.
    const bool validate_now = next_point < points.size() && points[next_point].first == in_epoch;
    const bool test_now = test_ && cfg_.test_every_steps > 0 && r.step % cfg_.test_every_steps == 0;
    if (!stepper.report_due(in_epoch, r.steps_per_epoch,
                            cancel_ || paused_ || validate_now || test_now)) {
      window_compute += secs(c0, Clock::now());
      continue;
    }
    const DeviceStepStats s = stepper.take_stats(r.step);
    const auto now = Clock::now();
    // take_stats is part of the step: on a device it waits for the queued work.
    window_compute += secs(c0, now);
    t.seconds += std::chrono::duration<double>(now - *t0).count();
    t0.reset();
    t.stats.loss_sum += s.loss_sum;
    t.stats.correct += s.correct;
    t.stats.samples += s.samples;
    if (dplan_) {
      DeviceMemory mem = dplan_->memory();
      device_allocated_ = mem.allocated;
      device_reserved_ = mem.reserved;
    }
    TrainEvent e = progress_event(TrainEvent::Kind::Step, epoch, r);
    e.step_in_epoch = in_epoch;
    e.steps_per_epoch = r.steps_per_epoch;
    e.loss = t.mean_loss();
    e.accuracy = t.accuracy();
    e.batch_loss = s.samples ? s.loss_sum / double(s.samples) : 0;
    e.batch_accuracy = s.samples ? double(s.correct) / double(s.samples) : 0;
    e.lr = lr;
    e.elapsed_s = std::chrono::duration<double>(now - r.t_start).count();
    const double wall = std::chrono::duration<double>(now - epoch_t0).count();
    e.samples_per_s = wall > 0 ? double(t.samples) / wall : 0;
    e.eta_s = double(r.total - r.step) * (wall / double(in_epoch));
    e.steps_in_report = window_steps;
    e.loader_wait_s = window_wait / double(window_steps);
    e.compute_s = window_compute / double(window_steps);
    e.peak_tensor_bytes = std::max<int64_t>(0, mem::peak_bytes() - mem_baseline_);
    window_steps = 0;
    window_wait = window_compute = 0;
    emit(e);
    for (; next_point < points.size() && points[next_point].first == in_epoch; ++next_point)
      validate_within_epoch(epoch, in_epoch, points[next_point].second, r);
    if (test_now) test_within_run(epoch, in_epoch, r.train_time + t.seconds, r);
  }
  if (stepper.stats_pending()) {
    // Steps left unread: the loader ran out before the epoch's last step
    // (bad files dropped whole batches), or a stop came between two
    // reports. Their statistics are this epoch's, and a NaN among them
    // must stop the run before any weights are read back.
    const DeviceStepStats s = stepper.take_stats(r.step);
    if (t0) t.seconds += secs(*t0, Clock::now());
    t.stats.loss_sum += s.loss_sum;
    t.stats.correct += s.correct;
    t.stats.samples += s.samples;
  }
  r.train_time += t.seconds;
  r.trained_samples += t.samples;
  return t;
}

std::vector<std::pair<int64_t, double>> Trainer::validation_points(int epoch,
                                                                   int64_t steps_per_epoch) const {
  std::vector<std::pair<int64_t, double>> v;
  if (steps_per_epoch < 2) return v;  // no step inside the epoch
  for (double at : cfg_.validate_at) {
    if (!(at > epoch - 1) || !(at < epoch)) continue;  // another epoch's, or an epoch end
    const double into = at - (epoch - 1);
    const int64_t step =
        std::clamp<int64_t>(std::llround(into * double(steps_per_epoch)), 1, steps_per_epoch - 1);
    v.emplace_back(step, at);
  }
  std::sort(v.begin(), v.end());
  return v;
}

// The validation split measured after a step inside an epoch: the weights
// are not changed and no statistics of the epoch are read, so the training
// goes on exactly as it would have without it.
void Trainer::validate_within_epoch(int epoch, int64_t step_in_epoch, double at,
                                    const RunState& r) {
  TrainEvent e = progress_event(TrainEvent::Kind::Validation, epoch, r);
  e.step_in_epoch = step_in_epoch;
  e.steps_per_epoch = r.steps_per_epoch;
  e.at = at;
  if (!r.val_idx.empty()) {
    EvalResult v = evaluate_on(false, r.val_idx);
    e.val_loss = v.loss;
    e.val_accuracy = v.top1;
  }
  emit(e);
}

// The test set measured after a step (TrainConfig::test_every_steps), the
// same way: weights and the epoch's statistics untouched.
void Trainer::test_within_run(int epoch, int64_t step_in_epoch, double train_seconds, RunState& r) {
  TrainEvent e = progress_event(TrainEvent::Kind::Validation, epoch, r);
  e.step_in_epoch = step_in_epoch;
  e.steps_per_epoch = r.steps_per_epoch;
  e.train_seconds = train_seconds;
  const auto t0 = Clock::now();
  e.elapsed_s = std::chrono::duration<double>(t0 - r.t_start).count() - r.test_time;
  const EvalResult v = evaluate_on(true, {});
  e.test_loss = v.loss;
  e.test_accuracy = v.top1;
  r.test_time += std::chrono::duration<double>(Clock::now() - t0).count();
  emit(e);
}

// Evaluation, model selection, checkpoints and early stopping after an
// epoch's steps. Returns whether training should stop early.
bool Trainer::end_epoch(int epoch, const EpochTotals& t, RunState& r) {
  TrainResult& R = result_;
  TrainEvent e = progress_event(TrainEvent::Kind::Epoch, epoch, r);
  e.train_loss = t.mean_loss();
  e.train_accuracy = t.accuracy();
  e.samples_per_s = t.seconds > 0 ? double(t.samples) / t.seconds : 0;
  R.final_train_loss = e.train_loss;
  double metric = -e.train_loss;  // what "best" means without a validation split
  if (!r.val_idx.empty()) {
    EvalResult v = evaluate_on(false, r.val_idx);
    e.val_loss = v.loss;
    e.val_accuracy = v.top1;
    e.confusion = v.confusion;
    metric = v.top1;
    R.val_accuracy = v.top1;
  }
  if (test_) {
    // The test set never selects the model (nor stops training early): the
    // test accuracy reported for the kept weights would be optimistic.
    // Without a validation split, "best" is the lowest training loss.
    EvalResult v = evaluate_on(true, {});
    e.test_loss = v.loss;
    e.test_accuracy = v.top1;
    e.confusion = v.confusion;
    set_test_result(v);
  }
  R.epochs_run = epoch;
  if (metric > r.best_metric) {
    r.best_metric = metric;
    r.since_best = 0;
    e.best = true;
    R.best_epoch = epoch;
    r.best_state.clear();
    for (auto& [k, v] : plan_->state()) r.best_state.emplace_back(k, v.clone());
  } else {
    ++r.since_best;
  }
  if (!cfg_.checkpoint_dir.empty()) {
    TrainEvent c;
    c.kind = TrainEvent::Kind::Checkpoint;
    c.epoch = epoch;
    std::vector<std::string> names{"last"};
    if (e.best) names.push_back("best");
    for (const std::string& name : names) {
      c.message = cfg_.checkpoint_dir + "/" + name + ".safetensors";
      save_checkpoint(c.message, epoch, r.step);
      emit(c);
    }
  }
  const bool stop_early =
      cfg_.early_stopping_patience > 0 && r.since_best >= cfg_.early_stopping_patience;
  if (stop_early)
    e.message = "early stopping: no improvement for " + std::to_string(r.since_best) + " epochs";
  emit(e);
  return stop_early;
}

void Trainer::set_test_result(const EvalResult& t) {
  result_.test_accuracy = t.top1;
  result_.test_loss = t.loss;
  result_.test_top5 = t.top5;
  result_.confusion = t.confusion;
}

}  // namespace dc
