#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/sweep.h>
#include <deepcanvas/trainer.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

namespace dc {

namespace {

using json = nlohmann::json;

json num(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}
double num_of(const json& j) {
  return j.is_number() ? j.get<double>() : NAN;
}

json value_json(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          return json(x);
        else
          return json(x);
      },
      v);
}

constexpr Trial::Status kStatuses[] = {Trial::Status::Pending, Trial::Status::Running,
                                       Trial::Status::Completed, Trial::Status::Pruned,
                                       Trial::Status::Failed};

}  // namespace

const char* trial_status_name(Trial::Status s) {
  switch (s) {
    case Trial::Status::Pending:
      return "pending";
    case Trial::Status::Running:
      return "running";
    case Trial::Status::Completed:
      return "completed";
    case Trial::Status::Pruned:
      return "pruned";
    case Trial::Status::Failed:
      return "failed";
  }
  return "?";
}

namespace {

// The objective of one measurement (Trial::value of a trial ending there).
double value_of(const TrialEpoch& e) {
  if (std::isfinite(e.val_accuracy)) return -e.val_accuracy;
  return std::isfinite(e.val_loss) ? e.val_loss : INFINITY;
}

}  // namespace

double Trial::value() const {
  return epochs.empty() ? INFINITY : value_of(epochs.back());
}

int SweepState::best() const {
  int best = -1;
  for (size_t i = 0; i < trials.size(); ++i)
    if (trials[i].status == Trial::Status::Completed &&
        (best < 0 || trials[i].value() < trials[size_t(best)].value()))
      best = int(i);
  return best;
}

double SweepState::epochs_used() const {
  double n = 0;
  for (const Trial& t : trials) n += t.epochs_trained();
  return n;
}

double sweep_min_epochs(const SweepOptions& o) {
  return o.min_epochs > 0 ? o.min_epochs : double(o.epochs) / double(o.eta) / double(o.eta);
}

std::string sweep_state_path(const std::string& project_file) {
  std::filesystem::path p(project_file);
  p.replace_extension(".sweep.json");
  return p.string();
}

std::string sweep_to_json(const SweepState& s, const SearchSpace& space, int indent) {
  const SweepOptions& o = s.options;
  json j = {{"format", "deepcanvas-sweep"},
            {"version", 1},
            {"space", s.space},
            {"options",
             {{"trials", o.trials},
              {"epochs", o.epochs},
              {"pruner", o.asha ? "asha" : "none"},
              {"eta", o.eta},
              {"min_epochs", o.min_epochs},
              {"sampler", o.tpe ? "tpe" : "random"},
              {"n_startup", o.n_startup},
              {"seed", o.seed},
              {"parallel", o.parallel},
              {"val_split", o.val_split},
              {"steps_per_epoch_limit", o.steps_per_epoch_limit},
              {"baseline", o.baseline}}}};
  if (!s.baseline_skipped.empty()) j["baseline_skipped"] = s.baseline_skipped;
  auto params_of = [&](const Trial& t) {
    json p = json::object();
    for (size_t i = 0; i < space.params.size() && i < t.x.size(); ++i)
      p[space.params[i].name] = value_json(search_value(space.params[i], t.x[i]));
    return p;
  };
  json trials = json::array();
  for (const Trial& t : s.trials) {
    json ep = json::array();
    for (const TrialEpoch& e : t.epochs)
      ep.push_back({{"epoch", e.epoch},
                    {"at", e.at},
                    {"trained", e.trained},
                    {"train_loss", num(e.train_loss)},
                    {"val_loss", num(e.val_loss)},
                    {"val_accuracy", num(e.val_accuracy)},
                    {"test_loss", num(e.test_loss)},
                    {"test_accuracy", num(e.test_accuracy)}});
    json tj = {{"id", t.id},
               {"params", params_of(t)},
               {"x", t.x},
               {"status", trial_status_name(t.status)},
               {"metrics", ep}};
    if (!t.error.empty()) tj["error"] = t.error;
    if (t.baseline) tj["baseline"] = true;
    trials.push_back(tj);
  }
  j["trials"] = trials;
  const int b = s.best();
  if (b >= 0) {
    const Trial& t = s.trials[size_t(b)];
    j["best"] = {{"id", t.id},
                 {"params", params_of(t)},
                 {"val_accuracy", num(t.epochs.back().val_accuracy)},
                 {"test_accuracy", num(t.epochs.back().test_accuracy)},
                 {"baseline", t.baseline}};
  } else {
    j["best"] = nullptr;
  }
  // Sums of step fractions: rounded so that 14.68 does not print as 14.680000000000001.
  j["epochs_used"] = std::round(s.epochs_used() * 1e6) / 1e6;
  return j.dump(indent);
}

