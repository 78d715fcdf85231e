// metrics.jsonl (see run_log.h) into TrainEvents.
#include <deepcanvas/errors.h>
#include <deepcanvas/json_number.h>
#include <deepcanvas/run_log.h>
#include <deepcanvas/settings.h>
#include <deepcanvas/tensorboard_writer.h>

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

namespace dc {

namespace {

using json = nlohmann::json;

// Limits on a record's counts: far above any run (the settings' 100000
// epochs), low enough that epochs * steps_per_epoch cannot overflow.
constexpr int64_t kMaxEpochs = 100000, kMaxStepsPerEpoch = int64_t(1) << 40;
// Read per poll: a log that grew by more is read on in the next polls.
constexpr int64_t kMaxPollBytes = 64 << 20;

}  // namespace

// A record's field: `fallback` when absent or null (train.py writes null
// for a figure it has not measured); a figure out of its range or not
// finite throws IoError naming the line and field, and the caller skips
// the record.
struct RunLogRecord {
  const nlohmann::json& j;
  const std::string& where;
  double num(const char* key, double fallback = NAN, double lo = -DBL_MAX,
             double hi = DBL_MAX) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    return json_double(*it, where + ": " + key, lo, hi);
  }
  int64_t count(const char* key, int64_t fallback, int64_t hi) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    return json_int(*it, where + ": " + key, 0, hi);
  }
};

RunLogReader::RunLogReader(std::string path) : path_(std::move(path)) {}

std::vector<TrainEvent> RunLogReader::poll(bool final) {
  std::ifstream f(path_, std::ios::binary);
  if (!f) throw IoError(path_ + ": cannot be read");
  f.seekg(0, std::ios::end);
  const int64_t size = f.tellg();
  // A file that shrank was rewritten (a new run into the same folder): start over.
  if (size < offset_) {
    offset_ = 0;
    lineno_ = 0;
    pending_.clear();
  }
  std::string chunk(size_t(std::min(size - offset_, kMaxPollBytes)), '\0');
  f.seekg(offset_);
  f.read(chunk.data(), std::streamsize(chunk.size()));
  offset_ += int64_t(f.gcount());
  pending_ += chunk.substr(0, size_t(f.gcount()));

  std::vector<TrainEvent> out;
  size_t at = 0;
  for (size_t nl; (nl = pending_.find('\n', at)) != std::string::npos; at = nl + 1) {
    ++lineno_;
    TrainEvent e;
    if (parse_line(pending_.substr(at, nl - at), lineno_, e)) out.push_back(std::move(e));
  }
  pending_.erase(0, at);
  if (final && !pending_.empty()) {
    ++lineno_;
    TrainEvent e;
    if (parse_line(pending_, lineno_, e)) out.push_back(std::move(e));
    pending_.clear();
  }
  return out;
}

bool RunLogReader::parse_line(const std::string& line, int64_t lineno, TrainEvent& e) {
  if (line.find_first_not_of(" \t\r") == std::string::npos) return false;
  const std::string where = path_ + ": line " + std::to_string(lineno);
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("kind") || !j["kind"].is_string()) {
    warnings_.push_back(where + " is not a complete JSON record (truncated?); skipped");
    return false;
  }
  const std::string kind = j["kind"];
  try {
    return parse_record(RunLogRecord{j, where}, kind, e);
  } catch (const IoError& bad) {
    warnings_.push_back(std::string(bad.what()) + "; skipped");
    return false;
  }
}

