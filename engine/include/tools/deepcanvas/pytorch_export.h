#pragma once
// PyTorch export: a project as a standalone PyTorch project (model.py,
// train.py, requirements, Dockerfile, Kubernetes manifests, README) that
// trains on one GPU, under torchrun with DDP, in Docker or on Kubernetes,
// with nothing of DeepCanvas installed, and writes metrics and safetensors
// checkpoints DeepCanvas reads back (File > Open Run..., eval).
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>

#include <map>
#include <string>
#include <vector>

namespace dc {

struct PyTorchExportOptions {
  bool force = false;     // replace a non-empty output folder
  std::string version;    // DeepCanvas's, for the generated files' headers
  std::string data_path;  // train.py's default --data ("" : the project's dataset as found)
  // Where weights.safetensors comes from, for the README ("" : the seed's initialisation).
  std::string weights_source;
  std::string image = "pytorch/pytorch:2.3.1-cuda12.1-cudnn8-runtime";  // Dockerfile base
};

// Every layer of g that has no PyTorch counterpart here, as
// "Type 'name': why". Empty when the whole network exports.
std::vector<std::string> pytorch_unsupported(const Graph& g);

// Python attribute names for the graph's layers, by node id: the layer's
// name where it is a usable identifier, else a sanitised unique one.
std::map<NodeId, std::string> pytorch_attribute_names(const Graph& g);

// model.py: an nn.Module with one attribute per layer, forward in
// topological order, state_dict keys equal to DeepCanvas's tensor names.
// Throws Error listing every unsupported layer.
std::string pytorch_model_py(const Project& p, const std::string& version = "");

// Every text file of the export by relative path (model.py, train.py,
// dc_safetensors.py, requirements.txt, Dockerfile, k8s/*.yaml, README.md).
std::map<std::string, std::string> pytorch_project_files(const Project& p,
                                                         const PyTorchExportOptions& o);

// Writes the files and weights.safetensors (plan's weights) into dir: all in
// a temporary sibling folder first, then renamed into place, so a failed
// export leaves nothing half-written. Throws IoError when dir exists and is
// not empty (unless o.force), Error for unsupported layers.
void export_pytorch(const std::string& dir, const Project& p, const Plan& plan,
                    const PyTorchExportOptions& o);

}  // namespace dc