SweepState sweep_from_json(const std::string& text, const std::string& source) {
  SweepState s;
  try {
    const json j = json::parse(text);
    if (j.value("format", "") != "deepcanvas-sweep" || j.value("version", 0) != 1)
      throw IoError(source + " is not a DeepCanvas sweep state (format deepcanvas-sweep, v1)");
    s.space = j.at("space").get<std::vector<std::string>>();
    const json& o = j.at("options");
    s.options.trials = o.at("trials");
    s.options.epochs = o.at("epochs");
    s.options.asha = o.at("pruner") == "asha";
    s.options.eta = o.at("eta");
    s.options.min_epochs = o.at("min_epochs").get<double>();
    s.options.tpe = o.at("sampler") == "tpe";
    s.options.n_startup = o.at("n_startup");
    s.options.seed = o.at("seed");
    s.options.parallel = o.at("parallel");
    s.options.val_split = o.at("val_split");
    s.options.steps_per_epoch_limit = o.at("steps_per_epoch_limit");
    // Files from before baseline trials had none.
    s.options.baseline = o.value("baseline", false);
    s.baseline_skipped = j.value("baseline_skipped", "");
    for (const json& tj : j.at("trials")) {
      Trial t;
      t.id = tj.at("id");
      t.x = tj.at("x").get<std::vector<double>>();
      const std::string st = tj.at("status");
      bool known = false;
      for (Trial::Status k : kStatuses)
        if (st == trial_status_name(k)) t.status = k, known = true;
      if (!known) throw IoError(source + ": trial " + std::to_string(t.id) + " has status " + st);
      for (const json& e : tj.at("metrics")) {
        TrialEpoch m;
        m.epoch = e.at("epoch").get<int>();
        // Files from before fractional rungs hold epoch ends only.
        m.at = e.value("at", double(m.epoch));
        m.trained = e.value("trained", double(m.epoch));
        m.train_loss = num_of(e.at("train_loss"));
        m.val_loss = num_of(e.at("val_loss"));
        m.val_accuracy = num_of(e.at("val_accuracy"));
        m.test_loss = num_of(e.at("test_loss"));
        m.test_accuracy = num_of(e.at("test_accuracy"));
        t.epochs.push_back(m);
      }
      t.error = tj.value("error", "");
      t.baseline = tj.value("baseline", false);
      s.trials.push_back(std::move(t));
    }
  } catch (const IoError&) {
    throw;
  } catch (const std::exception& e) {
    throw IoError(source + ": not a readable sweep state (" + e.what() +
                  "); delete it or pass --fresh to start over");
  }
  return s;
}

