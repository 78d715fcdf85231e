// metrics.jsonl (see run_log.h) into TrainEvents.
#include <deepcanvas/errors.h>
#include <deepcanvas/run_log.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

namespace dc {

namespace {

using json = nlohmann::json;

double num(const json& j, const char* key, double fallback = NAN) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

}  // namespace

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
  std::string chunk(size_t(size - offset_), '\0');
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
  e.epoch = int(num(j, "epoch", 0));
  e.epochs = epochs_;
  e.step = int64_t(num(j, "step", 0));
  e.elapsed_s = num(j, "elapsed_s", 0);
  if (kind == "start") {
    epochs_ = int(num(j, "epochs", 0));
    steps_per_epoch_ = int(num(j, "steps_per_epoch", 0));
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
    e.loss = num(j, "loss");
    e.accuracy = num(j, "accuracy");
    e.batch_loss = num(j, "batch_loss", e.loss);
    e.batch_accuracy = num(j, "batch_accuracy", e.accuracy);
    e.lr = num(j, "lr");
    e.samples_per_s = num(j, "samples_per_s", 0);
    e.step_in_epoch = int64_t(num(j, "step_in_epoch", 0));
    e.steps_per_epoch = int64_t(num(j, "steps_per_epoch", steps_per_epoch_));
    e.steps_total = int64_t(epochs_) * e.steps_per_epoch;
    if (!std::isfinite(e.loss)) {
      warnings_.push_back(where + ": a step without a loss; skipped");
      return false;
    }
    return true;
  }
  if (kind == "epoch") {
    e.kind = TrainEvent::Kind::Epoch;
    e.train_loss = num(j, "train_loss");
    e.train_accuracy = num(j, "train_accuracy");
    e.val_loss = num(j, "val_loss");
    e.val_accuracy = num(j, "val_accuracy");
    e.test_loss = num(j, "test_loss");
    e.test_accuracy = num(j, "test_accuracy");
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
