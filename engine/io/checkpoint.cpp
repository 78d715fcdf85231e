#include <deepcanvas/checkpoint.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>

#include <filesystem>

#include <nlohmann/json.hpp>

namespace dc {

void write_checkpoint(const std::string& path, std::vector<std::pair<std::string, Tensor>> model,
                      const std::vector<std::pair<std::string, Tensor>>& optimizer,
                      const CheckpointMeta& meta) {
  for (auto& [k, t] : optimizer) model.emplace_back("optimizer." + k, t);
  nlohmann::json names = meta.class_names;
  std::map<std::string, std::string> md{
      {"format", "deepcanvas-checkpoint"},   {"format_version", "1"},
      {"epoch", std::to_string(meta.epoch)}, {"step", std::to_string(meta.step)},
      {"input_shape", meta.input_shape},     {"num_classes", std::to_string(meta.num_classes)},
      {"mean", std::to_string(meta.mean)},   {"stddev", std::to_string(meta.stddev)},
      {"class_names", names.dump()},
  };
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  save_safetensors(path, model, md);
}

CheckpointInfo read_checkpoint(const std::string& path) {
  SafetensorsFile f = load_safetensors(path);
  CheckpointInfo ck;
  ck.metadata = f.metadata;
  auto it = f.metadata.find("format");
  if (it == f.metadata.end() || it->second != "deepcanvas-checkpoint")
    throw IoError(path +
                  ": not a DeepCanvas checkpoint (its metadata has no format "
                  "\"deepcanvas-checkpoint\")");
  for (auto& [k, t] : f.tensors) {
    if (k.rfind("optimizer.", 0) == 0)
      ck.optimizer.emplace_back(k.substr(10), t);
    else
      ck.model.emplace_back(k, t);
  }
  try {
    ck.epoch = std::stoi(f.metadata.at("epoch"));
    ck.step = std::stoll(f.metadata.at("step"));
  } catch (const std::exception&) {
    throw IoError(path + ": checkpoint metadata lacks a valid epoch/step");
  }
  return ck;
}

}  // namespace dc
