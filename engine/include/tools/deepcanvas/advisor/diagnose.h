#pragma once
// A verdict on where a training run's time goes, from its timeline: how long
// each step waited for the loader and spent computing, the GPU's
// utilisation when known, the memory peak against the device's memory, and
// the roofline's split of the step into compute- and bandwidth-bound layers
// (step_time.h). Pure functions over plain records, so every verdict is
// testable from a synthetic timeline; Timeline feeds them from a Trainer's
// events for the CLI and the Training tab.
#include <deepcanvas/advisor/step_time.h>
#include <deepcanvas/train_config.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace dc {
struct TrainEvent;
}

namespace dc::advisor {

// One report of the Trainer: the mean of `steps` consecutive steps.
struct StepRecord {
  int64_t steps = 1;
  double loader_wait_s = 0;  // per step: waiting for the next batch
  double compute_s = 0;      // per step: forward, backward and update
  int gpu_util_pct = -1;     // the GPU's utilisation meanwhile; -1 unknown
};

struct DiagnosisInput {
  std::vector<StepRecord> steps;  // oldest first
  // The run's predicted step (per-layer compute- or bandwidth-bound time,
  // per-layer and per-step fixed costs); empty layers: no prediction.
  StepTime predicted;
  int64_t peak_bytes = -1;   // measured memory peak; -1 unknown
  int64_t device_bytes = 0;  // the memory it must fit in; 0 unknown
  bool gpu = false;          // the run is on a GPU
  Precision precision = Precision::Fp32;
  int64_t batch = 0;
};

enum class Bottleneck {
  InputBound,
  NearOutOfMemory,
  HostLaunchBound,
  ComputeBound,
  BandwidthBound
};
const char* bottleneck_name(Bottleneck b);  // "input-bound", ...

struct Finding {
  Bottleneck kind;
  // A problem worth acting on (input, memory, launch); compute- and
  // bandwidth-bound describe a run that is busy doing its work.
  bool warning = false;
  std::string verdict;  // one line with the figures behind it
  std::string advice;   // what follows from it
};

// Thresholds, documented in docs/ARCHITECTURE.md ("Diagnosis").
constexpr double kInputBoundShare = 0.15;  // of the step spent waiting for the loader
constexpr double kNearOomShare = 0.90;     // of the device's memory at the peak
constexpr double kLowGpuUtilPct = 60;      // mean utilisation that means idle gaps
constexpr double kFixedCostShare = 0.5;    // of the predicted step in per-step/per-layer costs

struct Diagnosis {
  bool enough_data = false;  // at least kMinSteps steps after the first report
  int64_t steps = 0;         // steps the means cover
  double step_s = 0, loader_wait_s = 0, compute_s = 0;  // per step
  double wait_share = 0;                                // loader_wait_s / step_s
  double gpu_util_pct = -1;                             // mean where known
  // Warnings first (input, memory, launch), then the run's compute or
  // bandwidth character; empty without enough data.
  std::vector<Finding> findings;
  // Set when the measured step is more than 2× off the predicted one: the
  // benchmark the prediction divides by no longer matches the machine (it
  // was taken under other load). Only the overhead (host-launch-bound on
  // fixed costs) verdict is then withheld; the compute-or-bandwidth
  // character still follows the prediction's split, which is a ratio of the
  // same rates and so less sensitive to their scale.
  std::string prediction_note;
  bool has(Bottleneck b) const;
  bool any_warning() const;
  // "verdict\n  → advice" per finding; a "collecting…" line without data.
  std::string text() const;
};

constexpr int64_t kMinSteps = 3;

Diagnosis diagnose(const DiagnosisInput& in);

// A run's timeline as its events arrive: Step events become records (the
// most recent kWindow of them are diagnosed, so the verdict follows the run
// as it changes), Telemetry events give the GPU utilisation and memory.
class Timeline {
 public:
  static constexpr size_t kWindow = 400;
  explicit Timeline(DiagnosisInput base = {}) : base_(std::move(base)) {}
  void add(const TrainEvent& e);
  // Host-memory runs: the measured peak comes with each Step event;
  // GPU runs: the allocator's reserved bytes from Telemetry.
  Diagnosis diagnose() const;
  const DiagnosisInput& base() const { return base_; }

 private:
  DiagnosisInput base_;
  std::deque<StepRecord> records_;
  int last_util_ = -1;
};

}  // namespace dc::advisor
