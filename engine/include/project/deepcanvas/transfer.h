#pragma once
// Transfer learning from a pretrained base: where fetched bases live, and
// the project "frozen base + new head" built from one. Debian ships no
// pretrained CNN weights, so a base is fetched on purpose by the user
// (installer/fetch-pretrained.sh) into their data folder; nothing here
// downloads anything.
#include <deepcanvas/project.h>

#include <string>

namespace dc {

struct PretrainedBase {
  std::string id;      // folder name under pretrained_dir(), e.g. "efficientnet_lite0"
  std::string title;   // "EfficientNet-Lite0 (ImageNet)"
  int64_t size = 224;  // the input size it was trained at
  // The normalisation it was trained with, per RGB channel on p/255.
  std::vector<float> mean, std;
  std::string fetch_command;  // what makes it present
};

// The bases DeepCanvas knows how to fetch (EfficientNet-Lite0 today).
const std::vector<PretrainedBase>& pretrained_bases();
const PretrainedBase& pretrained_base(const std::string& id);  // throws Error when unknown

// $DEEPCANVAS_PRETRAINED_DIR, else $XDG_DATA_HOME/DeepCanvas/pretrained, else
// ~/.local/share/DeepCanvas/pretrained.
std::string pretrained_dir();

// A fetched base: base.dcproj (the imported ONNX model) and its weights
// base.safetensors in pretrained_dir()/id.
struct BaseFiles {
  std::string dir, project, weights;
  bool present() const;
};
BaseFiles base_files(const PretrainedBase& b);

// Empty when the base is fetched; else the message saying so and the exact
// command that fetches it.
std::string base_missing_message(const PretrainedBase& b);

struct TransferOptions {
  int64_t size = 0;  // input size (0: the base's); a multiple of 32 keeps its padding
  int64_t classes = 10;
  DatasetSpec dataset;  // the bundled Fashion-MNIST subset by default; preprocess is filled in
};

// "Transfer: <base> (frozen) + new head": the base's layers up to its last
// spatial feature map, frozen, then GlobalAvgPool2D "head_pool" and Dense
// "head_fc" (classes units); Input RGB size x size; the dataset resized and
// grey -> RGB with the base's normalisation; training.init_weights naming
// the base's weights (absolute). Throws Error with base_missing_message()
// when the base is not fetched.
Project transfer_project(const PretrainedBase& b, const TransferOptions& o);

// The same on any base project (a graph whose input is an image and whose
// layers have weights in `weights`), for tests and imported models.
Project transfer_project_from(const Project& base, const std::string& weights,
                              const std::string& title, const PretrainedBase& b,
                              const TransferOptions& o);

}  // namespace dc
