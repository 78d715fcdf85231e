#pragma once
// Hyperparameter sweeps over a project: each trial is one Trainer run of
// the project's network and settings with a point of the search space
// written in, the project's seed, and a validation split (10 % when the
// project has none, so the test set never chooses). A sampler (random or
// TPE) proposes points; ASHA stops trials on the validation accuracy at its
// rungs, at epoch ends and, for rungs at a fraction of an epoch, after that
// fraction of the epoch's steps (TrainConfig::validate_at). A trial whose loss becomes NaN/Inf, or
// whose point the network cannot take, is marked failed and the sweep goes on.
//
// The state lives in a JSON file beside the project (PROJECT.sweep.json),
// written atomically after every epoch and trial, so a sweep that is killed
// continues where it stopped: trials that were running start again from
// their first epoch with the same point.
#include <deepcanvas/asha.h>
#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/project.h>
#include <deepcanvas/search_space.h>
#include <deepcanvas/tpe.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dc {

class Trainer;

// Limits of a sweep, the same for the options given and for a state file
// read back: a file holding more trials than its
// options.trials, more measurements per trial than epochs + ASHA rungs, or
// more bytes is refused before anything is replayed.
constexpr int kMaxSweepTrials = 100000;
constexpr int kMaxSweepEpochs = 100000;
constexpr int kMaxSweepEta = 100;
constexpr int64_t kMaxSweepStateBytes = int64_t(256) << 20;

struct SweepOptions {
  int trials = 16;
  int epochs = 3;
  bool asha = true;
  int eta = 3;  // ASHA's reduction factor
  // ASHA's minimum resource (its first rung), in epochs, a fraction allowed;
  // 0: epochs / eta^2, Hyperband's most aggressive bracket (3 epochs, eta 3:
  // rungs at 1/3 epoch, 1 and 3). The Sweep stores it resolved.
  double min_epochs = 0;
  bool tpe = true;     // else random search
  int n_startup = -1;  // TPE's random trials first; -1: trials / 3 within [2, 10]
  uint64_t seed = 0;
  int parallel = 1;                   // trials at once (each then single-threaded on the CPU)
  double val_split = 0.1;             // when the project holds none out
  int64_t steps_per_epoch_limit = 0;  // tests: shorter epochs
  // Trial 0 trains the project's own values of the swept parameters (when
  // they lie inside the space), so the sweep's best is never a point that
  // validates worse than what the user already has, and every other trial
  // is judged against it (Optuna's enqueue_trial idiom).
  bool baseline = true;
  bool operator==(const SweepOptions&) const = default;
};

// One measurement of a trial: at an epoch's end, or inside an epoch at one
// of ASHA's fractional rungs (no training or test figures then).
struct TrialEpoch {
  int epoch = 0;       // the epoch it was taken in (1-based)
  double at = 0;       // the point asked for, in epochs: the epoch at its end, else the rung
  double trained = 0;  // epochs trained when taken: steps run / steps per epoch
  double train_loss = NAN, val_loss = NAN, val_accuracy = NAN, test_loss = NAN, test_accuracy = NAN;
};

struct Trial {
  enum class Status { Pending, Running, Completed, Pruned, Failed };
  int id = 0;
  SearchPoint x;
  Status status = Status::Pending;
  std::vector<TrialEpoch> epochs;
  std::string error;      // Failed: why
  bool baseline = false;  // the project's own values (SweepOptions::baseline)
  // The objective, lower is better: minus the last epoch's validation
  // accuracy (its loss for a network that does not classify).
  double value() const;
  // Epochs trained as far as the last measurement (fractional when the
  // trial was pruned inside an epoch); 0 before any.
  double epochs_trained() const { return epochs.empty() ? 0 : epochs.back().trained; }
};
const char* trial_status_name(Trial::Status s);

struct SweepState {
  std::vector<std::string> space;  // the parameters' spec_text(), in order
  SweepOptions options;
  std::vector<Trial> trials;
  // Why the project's own values could not be trial 0 ("lr = 0.05 is
  // outside log:0.0001:0.01"); empty when they are, or when not asked for.
  std::string baseline_skipped;
  // The completed trial with the best value (ties: the earlier); -1 when none.
  int best() const;
  double epochs_used() const;  // epochs trained over all trials (Trial::epochs_trained)
};

