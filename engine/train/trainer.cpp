#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/preflight.h>
#include <deepcanvas/sequence_data.h>
#include <deepcanvas/trainer.h>

#include <cmath>
#include <cstring>
#include <new>

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
  }
  return "?";
}

namespace {

// evaluate() and evaluate_device() differ only in how a batch's outputs are
// produced; these are the parts they share.
std::vector<int64_t> indices_or_all(const std::vector<int64_t>& indices, const Dataset& ds) {
  if (!indices.empty()) return indices;
  std::vector<int64_t> all(size_t(ds.size()));
  for (int64_t i = 0; i < ds.size(); ++i) all[size_t(i)] = i;
  return all;
}

EvalResult eval_result(const ClassificationMetrics& m) {
  EvalResult r;
  r.loss = m.mean_loss();
  r.top1 = m.top1();
  r.top5 = m.top5();
  r.samples = m.count();
  r.confusion = m.confusion();
  return r;
}

}  // namespace

EvalResult evaluate(Plan& plan, const Dataset& ds, const std::vector<int64_t>& indices,
                    int64_t batch, Loss& loss) {
  const std::vector<int64_t> idx = indices_or_all(indices, ds);
  batch = std::min(batch, plan.max_batch());
  ClassificationMetrics m;
  Tensor x(plan.input_shape().with_batch(batch));
  std::vector<int32_t> labels(batch);
  Tensor dout(plan.output_shape().with_batch(batch));
  RunContext ctx{false, nullptr};
  for (size_t b = 0; b < idx.size(); b += batch) {
    int64_t n = std::min<int64_t>(batch, int64_t(idx.size() - b));
    Tensor xb = x.narrow_batch(n);
    ds.gather(idx.data() + b, n, xb.f32(), labels.data());
    const Tensor& out = plan.forward(xb, ctx);
    Tensor db = dout.narrow_batch(n);
    float l = loss.compute(out, Targets{labels.data(), nullptr}, db);
    m.add(out, labels.data(), double(l) * double(n));
  }
  return eval_result(m);
}

EvalResult evaluate_device(DevicePlan& plan, int dataset, const Dataset& ds,
                           const Shape& output_shape, const std::vector<int64_t>& indices,
                           int64_t batch, Loss& loss) {
  const std::vector<int64_t> idx = indices_or_all(indices, ds);
  ClassificationMetrics m;
  Tensor out(output_shape.with_batch(batch)), dout(output_shape.with_batch(batch));
  for (size_t b = 0; b < idx.size(); b += batch) {
    int64_t n = std::min<int64_t>(batch, int64_t(idx.size() - b));
    Tensor ob = out.narrow_batch(n), db = dout.narrow_batch(n);
    plan.predict(dataset, idx.data() + b, n, ob.f32());
    const int32_t* labels = ds.labels.data();
    std::vector<int32_t> lab(n);
    for (int64_t i = 0; i < n; ++i) lab[i] = labels[idx[b + i]];
    float l = loss.compute(ob, Targets{lab.data(), nullptr}, db);
    m.add(ob, lab.data(), double(l) * double(n));
  }
  return eval_result(m);
}