bool RunLogReader::parse_record(const RunLogRecord& r, const std::string& kind, TrainEvent& e) {
  const json& j = r.j;
  const std::string& where = r.where;
  e.epoch = int(r.count("epoch", 0, kMaxEpochs));
  e.epochs = epochs_;
  e.step = r.count("step", 0, INT64_MAX);
  e.elapsed_s = r.num("elapsed_s", 0);
  if (kind == "start") {
    epochs_ = int(r.count("epochs", 0, kMaxEpochs));
    steps_per_epoch_ = r.count("steps_per_epoch", 0, kMaxStepsPerEpoch);
    e.kind = TrainEvent::Kind::Started;
    e.epochs = epochs_;
    auto word = [&](const char* k) {
      return j.contains(k) ? (j[k].is_string() ? j[k].get<std::string>() : j[k].dump()) : "?";
    };
    summary_ = "PyTorch " + word("torch") + ", " + word("world_size") + " process(es) on " +
               word("device") + ", " + word("precision") + ", batch " + word("batch") +
               " per process";
    e.message = summary_;
    return true;
  }
  if (kind == "step") {
    e.kind = TrainEvent::Kind::Step;
    e.loss = r.num("loss");
    e.accuracy = r.num("accuracy");
    e.batch_loss = r.num("batch_loss", e.loss);
    e.batch_accuracy = r.num("batch_accuracy", e.accuracy);
    e.lr = r.num("lr");
    e.samples_per_s = r.num("samples_per_s", 0);
    e.step_in_epoch = r.count("step_in_epoch", 0, kMaxStepsPerEpoch);
    e.steps_per_epoch = r.count("steps_per_epoch", steps_per_epoch_, kMaxStepsPerEpoch);
    e.steps_total = int64_t(epochs_) * e.steps_per_epoch;
    if (!std::isfinite(e.loss)) {
      warnings_.push_back(where + ": a step without a loss; skipped");
      return false;
    }
    return true;
  }
  if (kind == "epoch") {
    e.kind = TrainEvent::Kind::Epoch;
    e.train_loss = r.num("train_loss");
    e.train_accuracy = r.num("train_accuracy");
    e.val_loss = r.num("val_loss");
    e.val_accuracy = r.num("val_accuracy");
    e.test_loss = r.num("test_loss");
    e.test_accuracy = r.num("test_accuracy");
    e.best = j.contains("best") && j["best"].is_boolean() && j["best"].get<bool>();
    return true;
  }
  if (kind == "validation") {
    e.kind = TrainEvent::Kind::Validation;
    e.val_loss = r.num("val_loss");
    e.val_accuracy = r.num("val_accuracy");
    e.test_loss = r.num("test_loss");
    e.test_accuracy = r.num("test_accuracy");
    return true;
  }
  if (kind == "telemetry") {
    e.kind = TrainEvent::Kind::Telemetry;
    e.gpu.utilization_pct = int(r.num("utilization_pct", -1, -1, 100));
    const double used = r.num("memory_used_mib", -1, -1, 1e12);
    e.gpu.memory_used = used < 0 ? -1 : int64_t(used * 1048576.0);
    const double alloc = r.num("allocated_mib", -1, -1, 1e12);
    e.device_allocated = alloc < 0 ? -1 : int64_t(alloc * 1048576.0);
    return true;
  }
  if (kind == "end") {
    e.kind = TrainEvent::Kind::Finished;
    finished_ = true;
    if (j.contains("replicas_identical") && j["replicas_identical"].is_boolean())
      e.message = j["replicas_identical"].get<bool>()
                      ? "replicas identical"
                      : "replicas differ (max |diff| " + j["replicas_max_abs_diff"].dump() + ")";
    return true;
  }
  warnings_.push_back(where + ": unknown record kind '" + kind + "'; skipped");
  return false;
}

namespace {

// The record's figures that are finite: into the JSON line, and as the
// event file's "KIND/FIELD" scalars at `step`.
struct Record {
  json line;
  std::vector<std::pair<std::string, double>> scalars;
  std::string kind;
  Record(const std::string& k, int64_t step) : line{{"kind", k}, {"step", step}}, kind(k) {}
  void figure(const char* field, double v) {
    if (!std::isfinite(v)) return;
    line[field] = v;
    scalars.emplace_back(kind + "/" + field, v);
  }
};

constexpr double kMiB = 1048576.0;

}  // namespace

std::string default_runs_folder() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  const char* home = std::getenv("HOME");
  const std::string base =
      xdg && *xdg ? xdg : std::string(home && *home ? home : ".") + "/.local/share";
  return base + "/DeepCanvas/runs";
}

std::string new_run_folder(const std::string& name) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  std::string clean;
  for (char ch : name) clean += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return default_runs_folder() + "/" + stamp + "-" + (clean.empty() ? "run" : clean);
}

RunRecorder::RunRecorder(RunRecordOptions o) : opt_(std::move(o)) {
  std::error_code ec;
  std::filesystem::create_directories(opt_.dir, ec);
  const std::string path = opt_.dir + "/metrics.jsonl";
  if (!ec) jsonl_.open(path, std::ios::binary | (opt_.append ? std::ios::app : std::ios::trunc));
  if (ec || !jsonl_)
    jsonl_problem_ = path + " cannot be written" + (ec ? " (" + ec.message() + ")" : "") +
                     "; training goes on without it";
  if (opt_.tensorboard) tb_ = std::make_unique<TensorBoardWriter>(opt_.dir);
}

RunRecorder::~RunRecorder() = default;

std::string RunRecorder::event_file() const {
  return tb_ && tb_->ok() ? tb_->path() : "";
}