// JSON of the state with each trial's params as named values (what the CLI
// prints and the state file holds).
std::string sweep_to_json(const SweepState& s, const SearchSpace& space, int indent = -1);
// A sweep state file that cannot be used: which file (`source`) and what is
// wrong with it (`problem`), in the engine's words. Each front end adds its
// own remedy (the CLI its --fresh flag, the app its Start button).
class SweepStateError : public IoError {
 public:
  SweepStateError(const std::string& source, const std::string& problem)
      : IoError(source + ": " + problem), source_(source), problem_(problem) {}
  const std::string& source() const { return source_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string source_, problem_;
};
// Reads a state file, checked as a whole before anything uses it: types,
// ranges (options as the sweep command accepts them), trial ids (each its
// index), one coordinate per parameter, a measurement for every completed
// or pruned trial, measurements at epoch ends or ASHA rungs in increasing
// order, and the limits above. Throws IoError naming `source` and the field
// ("p.sweep.json: trials[3].metrics[0].epoch: must be an integer in [1, 3],
// got 1e+30") as a SweepStateError.
SweepState sweep_from_json(const std::string& text, const std::string& source);
// sweep_from_json of the file at `path`, read up to kMaxSweepStateBytes.
SweepState load_sweep_state(const std::string& path);
// Checks every trial's point against the parsed space (what only the
// project's graph can give: each coordinate inside its parameter's range, a
// choice's index a whole number below the count). Throws SweepStateError
// naming `source` and the field.
void check_sweep_points(const SweepState& s, const SearchSpace& space, const std::string& source);
// One way a sweep differs from the one in a state file, so that it cannot
// continue it: `key` is "space" or the SweepOptions field ("trials",
// "epochs", "tpe", "asha", "seed", "eta", "min_epochs", "val_split",
// "steps_per_epoch_limit", "n_startup"), with both values as text (the
// space: its spec texts joined by ", "). Each front end words these its own
// way (the CLI by its flags, the app by its fields).
struct SweepDifference {
  std::string key;
  std::string saved, current;
};
// What keeps `space` (spec_text() of each parameter) and `o` from continuing
// `saved`, in that order; empty when they continue it. How many trials run at
// once and whether a baseline is asked for do not count: neither changes the
// sweep.
std::vector<SweepDifference> sweep_differences(const SweepState& saved,
                                               const std::vector<std::string>& space,
                                               const SweepOptions& o);
// The state file at `path` holds another sweep: the Sweep constructor's
// refusal to continue it (unless asked to start afresh), with what differs.
class SweepMismatchError : public Error {
 public:
  SweepMismatchError(const std::string& path, std::vector<SweepDifference> differences)
      : Error(path + " holds a different sweep (other parameters or options)"),
        path_(path),
        differences_(std::move(differences)) {}
  const std::string& path() const { return path_; }
  const std::vector<SweepDifference>& differences() const { return differences_; }

 private:
  std::string path_;
  std::vector<SweepDifference> differences_;
};
// ASHA's minimum resource for `o` (o.min_epochs, or epochs / eta^2 when 0).
double sweep_min_epochs(const SweepOptions& o);
// PROJECT.dcproj -> PROJECT.sweep.json
std::string sweep_state_path(const std::string& project_file);
// PROJECT.sweep.json -> PROJECT.sweep.best.safetensors: where a sweep with a
// state file keeps its best trial's weights (Sweep::keep_best_weights).
std::string sweep_weights_path(const std::string& state_path);
// `path` when it holds the weights of s's best trial (a checkpoint that
// reads whole and names that trial in its sweep_trial), else empty: no
// trial completed, the file is gone or damaged, or another trial wrote it.
std::string sweep_best_weights(const SweepState& s, const std::string& path);

class Sweep {
 public:
  // Reads state_path when it exists: the same space and options continue
  // that sweep (resumed() is then true); different ones throw Error, unless
  // fresh, which starts over. An empty state_path keeps nothing on disk.
  Sweep(Project project, std::shared_ptr<const TrainTest> data, SearchSpace space,
        SweepOptions options, std::string state_path, bool fresh = false);

  // Runs trials until options.trials have finished or *stop becomes true
  // (then the running trials are stopped and stay "running" in the file).
  // on_update(trial) is called after each epoch and status change, from the
  // trials' threads, one call at a time.
  void run(const std::function<void(const Trial&)>& on_update = {},
           const std::atomic<bool>* stop = nullptr);

  SweepState state() const;
  const SearchSpace& space() const { return space_; }
  bool resumed() const { return resumed_; }
  // The best trial's graph and settings (the project with its point applied).
  void apply_best(Graph& g, TrainConfig& c) const;
  // Keeps the best completed trial's trained weights at `path`, a
  // checkpoint naming the trial (CheckpointMeta::sweep_trial), rewritten
  // atomically each time a trial completes better than every earlier one:
  // what a sweep trained is not lost when the best is a model worth using
  // (Keras Tuner's get_best_models). A sweep that does not continue a state
  // file first removes what `path` held. Call before run().
  void keep_best_weights(std::string path);
  // Why the kept weights could not be written (the sweep goes on without
  // them); empty when every write succeeded.
  std::string weights_problem() const;

 private:
  void run_trial(int index, const std::function<void(const Trial&)>& on_update,
                 const std::atomic<bool>* stop);
  int next_trial();  // index into state_.trials, -1 when all are handed out
  void save_locked();
  // Writes `trainer`'s weights to weights_path_ when trial `id` is now the
  // best; under m_, so parallel trials write in the order they rank.
  void keep_if_best(int id, Trainer& trainer, int64_t step);

  Project project_;
  std::shared_ptr<const TrainTest> data_;
  SearchSpace space_;
  std::string path_;
  std::string weights_path_, weights_problem_;
  bool resumed_ = false;
  mutable std::mutex m_;
  SweepState state_;
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<Asha> asha_;
};

}  // namespace dc
