// The exported project's files (the recipe as train.py's CONFIG, the
// README, Docker and Kubernetes manifests filled in for this project) and
// writing them next to the weights, all or nothing.
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/image_data.h>
#include <deepcanvas/io.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/next_token.h>
#include <deepcanvas/pytorch_export.h>
#include <deepcanvas/settings.h>

#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "pytorch_model.h"
#include "pytorch_templates.h"

namespace dc {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// train.py's CONFIG: the project's settings in the words of its project
// file (the settings table writes them), with what train.py needs beside
// them: the output count and where the data is.
json recipe_json(const Project& p, const std::vector<PlanStep>& steps,
                 const std::string& data_path) {
  json r = settings_json(p.training, [](const SettingSpec& s) { return s.recipe; });
  // train.py augments only when this is an object.
  if (!p.training.augment.enabled()) r["augment"] = nullptr;
  r["name"] = p.name;
  r["outputs"] = steps.back().out_shape.numel();
  const DatasetSpec& d = p.dataset;
  r["dataset"] = {{"kind", d.kind},     {"path", data_path},  {"window", d.window},
                  {"stride", d.stride}, {"target", d.target}, {"test_fraction", d.test_fraction}};
  if (d.is_images()) {
    // What train.py needs to list, split and transform the pictures as
    // list_image_folder()/list_image_csv() and ImageTransform do; loading,
    // cache and memory budget are the engine's own (the DataLoader streams).
    r["dataset"]["split_seed"] = d.split_seed;
    r["dataset"]["image_extensions"] = image_extensions();
    r["dataset"]["crop_fraction"] = d.crop_fraction;
    r["dataset"]["bad_images_are_errors"] = d.bad_images_are_errors;
    r["dataset"]["loading"] = d.loading;
    r["dataset"]["cache"] = d.cache;
    r["dataset"]["preprocess"] = {{"mean", d.preprocess.mean}, {"std", d.preprocess.std}};
    r["image_augment"] = {{"resized_crop", p.training.augment.resized_crop},
                          {"color_jitter", p.training.augment.color_jitter}};
  }
  return r;
}

std::string slug(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += char(std::tolower(static_cast<unsigned char>(c)));
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "deepcanvas-model" : out.substr(0, 40);
}

std::string dataset_words(const Project& p) {
  return p.dataset.kind == "idx"            ? "IDX images"
         : p.dataset.kind == "text"         ? "a character-level text corpus"
         : p.dataset.kind == "csv_sequence" ? "CSV sequences"
         : p.dataset.kind == "image_folder" ? "an image folder (one subfolder per class)"
         : p.dataset.kind == "image_csv"    ? "images listed in a CSV file (path,label)"
                                            : p.dataset.kind;
}

std::string recipe_words(const Project& p) {
  const TrainConfig& t = p.training;
  return dataset_words(p) + ", " + enum_name(t.loss) + ", " + enum_name(t.optimizer.type) +
         " (lr " + json(t.optimizer.lr).dump() + ", " + enum_name(t.schedule.type) +
         " schedule), " + std::to_string(t.epochs) + " epochs of batch " + std::to_string(t.batch) +
         ", seed " + std::to_string(t.seed) + ", " + enum_name(t.precision);
}

}  // namespace