std::string RunRecorder::take_problem() {
  std::string out;
  if (!jsonl_problem_.empty() && !jsonl_reported_) {
    jsonl_reported_ = true;
    out = jsonl_problem_;
  }
  if (tb_ && !tb_->problem().empty() && !tb_reported_) {
    tb_reported_ = true;
    out += (out.empty() ? "" : "\n") + tb_->problem();
  }
  return out;
}

void RunRecorder::write_line(const std::string& line) {
  if (!jsonl_problem_.empty()) return;
  jsonl_ << line << '\n';
  jsonl_.flush();
  if (!jsonl_)
    jsonl_problem_ = opt_.dir +
                     "/metrics.jsonl cannot be written (disk full?); training goes on "
                     "without it";
}

void RunRecorder::add(const TrainEvent& e) {
  using K = TrainEvent::Kind;
  // Step, Epoch and Validation events carry the step; the others count at
  // the last one seen.
  const bool has_step = e.kind == K::Step || e.kind == K::Epoch || e.kind == K::Validation;
  if (has_step) last_step_ = std::max(last_step_, e.step);
  Record r(event_kind_name(e.kind), has_step ? e.step : last_step_);
  switch (e.kind) {
    case K::Started:
      r.line["kind"] = "start";
      r.line["project"] = opt_.project;
      r.line["epochs"] = e.epochs;
      if (e.epochs > 0 && e.steps_total % e.epochs == 0)
        r.line["steps_per_epoch"] = e.steps_total / e.epochs;
      r.line["written_by"] = "DeepCanvas";
      r.line["summary"] = e.message;
      if (tb_) {
        if (!opt_.settings_text.empty()) tb_->add_text("settings", opt_.settings_text, 0);
        if (!e.message.empty()) tb_->add_text("run", e.message, 0);
      }
      break;
    case K::Step:
      r.line["epoch"] = e.epoch;
      r.line["step_in_epoch"] = e.step_in_epoch;
      r.line["steps_per_epoch"] = e.steps_per_epoch;
      r.figure("loss", e.loss);
      r.figure("accuracy", e.accuracy);
      r.figure("batch_loss", e.batch_loss);
      r.figure("batch_accuracy", e.batch_accuracy);
      r.figure("lr", e.lr);
      r.figure("samples_per_s", e.samples_per_s);
      r.line["elapsed_s"] = e.elapsed_s;
      break;
    case K::Epoch:
      r.line["epoch"] = e.epoch;
      r.figure("train_loss", e.train_loss);
      r.figure("train_accuracy", e.train_accuracy);
      r.figure("val_loss", e.val_loss);
      r.figure("val_accuracy", e.val_accuracy);
      r.figure("test_loss", e.test_loss);
      r.figure("test_accuracy", e.test_accuracy);
      r.line["best"] = e.best;
      r.line["elapsed_s"] = e.elapsed_s;
      break;
    case K::Validation:
      r.line["epoch"] = e.epoch;
      r.figure("val_loss", e.val_loss);
      r.figure("val_accuracy", e.val_accuracy);
      r.figure("test_loss", e.test_loss);
      r.figure("test_accuracy", e.test_accuracy);
      break;
    case K::Telemetry:
      // At most one sample per step: the sampler's 4 Hz would otherwise
      // outweigh the run's own records.
      if (last_step_ == telemetry_step_) return;
      telemetry_step_ = last_step_;
      r.kind = "gpu";
      r.line["kind"] = "telemetry";
      if (e.gpu.utilization_pct >= 0) r.figure("utilization_pct", e.gpu.utilization_pct);
      if (e.gpu.memory_used >= 0) r.figure("memory_used_mib", double(e.gpu.memory_used) / kMiB);
      if (e.device_allocated >= 0) r.figure("allocated_mib", double(e.device_allocated) / kMiB);
      if (r.scalars.empty()) return;
      break;
    case K::Finished:
    case K::Failed:
    case K::Cancelled:
      r.line["kind"] = "end";
      r.line["status"] = event_kind_name(e.kind);
      r.line["elapsed_s"] = e.elapsed_s;
      if (!e.message.empty()) r.line["message"] = e.message;
      break;
    default:
      return;  // checkpoints, pauses: not figures of the run
  }
  write_line(r.line.dump());
  if (tb_) tb_->add_scalars(r.scalars, r.line["step"].get<int64_t>());
}

std::string run_settings_text(const TrainConfig& c) {
  return "```\n" + settings_json(c, [](const SettingSpec&) { return true; }).dump(2) + "\n```";
}

}  // namespace dc