Sweep::Sweep(Project project, std::shared_ptr<const TrainTest> data, SearchSpace space,
             SweepOptions o, std::string state_path, bool fresh)
    : project_(std::move(project)),
      data_(std::move(data)),
      space_(std::move(space)),
      path_(std::move(state_path)) {
  if (o.trials < 1 || o.trials > 100000) throw Error("--trials must be in [1, 100000]");
  if (o.epochs < 1 || o.epochs > 100000) throw Error("--epochs must be in [1, 100000]");
  if (o.parallel < 1) throw Error("--parallel must be at least 1");
  if (o.eta < 2) throw Error("--eta must be at least 2");
  if (!(o.min_epochs >= 0) || !std::isfinite(o.min_epochs))
    throw Error("--min-epochs must be a positive number of epochs (0: epochs / eta^2)");
  if (o.n_startup < 0) o.n_startup = std::clamp(o.trials / 3, 2, 10);
  o.min_epochs = sweep_min_epochs(o);
  for (const SearchParam& p : space_.params) state_.space.push_back(p.spec_text());
  state_.options = o;
  if (!path_.empty() && !fresh && std::filesystem::exists(path_)) {
    SweepState old = sweep_from_json(read_file(path_, 256 << 20, "sweep state"), path_);
    SweepOptions a = old.options, b = o;
    a.parallel = b.parallel = 1;         // how many run at once does not change the sweep
    a.baseline = b.baseline;             // trial 0 is in the file either way
    a.min_epochs = sweep_min_epochs(a);  // a file may hold 0 (the default) unresolved
    if (old.space != state_.space || !(a == b))
      throw Error(path_ +
                  " holds a different sweep (other parameters or options); pass --fresh to "
                  "replace it, or repeat that sweep's options to continue it");
    old.options.parallel = o.parallel;
    old.options.min_epochs = o.min_epochs;
    state_ = std::move(old);
    for (Trial& t : state_.trials)
      if (t.status == Trial::Status::Running || t.status == Trial::Status::Pending) {
        t.status = Trial::Status::Pending;  // starts again from epoch 1
        t.epochs.clear();
      }
    resumed_ = true;
  } else if (o.baseline) {
    Trial t;
    state_.baseline_skipped = current_search_point(space_, project_.graph, project_.training, t.x);
    if (state_.baseline_skipped.empty()) {
      t.baseline = true;
      state_.trials.push_back(std::move(t));  // pending: next_trial hands it out first
    }
  }
  sampler_ = o.tpe ? std::unique_ptr<Sampler>(std::make_unique<TpeSampler>(o.seed, o.n_startup))
                   : std::make_unique<RandomSampler>(o.seed);
  if (o.asha && double(o.epochs) > o.min_epochs) {
    asha_ = std::make_unique<Asha>(o.min_epochs, double(o.epochs), o.eta);
    // Replay the rungs of the trials already run, in trial order.
    for (const Trial& t : state_.trials)
      for (const TrialEpoch& e : t.epochs)
        if (asha_->rung_of(e.at) >= 0) asha_->report(t.id, e.at, value_of(e));
  }
}

SweepState Sweep::state() const {
  std::lock_guard<std::mutex> l(m_);
  return state_;
}

void Sweep::save_locked() {
  if (!path_.empty()) write_file_atomic(path_, sweep_to_json(state_, space_, 1) + "\n");
}

int Sweep::next_trial() {
  std::lock_guard<std::mutex> l(m_);
  for (Trial& t : state_.trials)
    if (t.status == Trial::Status::Pending) {
      t.status = Trial::Status::Running;
      return t.id;
    }
  if (int(state_.trials.size()) >= state_.options.trials) return -1;
  std::vector<Observation> done;
  for (const Trial& t : state_.trials)
    if ((t.status == Trial::Status::Completed || t.status == Trial::Status::Pruned) &&
        std::isfinite(t.value()))
      done.push_back({t.x, t.value(), int64_t(t.epochs.size())});
  Trial t;
  t.id = int(state_.trials.size());
  t.x = sampler_->sample(space_.params, done, t.id);
  t.status = Trial::Status::Running;
  state_.trials.push_back(t);
  save_locked();
  return t.id;
}

void Sweep::run(const std::function<void(const Trial&)>& on_update, const std::atomic<bool>* stop) {
  std::mutex report_m;  // on_update one call at a time
  auto report = [&](const Trial& t) {
    if (!on_update) return;
    std::lock_guard<std::mutex> l(report_m);
    on_update(t);
  };
  const int k = std::max(1, std::min<int>(state_.options.parallel,
                                          int(std::max(1u, std::thread::hardware_concurrency()))));
  // Each trial's Trainer sets the process-wide thread count (parallel trials
  // set 1); put back what was there so later runs and kernels in this
  // process do not inherit a sweep's single thread.
  struct RestoreThreads {
    int n = num_threads();
    ~RestoreThreads() { set_num_threads(n); }
  } restore_threads;
  auto worker = [&] {
    while (!(stop && *stop)) {
      const int id = next_trial();
      if (id < 0) return;
      run_trial(id, report, stop);
    }
  };
  if (k == 1) {
    worker();
    return;
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < k; ++i) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
}

