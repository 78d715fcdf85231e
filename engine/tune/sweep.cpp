#include <deepcanvas/checkpoint.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/json_number.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/sweep.h>
#include <deepcanvas/trainer.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <filesystem>
#include <thread>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace dc {

namespace {

using json = nlohmann::json;

json num(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
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

std::string sweep_weights_path(const std::string& state_path) {
  std::filesystem::path p(state_path);
  if (p.extension() == ".json") p.replace_extension();
  p += ".best.safetensors";
  return p.string();
}

std::string sweep_best_weights(const SweepState& s, const std::string& path) {
  const int b = s.best();
  if (b < 0 || path.empty()) return {};
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return {};
  try {
    return read_checkpoint_metadata(path).sweep_trial == b ? path : std::string();
  } catch (const std::exception&) {
    return {};  // damaged: not offered; the next better trial rewrites it
  }
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

namespace {

// ASHA for o's options (min_epochs resolved or 0), or null when it does not
// prune: switched off, or a first rung at or past the last epoch.
std::unique_ptr<Asha> asha_for(const SweepOptions& o) {
  const double min_epochs = sweep_min_epochs(o);
  if (!o.asha || !(double(o.epochs) > min_epochs)) return nullptr;
  return std::make_unique<Asha>(min_epochs, double(o.epochs), o.eta);
}

// Reads a state file's fields, each checked before use: a file is rewritten
// by the tool but editable by anyone, and its ids index the trials, its
// points feed the samplers and its counts size the work of a resume.
// Throws IoError "FIELD: what is wrong" (sweep_from_json adds the file).
class StateReader {
 public:
  explicit StateReader(const json& j) : j_(j) {}

  SweepState read() {
    SweepState s;
    const bool ours = j_.is_object() && j_.contains("format") &&
                      j_["format"] == "deepcanvas-sweep" && j_.contains("version") &&
                      j_["version"] == 1;
    if (!ours) throw IoError("is not a DeepCanvas sweep state (format deepcanvas-sweep, v1)");
    const json& space = array(j_, "space", "space");
    for (size_t i = 0; i < space.size(); ++i)
      s.space.push_back(text(space[i], "space[" + std::to_string(i) + "]"));
    s.options = options(object(j_, "options", "options"));
    // Files from before baseline trials had none.
    if (j_.contains("baseline_skipped"))
      s.baseline_skipped = text(j_["baseline_skipped"], "baseline_skipped");
    const json& trials = array(j_, "trials", "trials");
    // A resume replays and samples from every trial; more than the sweep
    // runs is no sweep this tool wrote.
    if (trials.size() > size_t(s.options.trials))
      throw IoError("trials: holds " + std::to_string(trials.size()) +
                    " trials, more than options.trials (" + std::to_string(s.options.trials) + ")");
    const std::unique_ptr<Asha> asha = asha_for(s.options);
    for (size_t i = 0; i < trials.size(); ++i)
      s.trials.push_back(trial(trials[i], i, s, asha.get()));
    return s;
  }

 private:
  static const json& field(const json& o, const char* key, const std::string& name) {
    if (!o.is_object() || !o.contains(key)) throw IoError(name + ": missing");
    return o[key];
  }
  static const json& array(const json& o, const char* key, const std::string& name) {
    const json& v = field(o, key, name);
    if (!v.is_array()) throw IoError(name + ": must be a list");
    return v;
  }
  static const json& object(const json& o, const char* key, const std::string& name) {
    const json& v = field(o, key, name);
    if (!v.is_object()) throw IoError(name + ": must be an object");
    return v;
  }
  static std::string text(const json& v, const std::string& name) {
    if (!v.is_string()) throw IoError(name + ": must be a string");
    return v.get<std::string>();
  }
  static bool flag(const json& o, const char* key, const std::string& name) {
    if (!o.contains(key)) return false;
    if (!o[key].is_boolean()) throw IoError(name + ": must be true or false");
    return o[key].get<bool>();
  }
  static std::string word(const json& o, const char* key, const char* a, const char* b) {
    const std::string name = std::string("options.") + key;
    const std::string w = text(field(o, key, name), name);
    if (w != a && w != b) throw IoError(name + ": must be \"" + a + "\" or \"" + b + "\"");
    return w;
  }

  static SweepOptions options(const json& o) {
    auto num = [&](const char* key) -> const json& {
      return field(o, key, std::string("options.") + key);
    };
    auto name = [](const char* key) { return std::string("options.") + key; };
    SweepOptions r;
    r.trials = json_int32(num("trials"), name("trials"), 1, kMaxSweepTrials);
    r.epochs = json_int32(num("epochs"), name("epochs"), 1, kMaxSweepEpochs);
    r.asha = word(o, "pruner", "asha", "none") == "asha";
    r.eta = json_int32(num("eta"), name("eta"), 2, kMaxSweepEta);
    r.min_epochs = json_double(num("min_epochs"), name("min_epochs"), 0, r.epochs);
    r.tpe = word(o, "sampler", "tpe", "random") == "tpe";
    r.n_startup = json_int32(num("n_startup"), name("n_startup"), -1, kMaxSweepTrials);
    r.seed = json_uint64(num("seed"), name("seed"));
    r.parallel = json_int32(num("parallel"), name("parallel"), 1);
    r.val_split = json_double(num("val_split"), name("val_split"), 0, 0.99);
    r.steps_per_epoch_limit =
        json_int(num("steps_per_epoch_limit"), name("steps_per_epoch_limit"), 0, INT64_MAX);
    r.baseline = flag(o, "baseline", name("baseline"));
    return r;
  }

  // A figure of a measurement: null stands for none (NaN).
  static double figure(const json& e, const char* key, const std::string& where, double lo,
                       double hi) {
    const json& v = field(e, key, where + "." + key);
    return v.is_null() ? NAN : json_double(v, where + "." + key, lo, hi);
  }

  static Trial trial(const json& tj, size_t index, const SweepState& s, const Asha* asha) {
    const std::string where = "trials[" + std::to_string(index) + "]";
    if (!tj.is_object()) throw IoError(where + ": must be an object");
    Trial t;
    // Ids index the trials (a pending one's id is the trial a worker runs).
    t.id = json_int32(field(tj, "id", where + ".id"), where + ".id", 0, kMaxSweepTrials - 1);
    if (size_t(t.id) != index)
      throw IoError(where + ".id: must be " + std::to_string(index) +
                    " (trials are numbered in order), got " + std::to_string(t.id));
    const json& x = array(tj, "x", where + ".x");
    if (x.size() != s.space.size())
      throw IoError(where + ".x: holds " + std::to_string(x.size()) + " values for the " +
                    std::to_string(s.space.size()) + " parameters of the space");
    for (size_t i = 0; i < x.size(); ++i)
      t.x.push_back(json_double(x[i], where + ".x[" + std::to_string(i) + "]", -DBL_MAX, DBL_MAX));
    const std::string st = text(field(tj, "status", where + ".status"), where + ".status");
    bool known = false;
    for (Trial::Status k : kStatuses)
      if (st == trial_status_name(k)) t.status = k, known = true;
    if (!known) throw IoError(where + ".status: '" + st + "' is not a trial status");
    const json& metrics = array(tj, "metrics", where + ".metrics");
    for (size_t i = 0; i < metrics.size(); ++i)
      t.epochs.push_back(measurement(metrics[i], where + ".metrics[" + std::to_string(i) + "]",
                                     s.options, asha, t.epochs));
    // best() and the samplers read a finished trial's last measurement.
    if ((t.status == Trial::Status::Completed || t.status == Trial::Status::Pruned) &&
        t.epochs.empty())
      throw IoError(where + ".metrics: a " + st + " trial needs at least one measurement");
    if (tj.contains("error")) t.error = text(tj["error"], where + ".error");
    t.baseline = flag(tj, "baseline", where + ".baseline");
    return t;
  }

  static TrialEpoch measurement(const json& e, const std::string& where, const SweepOptions& o,
                                const Asha* asha, const std::vector<TrialEpoch>& before) {
    if (!e.is_object()) throw IoError(where + ": must be an object");
    TrialEpoch m;
    const double epochs = double(o.epochs);
    m.epoch = json_int32(field(e, "epoch", where + ".epoch"), where + ".epoch", 1, o.epochs);
    // Files from before fractional rungs hold epoch ends only.
    m.at = e.contains("at") ? json_double(e["at"], where + ".at", 0, epochs) : double(m.epoch);
    m.trained =
        e.contains("trained") ? json_double(e["trained"], where + ".trained", 0, epochs) : m.at;
    // Each measurement is at an epoch's end or at one of ASHA's rungs, later
    // than the one before: that bounds a trial's list by epochs + rungs.
    if (!(m.at > 0) || (m.at != std::floor(m.at) && !(asha && asha->rung_of(m.at) >= 0)))
      throw IoError(where + ".at: " + attr_to_string(m.at) +
                    " is neither an epoch's end nor one of the sweep's ASHA rungs");
    if (!before.empty() && !(m.at > before.back().at))
      throw IoError(where + ".at: " + attr_to_string(m.at) +
                    " is not later than the measurement before it");
    // ASHA's rungs match within rounding: two measurements of one rung
    // would count the trial twice there.
    if (asha && !before.empty() && asha->rung_of(m.at) >= 0 &&
        asha->rung_of(m.at) == asha->rung_of(before.back().at))
      throw IoError(where + ".at: " + attr_to_string(m.at) +
                    " measures the same ASHA rung as the measurement before it");
    m.train_loss = figure(e, "train_loss", where, -DBL_MAX, DBL_MAX);
    m.val_loss = figure(e, "val_loss", where, -DBL_MAX, DBL_MAX);
    m.val_accuracy = figure(e, "val_accuracy", where, 0, 1);
    m.test_loss = figure(e, "test_loss", where, -DBL_MAX, DBL_MAX);
    m.test_accuracy = figure(e, "test_accuracy", where, 0, 1);
    return m;
  }

  const json& j_;
};

}  // namespace

SweepState sweep_from_json(const std::string& text, const std::string& source) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw SweepStateError(source, "not a readable sweep state: not valid JSON");
  try {
    return StateReader(j).read();
  } catch (const Error& e) {
    throw SweepStateError(source, e.what());
  }
}

SweepState load_sweep_state(const std::string& path) {
  return sweep_from_json(read_file(path, kMaxSweepStateBytes, "sweep state"), path);
}

void check_sweep_points(const SweepState& s, const SearchSpace& space, const std::string& source) {
  for (const Trial& t : s.trials) {
    if (t.x.size() != space.params.size())
      throw SweepStateError(source, "trials[" + std::to_string(t.id) + "].x: holds " +
                                        std::to_string(t.x.size()) + " values for " +
                                        std::to_string(space.params.size()) + " parameters");
    for (size_t i = 0; i < t.x.size(); ++i) {
      const SearchParam& p = space.params[i];
      const double x = t.x[i];
      const bool whole = p.kind == SearchParam::Kind::Int || p.kind == SearchParam::Kind::Choice;
      double lo = p.lo, hi = p.hi;
      if (p.kind == SearchParam::Kind::Choice) {
        lo = 0;
        hi = double(p.choices.size()) - 1;
      }
      // The file's space holds the bounds to 6 digits (spec_text): a point
      // sampled inside the exact bounds may lie that much outside these
      // (relative to each bound, so a log range's point stays positive).
      if (!(x >= lo - 1e-6 * std::abs(lo) && x <= hi + 1e-6 * std::abs(hi)) ||
          (whole && x != std::floor(x)))
        throw SweepStateError(source, "trials[" + std::to_string(t.id) + "].x[" +
                                          std::to_string(i) + "]: " + attr_to_string(x) +
                                          " is not a point of " + p.spec_text());
    }
  }
}

std::vector<SweepDifference> sweep_differences(const SweepState& saved,
                                               const std::vector<std::string>& space,
                                               const SweepOptions& o) {
  std::vector<SweepDifference> d;
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (saved.space != space) d.push_back({"space", join(saved.space), join(space)});
  auto text = [](auto v) {
    if constexpr (std::is_same_v<decltype(v), bool>)
      return std::string(v ? "true" : "false");
    else if constexpr (std::is_floating_point_v<decltype(v)>)
      return attr_to_string(v);
    else
      return std::to_string(v);
  };
  auto field = [&](const char* key, auto there, auto here) {
    if (there != here) d.push_back({key, text(there), text(here)});
  };
  const SweepOptions& a = saved.options;
  field("trials", a.trials, o.trials);
  field("epochs", a.epochs, o.epochs);
  field("tpe", a.tpe, o.tpe);
  field("asha", a.asha, o.asha);
  field("seed", a.seed, o.seed);
  field("eta", a.eta, o.eta);
  // A file may hold 0 (the default) unresolved.
  field("min_epochs", sweep_min_epochs(a), sweep_min_epochs(o));
  field("val_split", a.val_split, o.val_split);
  field("steps_per_epoch_limit", a.steps_per_epoch_limit, o.steps_per_epoch_limit);
  field("n_startup", a.n_startup, o.n_startup);
  return d;
}

Sweep::Sweep(Project project, std::shared_ptr<const TrainTest> data, SearchSpace space,
             SweepOptions o, std::string state_path, bool fresh)
    : project_(std::move(project)),
      data_(std::move(data)),
      space_(std::move(space)),
      path_(std::move(state_path)) {
  if (o.trials < 1 || o.trials > kMaxSweepTrials)
    throw Error("a sweep's trials must be in [1, " + std::to_string(kMaxSweepTrials) + "]");
  if (o.epochs < 1 || o.epochs > kMaxSweepEpochs)
    throw Error("a sweep's epochs per trial must be in [1, " + std::to_string(kMaxSweepEpochs) +
                "]");
  if (o.parallel < 1) throw Error("a sweep's parallel trials must be at least 1");
  if (o.eta < 2 || o.eta > kMaxSweepEta)
    throw Error("ASHA's reduction factor (eta) must be in [2, " + std::to_string(kMaxSweepEta) +
                "]");
  if (!(o.min_epochs >= 0) || !std::isfinite(o.min_epochs))
    throw Error(
        "ASHA's first rung (min_epochs) must be a positive number of epochs (0: epochs / eta^2)");
  if (o.n_startup < 0) o.n_startup = std::clamp(o.trials / 3, 2, 10);
  o.min_epochs = sweep_min_epochs(o);
  for (const SearchParam& p : space_.params) state_.space.push_back(p.spec_text());
  state_.options = o;
  if (!path_.empty() && !fresh && std::filesystem::exists(path_)) {
    SweepState old = load_sweep_state(path_);
    if (auto d = sweep_differences(old, state_.space, o); !d.empty())
      throw SweepMismatchError(path_, std::move(d));
    check_sweep_points(old, space_, path_);
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
  asha_ = asha_for(o);
  if (asha_) {
    // Replay the rungs of the trials already run, in trial order: recorded,
    // not ranked (report() sorts the rung each time, quadratic over a file
    // of many trials). The reader let each trial reach each rung once.
    for (const Trial& t : state_.trials)
      for (const TrialEpoch& e : t.epochs)
        if (const int k = asha_->rung_of(e.at); k >= 0) asha_->record(t.id, k, value_of(e));
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
  int64_t step = 0;  // the optimizer steps at the last epoch's end
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
        if (end) step = e.step;
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
    keep_if_best(id, *trainer, step);
  }
  on_update(snapshot);
}

void Sweep::keep_best_weights(std::string path) {
  std::lock_guard<std::mutex> l(m_);
  weights_path_ = std::move(path);
  if (weights_path_.empty() || resumed_) return;
  // Another sweep's best would otherwise be offered as this one's until a
  // trial of this one completes.
  std::error_code ec;
  std::filesystem::remove(weights_path_, ec);
}

std::string Sweep::weights_problem() const {
  std::lock_guard<std::mutex> l(m_);
  return weights_problem_;
}

void Sweep::keep_if_best(int id, Trainer& trainer, int64_t step) {
  std::lock_guard<std::mutex> l(m_);
  if (weights_path_.empty() || state_.best() != id) return;
  const Trial& t = state_.trials[size_t(id)];
  const double test = t.epochs.empty() ? NAN : t.epochs.back().test_accuracy;
  try {
    trainer.save_checkpoint(weights_path_, state_.options.epochs, step, test, id);
  } catch (const std::exception& e) {
    // A full disk loses the weights, not the sweep: its results are in
    // the state file and the trial can be trained again.
    weights_problem_ = e.what();
  }
}

void Sweep::apply_best(Graph& g, TrainConfig& c) const {
  std::lock_guard<std::mutex> l(m_);
  const int b = state_.best();
  if (b < 0) throw Error("the sweep has no completed trial yet");
  apply_search_point(space_, state_.trials[size_t(b)].x, g, c);
}

}  // namespace dc
