#pragma once
// The Trainer runs training on its own thread and reports through a
// thread-safe event channel; it never calls back into the caller's thread,
// so a GUI can poll or a CLI can block on events. Pause, resume and cancel
// take effect at step boundaries.
#include <deepcanvas/backend.h>
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/data.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/metrics.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/telemetry.h>
#include <deepcanvas/train_config.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace dc {

class Stepper;

struct TrainEvent {
  enum class Kind {
    Started,
    Step,
    Epoch,
    Checkpoint,
    Paused,
    Resumed,
    Finished,
    Failed,
    Cancelled,
    Telemetry,  // GPU runs: an NVML sample (>= 4 Hz) and the plugin allocator's bytes
    // A measurement of the validation split inside an epoch, at one of
    // TrainConfig::validate_at: epoch, step_in_epoch, steps_per_epoch,
    // val_loss, val_accuracy and at; or of the test set at one of
    // TrainConfig::test_every_steps: test_loss, test_accuracy, train_seconds.
    Validation
  };
  Kind kind = Kind::Step;
  int epoch = 0, epochs = 0;  // 1-based epoch
  int64_t step = 0, steps_total = 0, step_in_epoch = 0, steps_per_epoch = 0;
  double loss = 0, accuracy = 0, lr = 0;  // Step: running means over the epoch so far
  // Step: loss and top-1 of the steps since the previous Step event alone
  // (one step on the CPU, up to 25 on a GPU), for per-step curves; the
  // running means above lag behind and restart every epoch.
  double batch_loss = 0, batch_accuracy = 0;
  double samples_per_s = 0, elapsed_s = 0, eta_s = 0;
  // Step: where the steps since the previous Step event spent their time,
  // per step on average (the diagnosis, advisor/diagnose.h, reads these):
  // waiting for the loader's next batch, inside the step itself (forward,
  // backward, update; on a device, until its queued work is done).
  int64_t steps_in_report = 0;
  double loader_wait_s = 0, compute_s = 0;
  // Step: the run's host tensor peak so far (as TrainResult::peak_tensor_bytes).
  int64_t peak_tensor_bytes = 0;
  // Validation: the point of TrainConfig::validate_at it answers (in epochs;
  // the steps run are epoch - 1 + step_in_epoch / steps_per_epoch epochs).
  double at = NAN;
  // Validation of the test set: training seconds of the run up to this
  // step; elapsed_s is then the run's seconds without these measurements.
  double train_seconds = NAN;
  // Epoch (NaN when not evaluated)
  double train_loss = 0, train_accuracy = 0;
  double val_loss = NAN, val_accuracy = NAN, test_loss = NAN, test_accuracy = NAN;
  std::vector<std::vector<int64_t>> confusion;  // on the test (else validation) set
  bool best = false;
  std::string message;  // Failed: the reason; Checkpoint: the path; Started: a summary
  // Telemetry: the GPU's reading, and the backend allocator's allocated and
  // reserved bytes as of the last reported step (-1 before the first).
  GpuSample gpu;
  int64_t device_allocated = -1, device_reserved = -1;
};

const char* event_kind_name(TrainEvent::Kind k);

// A blocking multi-producer multi-consumer queue.
template <typename T>
class Channel {
 public:
  void push(T v) {
    {
      std::lock_guard<std::mutex> l(m_);
      q_.push_back(std::move(v));
    }
    cv_.notify_all();
  }
  // Waits up to `timeout` for an item.
  std::optional<T> pop(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> l(m_);
    if (!cv_.wait_for(l, timeout, [&] { return !q_.empty(); })) return std::nullopt;
    T v = std::move(q_.front());
    q_.pop_front();
    return v;
  }
  std::optional<T> try_pop() { return pop(std::chrono::milliseconds(0)); }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<T> q_;
};

struct TrainResult {
  bool ok = false, cancelled = false;
  std::string error;
  int epochs_run = 0, best_epoch = 0;
  double train_seconds = 0, train_samples_per_s = 0;
  // Highest host tensor memory (dc::mem: every Storage at its rounded size
  // plus the layers' tracked scratch) during the run, above what was live
  // when the Trainer was constructed: the datasets and anything the caller
  // holds are excluded; the plan, optimizer state, loader batches, the
  // evaluation buffers and the best-epoch copy are included. CPU runs only
  // (a CUDA run's host side is counted, its device memory is not).
  int64_t peak_tensor_bytes = 0;
  // CUDA runs: the device allocator's highest allocated bytes (its rounded
  // blocks: 512 B under 1 MiB, 2 MiB above), over the plan's lifetime.
  int64_t peak_device_bytes = 0;
  double final_train_loss = NAN;
  double test_accuracy = NAN, test_loss = NAN, val_accuracy = NAN, test_top5 = NAN;
  std::vector<std::vector<int64_t>> confusion;
};

struct EvalResult {
  double loss = 0, top1 = 0, top5 = 0;
  int64_t samples = 0;
  std::vector<std::vector<int64_t>> confusion;
};