namespace {

// The files of the export, from steps lowered from p.graph.
std::map<std::string, std::string> project_files(const Project& p,
                                                 const std::vector<PlanStep>& steps,
                                                 const PyTorchExportOptions& o) {
  std::string data = o.data_path;
  if (data.empty()) {
    try {
      // Absolute: train.py runs from its own folder, not the project's.
      data = fs::absolute(resolve_dataset_dir(p)).lexically_normal().string();
    } catch (const Error&) {
      data = p.dataset.path;  // not on this machine: the README says to pass --data
    }
  }
  const std::string job = slug(p.name);
  std::string in;
  for (const PlanStep& s : steps)
    if (s.is_input) in = s.out_shape.str(true);
  const bool tokens = input_is_tokens(steps);
  const std::map<std::string, std::string> v = {
      {"PROJECT_NAME", p.name},
      {"PROJECT_FILE", p.file.empty() ? p.name : fs::path(p.file).filename().string()},
      {"PROJECT_BASENAME",
       p.file.empty() ? "PROJECT.dcproj" : fs::path(p.file).filename().string()},
      // Invalid UTF-8 (a name from an ONNX file) becomes U+FFFD, not an exception.
      {"CONFIG_JSON",
       recipe_json(p, steps, data).dump(-1, ' ', false, json::error_handler_t::replace)},
      {"RECIPE", recipe_words(p)},
      {"WEIGHTS", o.weights_source.empty()
                      ? "DeepCanvas's initialisation with the project's seed (" +
                            std::to_string(p.training.seed) + ")"
                      : "the weights of " + o.weights_source},
      {"DATA", data},
      {"DATA_FILE", fs::path(data).filename().string()},
      {"DATA_KIND", dataset_words(p)},
      {"LR", json(p.training.optimizer.lr).dump()},
      {"JOB_NAME", job},
      {"IMAGE_NAME", job + ":latest"},
      {"BASE_IMAGE", o.image},
      {"CLAIM", job + "-data"},
      {"GPUS", "4"},
      {"WORKERS", "1"},
      {"NODES", "2"},
      {"INPUT_DESC",
       (tokens ? "token ids (int64) of shape N×" : "float32 tensors of shape N×") + in +
           (p.training.normalize && !tokens ? ", normalised as the checkpoint's metadata says "
                                              "((x - mean) / stddev, pixels scaled to [0, 1] first)"
                                            : "")},
  };
  std::map<std::string, std::string> files;
  files["model.py"] = pytorch_model_py(p, steps, o.version);
  for (const char* name : {"train.py", "dc_safetensors.py", "requirements.txt", "Dockerfile",
                           "README.md", "k8s/pytorchjob.yaml", "k8s/job.yaml"})
    files[name] = fill_template(template_text(name), v);
  return files;
}

}  // namespace

std::map<std::string, std::string> pytorch_project_files(const Project& p,
                                                         const PyTorchExportOptions& o) {
  return project_files(p, lower_graph(p.graph), o);
}

void export_pytorch(const std::string& dir, const Project& p, const Plan& plan,
                    const PyTorchExportOptions& o) {
  // Everything that can fail on the project's side fails before a file exists.
  const std::map<std::string, std::string> files = project_files(p, plan.steps(), o);
  fs::path target = fs::path(dir).lexically_normal();
  // "out/" names the folder out: without this its parent would be out itself.
  if (!target.has_filename() && target.has_parent_path()) target = target.parent_path();
  std::error_code ec;
  const bool exists = fs::exists(target, ec);
  // Worded without any front end's controls: the CLI names its -o and
  // --force, the app its own choices, after looking at the folder itself.
  if (exists && !fs::is_directory(target, ec))
    throw IoError(dir + " exists and is not a folder; choose another folder for the export");
  if (exists && !fs::is_empty(target, ec) && !o.force)
    throw IoError(dir +
                  " exists and is not empty; nothing was replaced (choose an empty folder, or "
                  "ask for its contents to be replaced)");
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  const std::string stem =
      "." + target.filename().string() + ".export-" + std::to_string(::getpid());
  const fs::path tmp = parent / stem;
  fs::remove_all(tmp, ec);
  try {
    fs::create_directories(tmp / "k8s");
    for (const auto& [name, text] : files) write_file_atomic((tmp / name).string(), text);
    fs::permissions(tmp / "train.py",
                    fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add);
    CheckpointMeta meta;
    meta.input_shape = plan.input_shape().str(true);
    meta.num_classes =
        scored_classes(plan.input_shape(), plan.output_shape(), input_is_tokens(plan.steps()));
    write_checkpoint((tmp / "weights.safetensors").string(), plan.state(), {}, meta);
    // Swap in: the old folder moves aside first, so a failed rename can be undone.
    const fs::path old = parent / (stem + ".old");
    if (exists) fs::rename(target, old);
    try {
      fs::rename(tmp, target);
    } catch (...) {
      if (exists) fs::rename(old, target, ec);
      throw;
    }
    if (exists) fs::remove_all(old, ec);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    throw IoError("cannot write the PyTorch export to " + dir + ": " + e.code().message() + " (" +
                  e.path1().string() + ")");
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace dc
