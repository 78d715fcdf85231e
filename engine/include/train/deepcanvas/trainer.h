#pragma once
// The Trainer runs training on its own thread and reports through a
// thread-safe event channel; it never calls back into the caller's thread,
// so a GUI can poll or a CLI can block on events. Pause, resume and cancel
// take effect at step boundaries. The events are training_events.h's, the
// channel channel.h's and the evaluation evaluate.h's; this header includes
// them because its users read all three.
#include <deepcanvas/backend.h>
#include <deepcanvas/channel.h>
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/data.h>
#include <deepcanvas/evaluate.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/metrics.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/telemetry.h>
#include <deepcanvas/train_config.h>
#include <deepcanvas/training_events.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dc {

class Stepper;

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

  // Writes a checkpoint of the current weights (atomically); sweep_trial
  // >= 0 marks a sweep's kept weights (CheckpointMeta::sweep_trial).
  void save_checkpoint(const std::string& path, int epoch, int64_t step, double test_accuracy = NAN,
                       int sweep_trial = -1);

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