void Sweep::run_trial(int id, const std::function<void(const Trial&)>& on_update,
                      const std::atomic<bool>* stop) {
  Trial snapshot;
  SearchPoint x;
  {
    std::lock_guard<std::mutex> l(m_);
    x = state_.trials[size_t(id)].x;
    snapshot = state_.trials[size_t(id)];
  }
  auto finish = [&](Trial::Status s, const std::string& error) {
    std::lock_guard<std::mutex> l(m_);
    Trial& t = state_.trials[size_t(id)];
    t.status = s;
    t.error = error;
    save_locked();
    snapshot = t;
  };
  const SweepOptions& o = state_.options;  // never changes while running
  Graph g = project_.graph;
  TrainConfig c = project_.training;
  std::unique_ptr<Trainer> trainer;
  try {
    apply_search_point(space_, x, g, c);
    c.epochs = o.epochs;
    if (c.val_split <= 0) c.val_split = o.val_split;
    c.checkpoint_dir.clear();
    c.resume.clear();
    c.early_stopping_patience = 0;
    c.restore_best = false;  // the last epoch's metrics are what ASHA and "best" compare
    c.steps_per_epoch_limit = o.steps_per_epoch_limit;
    // ASHA's rungs inside epochs are measured there; those at epoch ends are
    // the epochs' own measurements.
    c.validate_at.clear();
    if (asha_)
      for (double r : asha_->rungs())
        if (r < double(o.epochs) && r != std::floor(r)) c.validate_at.push_back(r);
    if (o.parallel > 1) c.threads = 1;
    // Each trial normalises its own copy, so parallel trials never share one.
    auto train = std::make_shared<Dataset>(data_->train);
    // No test split (a test fraction of 0): no test set, as a training run
    // has; the Trainer refuses an empty one.
    auto test = data_->test.size() > 0 ? std::make_shared<Dataset>(data_->test) : nullptr;
    trainer = std::make_unique<Trainer>(g, c, train, test);
  } catch (const std::exception& e) {
    finish(Trial::Status::Failed, e.what());
    on_update(snapshot);
    return;
  }
  on_update(snapshot);
  trainer->start();
  bool pruned = false, done = false;
  std::string failure;
  while (!done) {
    if (stop && *stop) trainer->cancel();
    auto ev = trainer->events().pop(std::chrono::milliseconds(100));
    if (!ev) continue;
    switch (ev->kind) {
      case TrainEvent::Kind::Validation:
      case TrainEvent::Kind::Epoch: {
        // What the Trainer measured after it saw the cancel of a pruned
        // trial is not part of the trial.
        if (pruned || !failure.empty()) break;
        const TrainEvent& e = *ev;
        const bool end = e.kind == TrainEvent::Kind::Epoch;
        TrialEpoch m;
        m.epoch = e.epoch;
        m.at = end ? double(e.epoch) : e.at;
        m.trained = end || e.steps_per_epoch <= 0
                        ? double(e.epoch)
                        : double(e.epoch - 1) + double(e.step_in_epoch) / double(e.steps_per_epoch);
        m.val_loss = e.val_loss;
        m.val_accuracy = e.val_accuracy;
        if (end) {
          m.train_loss = e.train_loss;
          m.test_loss = e.test_loss;
          m.test_accuracy = e.test_accuracy;
        }
        bool go_on = true;
        {
          std::lock_guard<std::mutex> l(m_);
          Trial& t = state_.trials[size_t(id)];
          t.epochs.push_back(m);
          if (end && !std::isfinite(e.train_loss)) {
            failure = "the training loss became " + std::to_string(e.train_loss);
            go_on = false;
          } else if (asha_ && m.at < double(o.epochs) && asha_->rung_of(m.at) >= 0) {
            go_on = asha_->report(id, m.at, t.value());
            pruned = !go_on;
          }
          save_locked();
          snapshot = t;
        }
        on_update(snapshot);
        if (!go_on) trainer->cancel();
        break;
      }
      case TrainEvent::Kind::Failed:
        // A pruned trial's fate after its last rung is not part of the
        // sweep; ignoring it keeps the status independent of how fast the
        // cancel reached the Trainer.
        if (!pruned) failure = ev->message;
        done = true;
        break;
      case TrainEvent::Kind::Finished:
      case TrainEvent::Kind::Cancelled:
        done = true;
        break;
      default:
        break;
    }
  }
  trainer->wait();
  if (!failure.empty()) {
    finish(Trial::Status::Failed, failure);
  } else if (pruned) {
    finish(Trial::Status::Pruned, "");
  } else if (stop && *stop) {
    return;  // stays "running" in the file; a resumed sweep runs it again
  } else {
    finish(Trial::Status::Completed, "");
  }
  on_update(snapshot);
}

void Sweep::apply_best(Graph& g, TrainConfig& c) const {
  std::lock_guard<std::mutex> l(m_);
  const int b = state_.best();
  if (b < 0) throw Error("the sweep has no completed trial yet");
  apply_search_point(space_, state_.trials[size_t(b)].x, g, c);
}

}  // namespace dc
