// metrics.jsonl (see run_log.h) into TrainEvents.
#include <deepcanvas/errors.h>
#include <deepcanvas/json_number.h>
#include <deepcanvas/run_log.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <fstream>

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

}  // namespace dc