// Runs the plan in inference mode over indices of ds (all when empty).
EvalResult evaluate(Plan& plan, const Dataset& ds, const std::vector<int64_t>& indices,
                    int64_t batch, Loss& loss);
// The same on a device plan, over a dataset already resident there (handle
// from DevicePlan::add_dataset); logits come back to the host for metrics.
EvalResult evaluate_device(DevicePlan& plan, int dataset, const Dataset& ds,
                           const Shape& output_shape, const std::vector<int64_t>& indices,
                           int64_t batch, Loss& loss);

class Trainer {
 public:
  // test may be null. Throws GraphError/DataError up front when the graph
  // and data do not fit together (shape, number of classes).
  Trainer(const Graph& g, TrainConfig c, std::shared_ptr<Dataset> train,
          std::shared_ptr<Dataset> test);
  ~Trainer();

  void start();  // launches the training thread
  void pause();
  void resume();
  void cancel();
  void wait();  // joins the thread
  bool running() const { return running_; }

  Channel<TrainEvent>& events() { return events_; }
  // Valid after wait().
  const TrainResult& result() const { return result_; }
  Plan& plan() { return *plan_; }
  // The GPU plan when config().device is cuda, else null.
  DevicePlan* device_plan() { return dplan_.get(); }
  const TrainConfig& config() const { return cfg_; }
  const Dataset& train_data() const { return *train_; }
  // What init_weights loaded (empty report when the run has none).
  const Plan::MatchReport& init_report() const { return init_report_; }

  // Writes a checkpoint of the current weights (atomically).
  void save_checkpoint(const std::string& path, int epoch, int64_t step,
                       double test_accuracy = NAN);

 private:
  // What one run carries from epoch to epoch.
  struct RunState {
    std::vector<int64_t> train_idx, val_idx;
    int64_t steps_per_epoch = 0, total = 0, step = 0;
    double train_time = 0;  // seconds spent in training steps
    double test_time = 0;   // seconds spent measuring the test set every N steps
    int64_t trained_samples = 0;
    std::chrono::steady_clock::time_point t_start;
    std::vector<std::pair<std::string, Tensor>> best_state;
    // Lower than any metric: without a validation split it is minus the
    // training loss, which is below -1 while the loss is above 1.
    double best_metric = -std::numeric_limits<double>::infinity();
    int since_best = 0;
  };
  // What an epoch's training steps add up to.
  struct EpochTotals {
    DeviceStepStats stats;  // loss sum and top-1 hits over the epoch's samples
    double seconds = 0;     // spent in training steps
    int64_t samples = 0;
    double mean_loss() const { return stats.samples ? stats.loss_sum / double(stats.samples) : 0; }
    double accuracy() const {
      return stats.samples ? double(stats.correct) / double(stats.samples) : 0;
    }
  };
  void run();
  void start_telemetry();
  TrainEvent progress_event(TrainEvent::Kind kind, int epoch, const RunState& r) const;
  EpochTotals train_epoch(Stepper& stepper, int epoch, RunState& r);
  bool end_epoch(int epoch, const EpochTotals& t, RunState& r);
  // TrainConfig::validate_at inside `epoch`: (step in the epoch, point), by step.
  std::vector<std::pair<int64_t, double>> validation_points(int epoch,
                                                            int64_t steps_per_epoch) const;
  void validate_within_epoch(int epoch, int64_t step_in_epoch, double at, const RunState& r);
  void test_within_run(int epoch, int64_t step_in_epoch, double train_seconds, RunState& r);
  // On the test set (whole) or the training set (indices: validation).
  EvalResult evaluate_on(bool test_set, const std::vector<int64_t>& indices);
  void set_test_result(const EvalResult& t);
  bool wait_if_paused();  // false when cancelled
  void emit(TrainEvent e) { events_.push(std::move(e)); }

  Graph graph_;
  TrainConfig cfg_;
  std::shared_ptr<Dataset> train_, test_;
  std::unique_ptr<Plan> plan_;
  std::unique_ptr<Optimizer> opt_;
  std::unique_ptr<Loss> loss_;
  Channel<TrainEvent> events_;
  TrainResult result_;
  std::thread thread_;
  std::atomic<bool> running_{false}, cancel_{false}, paused_{false};
  std::mutex pause_m_;
  std::condition_variable pause_cv_;
  int start_epoch_ = 1;
  Plan::MatchReport init_report_;
  int64_t mem_baseline_ = 0;  // dc::mem live bytes when constructed
  int64_t start_step_ = 0;
  // device != cpu: the plan on the device and the resident datasets.
  std::unique_ptr<DevicePlan> dplan_;
  int dtrain_ = -1, dtest_ = -1;
  // GPU telemetry for the run's lifetime; the sampler thread reads the
  // allocator figures the training thread leaves here, so it never calls
  // into the device plan itself.
  std::unique_ptr<GpuSampler> sampler_;
  std::atomic<int64_t> device_allocated_{-1}, device_reserved_{-1};
};

}  // namespace dc
