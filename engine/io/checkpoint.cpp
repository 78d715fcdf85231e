#include <deepcanvas/checkpoint.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

namespace dc {

void write_checkpoint(const std::string& path, std::vector<std::pair<std::string, Tensor>> model,
                      const std::vector<std::pair<std::string, Tensor>>& optimizer,
                      const CheckpointMeta& meta) {
  for (auto& [k, t] : optimizer) model.emplace_back("optimizer." + k, t);
  nlohmann::json names = meta.class_names;
  std::map<std::string, std::string> md{
      {"format", "deepcanvas-checkpoint"},
      {"format_version", std::to_string(kCheckpointFormatVersion)},
      {"epoch", std::to_string(meta.epoch)},
      {"step", std::to_string(meta.step)},
      {"input_shape", meta.input_shape},
      {"num_classes", std::to_string(meta.num_classes)},
      {"mean", std::to_string(meta.mean)},
      {"stddev", std::to_string(meta.stddev)},
      {"class_names", names.dump()},
  };
  if (std::isfinite(meta.test_accuracy)) md["test_accuracy"] = std::to_string(meta.test_accuracy);
  // Only when something is frozen, so other checkpoints keep their form.
  if (!meta.frozen_params.empty()) md["frozen_params"] = nlohmann::json(meta.frozen_params).dump();
  if (meta.sweep_trial >= 0) md["sweep_trial"] = std::to_string(meta.sweep_trial);
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  save_safetensors(path, model, md);
}

namespace {

// The whole string as an integer in [lo, hi], else nullopt ("5abc", "",
// "1e3" and out-of-range values included).
std::optional<int64_t> whole_int(const std::string& s, int64_t lo, int64_t hi) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

std::optional<float> whole_float(const std::string& s) {
  float v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

void check_metadata(const std::string& path, CheckpointInfo& ck) {
  auto field = [&](const char* key) -> const std::string* {
    auto it = ck.metadata.find(key);
    return it == ck.metadata.end() ? nullptr : &it->second;
  };
  const std::string* version = field("format_version");
  if (!version || version->empty())
    throw IoError(path + ": checkpoint metadata has no format_version");
  if (*version != std::to_string(kCheckpointFormatVersion))
    throw IoError(path + ": checkpoint format_version " + *version +
                  " is not one this DeepCanvas reads (" + std::to_string(kCheckpointFormatVersion) +
                  "); it was written by a newer version, or is damaged");
  const std::string* epoch = field("epoch");
  const std::string* step = field("step");
  auto e = epoch ? whole_int(*epoch, 0, kMaxCheckpointEpoch) : std::nullopt;
  if (!e)
    throw IoError(path + ": checkpoint epoch '" + (epoch ? *epoch : "") +
                  "' is not a whole number in 0.." + std::to_string(kMaxCheckpointEpoch));
  auto st = step ? whole_int(*step, 0, kMaxOptimizerSteps) : std::nullopt;
  if (!st)
    throw IoError(path + ": checkpoint step '" + (step ? *step : "") +
                  "' is not a whole number in 0.." + std::to_string(kMaxOptimizerSteps));
  ck.epoch = int(*e);
  ck.step = *st;
  if (const std::string* trial = field("sweep_trial")) {
    auto t = whole_int(*trial, 0, std::numeric_limits<int>::max());
    if (!t) throw IoError(path + ": checkpoint sweep_trial '" + *trial + "' is not a trial number");
    ck.sweep_trial = int(*t);
  }
  // Inference divides by stddev: zero or NaN would make every prediction NaN.
  if (const std::string* mean = field("mean"); mean && !whole_float(*mean))
    throw IoError(path + ": checkpoint mean '" + *mean + "' is not a finite number");
  if (const std::string* sd = field("stddev")) {
    auto v = whole_float(*sd);
    if (!v || *v <= 0)
      throw IoError(path + ": checkpoint stddev '" + *sd + "' is not a positive number");
  }
}

void check_weights(const std::string& path, const std::string& name, const Tensor& t) {
  if (t.dtype() != DType::F32)
    throw IoError(path + ": tensor '" + name + "' is " + dtype_name(t.dtype()) + " " +
                  t.shape().str(true) + "; DeepCanvas weights are F32");
  const float* v = t.f32();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(v[i]))
      throw IoError(path + ": tensor '" + name +
                    "' holds NaN or infinite values; the run that wrote it diverged, or the "
                    "file is damaged");
}

// The metadata checks, without the tensors (ck.metadata filled first).
void check_checkpoint_metadata(const std::string& path, CheckpointInfo& ck) {
  auto it = ck.metadata.find("format");
  if (it == ck.metadata.end() || it->second != "deepcanvas-checkpoint")
    throw IoError(path +
                  ": not a DeepCanvas checkpoint (its metadata has no format "
                  "\"deepcanvas-checkpoint\")");
  check_metadata(path, ck);
  if (auto fz = ck.metadata.find("frozen_params"); fz != ck.metadata.end()) {
    nlohmann::json j = nlohmann::json::parse(fz->second, nullptr, false);
    bool ok = j.is_array();
    if (ok)
      for (const auto& e : j) ok = ok && e.is_string();
    if (!ok) throw IoError(path + ": metadata frozen_params is not a list of names");
    ck.frozen_params = j.get<std::vector<std::string>>();
  }
}

}  // namespace

CheckpointInfo read_checkpoint(const std::string& path) {
  SafetensorsFile f = load_safetensors(path);
  CheckpointInfo ck;
  ck.metadata = std::move(f.metadata);
  check_checkpoint_metadata(path, ck);
  for (auto& [k, t] : f.tensors) {
    if (k.rfind("optimizer.", 0) == 0)
      ck.optimizer.emplace_back(k.substr(10), t);
    else
      ck.model.emplace_back(k, t);
  }
  for (const auto& [name, t] : ck.model) check_weights(path, name, t);
  return ck;
}

CheckpointInfo read_checkpoint_metadata(const std::string& path) {
  CheckpointInfo ck;
  ck.metadata = load_safetensors_metadata(path);
  check_checkpoint_metadata(path, ck);
  return ck;
}

}  // namespace dc