Trainer::Trainer(const Graph& g, TrainConfig c, std::shared_ptr<Dataset> train,
                 std::shared_ptr<Dataset> test)
    : graph_(g), cfg_(std::move(c)), train_(std::move(train)), test_(std::move(test)) {
  const std::vector<RunProblem> problems = run_problems(g, cfg_, train_.get(), test_.get());
  if (const RunProblem* p = first_blocking(problems)) throw_problem(*p);
  plan_ = std::make_unique<Plan>(graph_, cfg_.batch);
  // A network that reads sequences takes grayscale images row by row.
  images_as_row_sequences(*train_, plan_->input_shape());
  if (test_) images_as_row_sequences(*test_, plan_->input_shape());
  if (cfg_.normalize) {
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
  if (!cfg_.resume.empty()) {
    CheckpointInfo ck = read_checkpoint(cfg_.resume);
    plan_->load_state(ck.model, cfg_.resume);
    // Checked here for the device plan too, which copies the same tensors.
    opt_->load_state(ck.optimizer, plan_->trainable(), cfg_.resume);
    opt_->set_steps(ck.step, cfg_.resume);
    start_epoch_ = ck.epoch + 1;
    start_step_ = ck.step;
    if (start_epoch_ > cfg_.epochs)
      throw Error(cfg_.resume + ": already trained for " + std::to_string(ck.epoch) +
                  " epochs; ask for more than that with --epochs");
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
    // Normalisation is fixed above, so the resident copies gather the same
    // values the CPU loader would.
    dtrain_ = dplan_->add_dataset(*train_);
    if (test_) dtest_ = dplan_->add_dataset(*test_);
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
                              double test_accuracy) {
  std::vector<std::pair<std::string, Tensor>> model = plan_->state();
  if (dplan_) dplan_->download_params();
  CheckpointMeta meta;
  meta.epoch = epoch;
  meta.step = step;
  meta.input_shape = plan_->input_shape().str(true);
  meta.num_classes = plan_->output_shape().numel();
  meta.mean = train_->mean;
  meta.stddev = train_->stddev;
  meta.class_names = train_->class_names;
  meta.test_accuracy = test_accuracy;
  write_checkpoint(path, std::move(model), dplan_ ? dplan_->optimizer_state() : opt_->state(),
                   meta);
}

// One epoch on the device plan. Steps are queued without waiting; the
// device's running loss and accuracy are read every kReport steps (and at
// the end), which is when Step events go out, so the host never stalls the
// GPU per step. The shuffle is the CPU loader's, so both see the same order.
void Trainer::device_epoch(int epoch, const std::vector<int64_t>& train_idx, int64_t spe,
                           int64_t total, int64_t& step, int64_t& in_epoch, int64_t& epoch_samples,
                           double& epoch_train_time, ClassificationMetrics& m,
                           std::chrono::steady_clock::time_point t_start,
                           std::chrono::steady_clock::time_point epoch_t0) {
  constexpr int64_t kReport = 25;
  std::vector<int64_t> order = train_idx;
  Rng rng(cfg_.seed ^ (0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(epoch) + 1)));
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  const int64_t ns = int64_t(order.size());
  double loss_sum = 0;
  int64_t correct = 0, counted = 0;
  auto t0 = Clock::now();
  for (int64_t b0 = 0; b0 < ns && in_epoch < spe; b0 += cfg_.batch) {
    if (!wait_if_paused()) break;
    const int64_t n = std::min<int64_t>(cfg_.batch, ns - b0);
    const double lr = schedule_lr(cfg_.schedule, cfg_.optimizer.lr, step, total, spe);
    dplan_->train_step(dtrain_, order.data() + b0, n, lr,
                       cfg_.seed * 0x9E3779B97F4A7C15ull + uint64_t(step));
    ++step;
    ++in_epoch;
    epoch_samples += n;
    const bool last = in_epoch == spe || b0 + cfg_.batch >= ns;
    if (in_epoch % kReport != 0 && !last && !cancel_ && !paused_) continue;
    DeviceStepStats st = dplan_->take_stats();
    DeviceMemory mem = dplan_->memory();
    device_allocated_ = mem.allocated;
    device_reserved_ = mem.reserved;
    auto now = Clock::now();
    epoch_train_time += std::chrono::duration<double>(now - t0).count();
    t0 = now;
    if (!st.finite) {
      dplan_->download_params();
      throw Error("the loss became NaN or infinite at epoch " + std::to_string(epoch) +
                  ", within the " + std::to_string(kReport) + " steps before step " +
                  std::to_string(step) +
                  "; training stopped. Lower the learning rate, normalise the inputs or add "
                  "BatchNorm");
    }
    loss_sum += st.loss_sum;
    correct += st.correct;
    counted += st.samples;
    TrainEvent e;
    e.kind = TrainEvent::Kind::Step;
    e.epoch = epoch;
    e.epochs = cfg_.epochs;
    e.step = step;
    e.steps_total = total;
    e.step_in_epoch = in_epoch;
    e.steps_per_epoch = spe;
    e.loss = counted ? loss_sum / double(counted) : 0;
    e.accuracy = counted ? double(correct) / double(counted) : 0;
    e.batch_loss = st.samples ? st.loss_sum / double(st.samples) : 0;
    e.batch_accuracy = st.samples ? double(st.correct) / double(st.samples) : 0;
    e.lr = lr;
    e.elapsed_s = std::chrono::duration<double>(now - t_start).count();
    double wall = std::chrono::duration<double>(now - epoch_t0).count();
    e.samples_per_s = wall > 0 ? double(epoch_samples) / wall : 0;
    e.eta_s = double(total - step) * (wall / double(in_epoch));
    emit(e);
  }
  device_loss_ = counted ? loss_sum / double(counted) : 0;
  device_acc_ = counted ? double(correct) / double(counted) : 0;
  (void)m;
}

void Trainer::run() {
  TrainResult& R = result_;
  try {
    set_num_threads(cfg_.threads);
    auto [train_idx, val_idx] = split_indices(train_->size(), cfg_.val_split, cfg_.seed);
    BatchLoader loader(*train_, train_idx, cfg_.batch, /*shuffle=*/true, /*drop_last=*/false,
                       cfg_.seed);
    int64_t spe = loader.batches_per_epoch();
    if (cfg_.steps_per_epoch_limit > 0) spe = std::min(spe, cfg_.steps_per_epoch_limit);
    const int64_t total = spe * cfg_.epochs;
    std::vector<Param*> params = plan_->trainable();
    std::vector<Tensor> good(params.size());  // weights that last gave a finite loss
    for (size_t k = 0; k < params.size(); ++k) good[k] = Tensor(params[k]->value.shape());
    std::vector<std::pair<std::string, Tensor>> best_state;
    double best_metric = -1;
    int since_best = 0;
    Tensor dout(plan_->output_shape().with_batch(cfg_.batch));
    Rng step_rng(cfg_.seed);
    int64_t step = start_step_;
    double train_time = 0;
    int64_t trained_samples = 0;
    auto t_start = Clock::now();

    TrainEvent started;
    started.kind = TrainEvent::Kind::Started;
    started.epochs = cfg_.epochs;
    started.steps_total = total;
    started.steps_per_epoch = spe;
    started.message = std::to_string(train_idx.size()) + " training samples, " +
                      std::to_string(val_idx.size()) + " validation, " +
                      (test_ ? std::to_string(test_->size()) : std::string("no")) + " test; " +
                      std::to_string(plan_->num_parameters()) + " parameters";
    emit(started);
    if (dplan_ && Nvml::instance().available()) {
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

    for (int epoch = start_epoch_; epoch <= cfg_.epochs; ++epoch) {
      if (!dplan_) loader.start_epoch(epoch);
      ClassificationMetrics m;
      Batch b;
      int64_t in_epoch = 0;
      auto epoch_t0 = Clock::now();
      double epoch_train_time = 0;
      int64_t epoch_samples = 0;
      if (dplan_) {
        device_epoch(epoch, train_idx, spe, total, step, in_epoch, epoch_samples, epoch_train_time,
                     m, t_start, epoch_t0);
        train_time += epoch_train_time;
        trained_samples += epoch_samples;
      }
      while (!dplan_ && in_epoch < spe && loader.next(b)) {
        if (!wait_if_paused()) break;
        auto t0 = Clock::now();
        const uint64_t step_seed = cfg_.seed * 0x9E3779B97F4A7C15ull + uint64_t(step);
        step_rng.reseed(step_seed);
        // The CUDA plan augments with the same step seed (train_step's).
        // Black and white are what pixel values 0 and 1 normalise to; float
        // data has no white to cap brightness at.
        const float inv = 1.0f / (train_->stddev > 0 ? train_->stddev : 1.0f);
        augment_batch(cfg_.augment, train_->sample_shape, (0.0f - train_->mean) * inv, step_seed,
                      b.x.f32(), b.n,
                      train_->pixels.empty() ? INFINITY : (1.0f - train_->mean) * inv);
        RunContext ctx{true, &step_rng};
        const Tensor& out = plan_->forward(b.x, ctx);
        Tensor db = dout.narrow_batch(b.n);
        float l = loss_->compute(out, Targets{b.labels.data(), nullptr}, db);
        if (!std::isfinite(l)) {
          for (size_t k = 0; k < params.size(); ++k) params[k]->value.copy_from(good[k]);
          throw Error("the loss became " + std::string(std::isnan(l) ? "NaN" : "infinite") +
                      " at epoch " + std::to_string(epoch) + ", step " + std::to_string(step + 1) +
                      "; training stopped and the last good weights were kept. Lower the "
                      "learning rate, normalise the inputs or add BatchNorm");
        }
        m.add(out, b.labels.data(), double(l) * double(b.n));
        ClassificationMetrics mb;  // this step alone
        mb.add(out, b.labels.data(), double(l) * double(b.n));
        plan_->zero_grad();
        plan_->backward(db, ctx);
        for (size_t k = 0; k < params.size(); ++k) good[k].copy_from(params[k]->value);
        double lr = schedule_lr(cfg_.schedule, cfg_.optimizer.lr, step, total, spe);
        opt_->step(params, lr);
        ++step;
        ++in_epoch;
        double dt = std::chrono::duration<double>(Clock::now() - t0).count();
        epoch_train_time += dt;
        train_time += dt;
        epoch_samples += b.n;
        trained_samples += b.n;

        TrainEvent e;
        e.kind = TrainEvent::Kind::Step;
        e.epoch = epoch;
        e.epochs = cfg_.epochs;
        e.step = step;
        e.steps_total = total;
        e.step_in_epoch = in_epoch;
        e.steps_per_epoch = spe;
        e.loss = m.mean_loss();
        e.accuracy = m.top1();
        e.batch_loss = mb.mean_loss();
        e.batch_accuracy = mb.top1();
        e.lr = lr;
        e.elapsed_s = std::chrono::duration<double>(Clock::now() - t_start).count();
        double wall = std::chrono::duration<double>(Clock::now() - epoch_t0).count();
        e.samples_per_s = wall > 0 ? double(epoch_samples) / wall : 0;
        e.eta_s = double(total - step) * (wall / double(in_epoch));
        emit(e);
      }
      if (dplan_) dplan_->download_params();  // the host Plan serves checkpoints and "best"
      if (cancel_) break;

      TrainEvent e;
      e.kind = TrainEvent::Kind::Epoch;
      e.epoch = epoch;
      e.epochs = cfg_.epochs;
      e.step = step;
      e.steps_total = total;
      e.train_loss = dplan_ ? device_loss_ : m.mean_loss();
      e.train_accuracy = dplan_ ? device_acc_ : m.top1();
      e.samples_per_s = epoch_train_time > 0 ? double(epoch_samples) / epoch_train_time : 0;
      R.final_train_loss = e.train_loss;
      double metric = -e.train_loss;  // what "best" means without a validation split
      if (!val_idx.empty()) {
        EvalResult v = dplan_ ? evaluate_device(*dplan_, dtrain_, *train_, plan_->output_shape(),
                                                val_idx, cfg_.batch, *loss_)
                              : evaluate(*plan_, *train_, val_idx, cfg_.batch, *loss_);
        e.val_loss = v.loss;
        e.val_accuracy = v.top1;
        e.confusion = v.confusion;
        metric = v.top1;
        R.val_accuracy = v.top1;
      }
      if (test_) {
        EvalResult t = dplan_ ? evaluate_device(*dplan_, dtest_, *test_, plan_->output_shape(), {},
                                                cfg_.batch, *loss_)
                              : evaluate(*plan_, *test_, {}, cfg_.batch, *loss_);
        e.test_loss = t.loss;
        e.test_accuracy = t.top1;
        e.confusion = t.confusion;
        R.test_accuracy = t.top1;
        R.test_loss = t.loss;
        R.test_top5 = t.top5;
        R.confusion = t.confusion;
        // The test set never selects the model (nor stops training early):
        // the test accuracy reported for the kept weights would be
        // optimistic. Without a validation split, "best" is the lowest
        // training loss.
      }
      R.epochs_run = epoch;
      if (metric > best_metric) {
        best_metric = metric;
        since_best = 0;
        e.best = true;
        R.best_epoch = epoch;
        best_state.clear();
        for (auto& [k, t] : plan_->state()) best_state.emplace_back(k, t.clone());
      } else {
        ++since_best;
      }
      if (!cfg_.checkpoint_dir.empty()) {
        std::string last = cfg_.checkpoint_dir + "/last.safetensors";
        save_checkpoint(last, epoch, step);
        TrainEvent c;
        c.kind = TrainEvent::Kind::Checkpoint;
        c.epoch = epoch;
        c.message = last;
        emit(c);
        if (e.best) {
          std::string best = cfg_.checkpoint_dir + "/best.safetensors";
          save_checkpoint(best, epoch, step);
          c.message = best;
          emit(c);
        }
      }
      bool stop_early =
          cfg_.early_stopping_patience > 0 && since_best >= cfg_.early_stopping_patience;
      if (stop_early)
        e.message = "early stopping: no improvement for " + std::to_string(since_best) + " epochs";
      emit(e);
      if (stop_early) break;
    }
    R.train_seconds = train_time;
    R.train_samples_per_s = train_time > 0 ? double(trained_samples) / train_time : 0;
    sampler_.reset();  // Telemetry never follows the final event
    if (cancel_) {
      R.cancelled = true;
      TrainEvent e;
      e.kind = TrainEvent::Kind::Cancelled;
      e.message = "training stopped by the user";
      emit(e);
    } else {
      if (cfg_.restore_best && !best_state.empty() && R.best_epoch != R.epochs_run) {
        plan_->load_state(best_state, "best epoch");
        if (dplan_) dplan_->upload_params();
        if (test_) {
          EvalResult t = dplan_ ? evaluate_device(*dplan_, dtest_, *test_, plan_->output_shape(),
                                                  {}, cfg_.batch, *loss_)
                                : evaluate(*plan_, *test_, {}, cfg_.batch, *loss_);
          R.test_accuracy = t.top1;
          R.test_loss = t.loss;
          R.test_top5 = t.top5;
          R.confusion = t.confusion;
        }
      }
      R.ok = true;
      TrainEvent e;
      e.kind = TrainEvent::Kind::Finished;
      e.epoch = R.epochs_run;
      e.test_accuracy = R.test_accuracy;
      e.elapsed_s = std::chrono::duration<double>(Clock::now() - t_start).count();
      e.samples_per_s = R.train_samples_per_s;
      emit(e);
    }
  } catch (const std::bad_alloc&) {
    R.error = "out of memory: lower the batch size or make the network smaller";
  } catch (const std::exception& ex) {
    R.error = ex.what();
  }
  sampler_.reset();  // failed runs too
  if (!R.error.empty()) {
    TrainEvent e;
    e.kind = TrainEvent::Kind::Failed;
    e.message = R.error;
    emit(e);
  }
  running_ = false;
}

}  // namespace dc
