#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/memstats.h>
#include <deepcanvas/next_token.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/preflight.h>
#include <deepcanvas/sequence_data.h>
#include <deepcanvas/trainer.h>

#include <algorithm>
#include <filesystem>
#include <new>
#include <tuple>

#include "stepper.h"

namespace dc {

using Clock = std::chrono::steady_clock;

const char* event_kind_name(TrainEvent::Kind k) {
  switch (k) {
    case TrainEvent::Kind::Started:
      return "started";
    case TrainEvent::Kind::Step:
      return "step";
    case TrainEvent::Kind::Epoch:
      return "epoch";
    case TrainEvent::Kind::Checkpoint:
      return "checkpoint";
    case TrainEvent::Kind::Paused:
      return "paused";
    case TrainEvent::Kind::Resumed:
      return "resumed";
    case TrainEvent::Kind::Finished:
      return "finished";
    case TrainEvent::Kind::Failed:
      return "failed";
    case TrainEvent::Kind::Cancelled:
      return "cancelled";
    case TrainEvent::Kind::Telemetry:
      return "telemetry";
    case TrainEvent::Kind::Validation:
      return "validation";
  }
  return "?";
}

Trainer::Trainer(const Graph& g, TrainConfig c, std::shared_ptr<Dataset> train,
                 std::shared_ptr<Dataset> test)
    : graph_(g), cfg_(std::move(c)), train_(std::move(train)), test_(std::move(test)) {
  // Everything allocated from here on belongs to this run.
  mem_baseline_ = mem::reset_peak();
  const std::vector<RunProblem> problems = run_problems(g, cfg_, train_.get(), test_.get());
  if (const RunProblem* p = first_blocking(problems)) throw_problem(*p);
  plan_ = std::make_unique<Plan>(graph_, cfg_.batch);
  // A network that reads sequences takes grayscale images row by row.
  images_as_row_sequences(*train_, plan_->input_shape());
  if (test_) images_as_row_sequences(*test_, plan_->input_shape());
  if (!train_->channel_mean.empty()) {
    // The project fixes the normalisation (a pretrained base's); the
    // training set's statistics would undo what the base was trained on.
    train_->mean = 0.0f;
    train_->stddev = 1.0f;
  } else if (cfg_.normalize) {
    compute_normalization(*train_);
  } else {
    train_->mean = 0.0f;
    train_->stddev = 1.0f;
  }
  if (test_) {
    test_->mean = train_->mean;
    test_->stddev = train_->stddev;
  }
  loss_ = make_loss(cfg_.loss, float(cfg_.label_smoothing));
  opt_ = make_optimizer(cfg_.optimizer);
  plan_->init_params(cfg_.seed);
  if (!cfg_.init_weights.empty()) {
    if (!cfg_.resume.empty())
      throw Error(
          "training.init_weights starts a fresh run from other weights and "
          "training.resume continues a run; give only one of them");
    if (!std::filesystem::exists(cfg_.init_weights))
      throw IoError(cfg_.init_weights +
                    ": weights file not found (training.init_weights); "
                    "import the base model again or point it at its .safetensors");
    SafetensorsFile f = load_safetensors(cfg_.init_weights);
    // A checkpoint's optimizer state belongs to its own run, never to this one.
    std::vector<std::pair<std::string, Tensor>> model;
    for (auto& [k, t] : f.tensors)
      if (k.rfind("optimizer.", 0) != 0) model.emplace_back(k, t);
    init_report_ = plan_->load_matching(model, cfg_.init_weights);
  }
  if (!cfg_.resume.empty()) {
    CheckpointInfo ck = read_checkpoint(cfg_.resume);
    plan_->load_state(ck.model, cfg_.resume);
    // Optimizer state is indexed by the trainable parameters: with other
    // layers frozen the indices would name other tensors (and could even
    // fit their shapes), so the frozen sets must agree.
    std::vector<std::string> frozen;
    for (const NamedParam& np : plan_->params())
      if (np.frozen) frozen.push_back(np.name);
    if (!ck.optimizer.empty() && frozen != ck.frozen_params) {
      auto list = [](const std::vector<std::string>& v) {
        std::string s;
        for (const std::string& n : v) s += (s.empty() ? "" : ", ") + n;
        return s.empty() ? std::string("none") : s;
      };
      throw IoError(cfg_.resume + ": was trained with frozen parameters " + list(ck.frozen_params) +
                    " but this run freezes " + list(frozen) +
                    "; freeze the same layers to resume (the optimizer state follows the "
                    "trainable parameters), or start afresh instead of resuming (training.resume)");
    }
    // Checked here for the device plan too, which copies the same tensors.
    opt_->load_state(ck.optimizer, plan_->trainable(), cfg_.resume);
    opt_->set_steps(ck.step, cfg_.resume);
    start_epoch_ = ck.epoch + 1;
    start_step_ = ck.step;
    if (start_epoch_ > cfg_.epochs)
      throw Error(cfg_.resume + ": already trained for " + std::to_string(ck.epoch) +
                  " epochs; ask for more than that (training.epochs)");
  }
  if (cfg_.device.cuda) {
    DeviceBackend* backend = require_device(cfg_.device);  // throws with the reason
    dplan_ = backend->create_plan(graph_, *plan_, DevicePlanOptions::for_training(cfg_));
    dplan_->upload_params();
    if (!cfg_.resume.empty()) {
      CheckpointInfo ck = read_checkpoint(cfg_.resume);
      dplan_->load_optimizer_state(ck.optimizer);
      dplan_->set_optimizer_steps(ck.step);
    }
    // Normalisation is fixed above, so the device's copies gather the same
    // values the CPU loader would. Image folders are decoded on the host and
    // streamed to them batch by batch.
    dtrain_ = add_device_dataset(*dplan_, *train_, cfg_.batch);
    if (test_) dtest_ = add_device_dataset(*dplan_, *test_, cfg_.batch);
  }
}

Trainer::~Trainer() {
  cancel();
  wait();
}

void Trainer::start() {
  if (running_ || thread_.joinable()) throw Error("training is already running");
  running_ = true;
  thread_ = std::thread([this] { run(); });
}

void Trainer::pause() {
  paused_ = true;
}

void Trainer::resume() {
  {
    std::lock_guard<std::mutex> l(pause_m_);
    paused_ = false;
  }
  pause_cv_.notify_all();
}

void Trainer::cancel() {
  cancel_ = true;
  resume();
}

void Trainer::wait() {
  if (thread_.joinable()) thread_.join();
}

bool Trainer::wait_if_paused() {
  if (paused_ && !cancel_) {
    TrainEvent e;
    e.kind = TrainEvent::Kind::Paused;
    emit(e);
    std::unique_lock<std::mutex> l(pause_m_);
    pause_cv_.wait(l, [&] { return !paused_ || cancel_; });
    if (!cancel_) {
      e.kind = TrainEvent::Kind::Resumed;
      emit(e);
    }
  }
  return !cancel_;
}

void Trainer::save_checkpoint(const std::string& path, int epoch, int64_t step,
                              double test_accuracy, int sweep_trial) {
  std::vector<std::pair<std::string, Tensor>> model = plan_->state();
  if (dplan_) dplan_->download_params();
  CheckpointMeta meta;
  meta.epoch = epoch;
  meta.step = step;
  meta.input_shape = plan_->input_shape().str(true);
  meta.num_classes = scored_classes(plan_->input_shape(), plan_->output_shape(), train_->tokens);
  meta.mean = train_->mean;
  meta.stddev = train_->stddev;
  meta.class_names = train_->class_names;
  meta.test_accuracy = test_accuracy;
  meta.sweep_trial = sweep_trial;
  for (const NamedParam& np : plan_->params())
    if (np.frozen) meta.frozen_params.push_back(np.name);
  write_checkpoint(path, std::move(model), dplan_ ? dplan_->optimizer_state() : opt_->state(),
                   meta);
}

void Trainer::start_telemetry() {
  if (!dplan_ || !Nvml::instance().available()) return;
  // NVML numbers GPUs in PCI order, as CUDA does with CUDA_DEVICE_ORDER=PCI_BUS_ID;
  // with the default (fastest first) order they differ only on mixed machines.
  sampler_ = std::make_unique<GpuSampler>(cfg_.device.index, 4.0, [this](const GpuSample& g) {
    TrainEvent t;
    t.kind = TrainEvent::Kind::Telemetry;
    t.gpu = g;
    t.device_allocated = device_allocated_.load();
    t.device_reserved = device_reserved_.load();
    emit(std::move(t));
  });
}

void Trainer::run() {
  TrainResult& R = result_;
  try {
    set_num_threads(cfg_.threads);
    RunState r;
    if (!train_->validation.empty()) {
      // The data's own validation split (an image folder's val/).
      std::vector<char> is_val(size_t(train_->size()), 0);
      for (int64_t i : train_->validation)
        if (i >= 0 && i < train_->size()) is_val[size_t(i)] = 1;
      for (int64_t i = 0; i < train_->size(); ++i)
        (is_val[size_t(i)] ? r.val_idx : r.train_idx).push_back(i);
    } else {
      // A text's windows are in text order: its validation windows are the
      // last part of the training text (as its test windows are the last
      // part of the whole), so that no validation target is ever a training
      // target of a network that predicts every step.
      std::tie(r.train_idx, r.val_idx) =
          split_indices(train_->size(), cfg_.val_split, cfg_.seed, /*ordered=*/train_->tokens);
    }
    const int64_t n_train = int64_t(r.train_idx.size());
    r.steps_per_epoch = (n_train + cfg_.batch - 1) / cfg_.batch;
    if (cfg_.steps_per_epoch_limit > 0)
      r.steps_per_epoch = std::min(r.steps_per_epoch, cfg_.steps_per_epoch_limit);
    r.total = r.steps_per_epoch * cfg_.epochs;
    r.step = start_step_;
    r.t_start = Clock::now();
    std::unique_ptr<Stepper> stepper;
    const bool every_step = scores_every_step(*train_, plan_->output_shape());
    if (dplan_ && every_step)
      stepper = std::make_unique<HostBatchDeviceStepper>(*dplan_, plan_->output_shape(), *train_,
                                                         r.train_idx, cfg_, *loss_);
    else if (dplan_ && train_->images)
      stepper =
          std::make_unique<StreamedDeviceStepper>(*dplan_, dtrain_, *train_, r.train_idx, cfg_);
    else if (dplan_)
      stepper = std::make_unique<DeviceStepper>(*dplan_, dtrain_, r.train_idx, cfg_);
    else
      stepper = std::make_unique<CpuStepper>(*plan_, *loss_, *opt_, *train_, r.train_idx, cfg_);

    TrainEvent started;
    started.kind = TrainEvent::Kind::Started;
    started.epochs = cfg_.epochs;
    started.steps_total = r.total;
    started.steps_per_epoch = r.steps_per_epoch;
    started.message =
        std::to_string(r.train_idx.size()) + " training samples, " +
        std::to_string(r.val_idx.size()) + " validation, " +
        (test_ ? std::to_string(test_->size()) : std::string("no")) + " test; " +
        std::to_string(plan_->num_parameters()) + " trainable parameters" +
        (plan_->has_frozen() ? ", " + std::to_string(plan_->num_frozen_parameters()) + " frozen"
                             : std::string()) +
        (cfg_.init_weights.empty()
             ? std::string()
             : "; weights from " + cfg_.init_weights + ": " + init_report_.summary());
    emit(started);
    start_telemetry();

    for (int epoch = start_epoch_; epoch <= cfg_.epochs; ++epoch) {
      const EpochTotals t = train_epoch(*stepper, epoch, r);
      if (dplan_) dplan_->download_params();  // the host Plan serves checkpoints and "best"
      if (cancel_ || end_epoch(epoch, t, r)) break;
    }
    R.train_seconds = r.train_time;
    R.train_samples_per_s = r.train_time > 0 ? double(r.trained_samples) / r.train_time : 0;
    sampler_.reset();  // Telemetry never follows the final event
    if (cancel_) {
      R.cancelled = true;
      TrainEvent e;
      e.kind = TrainEvent::Kind::Cancelled;
      e.message = "training stopped by the user";
      emit(e);
    } else {
      if (cfg_.restore_best && !r.best_state.empty() && R.best_epoch != R.epochs_run) {
        plan_->load_state(r.best_state, "best epoch");
        if (dplan_) dplan_->upload_params();
        if (test_) set_test_result(evaluate_on(true, {}));
      }
      R.ok = true;
      TrainEvent e;
      e.kind = TrainEvent::Kind::Finished;
      e.epoch = R.epochs_run;
      e.test_accuracy = R.test_accuracy;
      e.elapsed_s = std::chrono::duration<double>(Clock::now() - r.t_start).count();
      e.samples_per_s = R.train_samples_per_s;
      emit(e);
    }
  } catch (const std::bad_alloc&) {
    R.error = "out of memory: lower the batch size or make the network smaller";
  } catch (const std::exception& ex) {
    R.error = ex.what();
  }
  sampler_.reset();  // failed runs too
  R.peak_tensor_bytes = std::max<int64_t>(0, mem::peak_bytes() - mem_baseline_);
  if (dplan_) {
    // After a device error the query may fail too; the run's own error is
    // what gets reported.
    try {
      R.peak_device_bytes = dplan_->memory().peak_allocated;
    } catch (const std::exception&) {
    }
  }
  if (!R.error.empty()) {
    TrainEvent e;
    e.kind = TrainEvent::Kind::Failed;
    e.message = R.error;
    emit(e);
  }
  running_ = false;
}

}  // namespace dc
