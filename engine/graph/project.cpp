#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/project.h>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#ifndef DC_SOURCE_DIR
#define DC_SOURCE_DIR ""
#endif

namespace dc {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& source, const std::string& where,
                       const std::string& msg) {
  throw IoError(source + ": " + (where.empty() ? "" : where + ": ") + msg);
}

AttrValue attr_from_json(const AttrSpec& s, const json& v, const std::string& src,
                         const std::string& where) {
  auto wrong = [&]() -> AttrValue {
    fail(src, where, "must be " + attr_type_with_article(s.type) + ", got " + v.dump());
  };
  switch (s.type) {
    case AttrType::Int:
      if (!v.is_number_integer()) return wrong();
      return v.get<int64_t>();
    case AttrType::Float:
      if (!v.is_number()) return wrong();
      return v.get<double>();
    case AttrType::Bool:
      if (!v.is_boolean()) return wrong();
      return v.get<bool>();
    case AttrType::String:
    case AttrType::Enum:
      if (!v.is_string()) return wrong();
      return v.get<std::string>();
    case AttrType::IntPair:
    case AttrType::IntList: {
      // A single integer for a pair means both (kernel: 3 == 3×3).
      if (s.type == AttrType::IntPair && v.is_number_integer())
        return std::vector<int64_t>{v.get<int64_t>(), v.get<int64_t>()};
      if (!v.is_array()) return wrong();
      std::vector<int64_t> out;
      for (auto& x : v) {
        if (!x.is_number_integer()) return wrong();
        out.push_back(x.get<int64_t>());
      }
      return out;
    }
  }
  return wrong();
}

json attr_to_json(const AttrValue& v) {
  return std::visit([](const auto& x) -> json { return json(x); }, v);
}

json graph_json(const Graph& g) {
  json nodes = json::array(), edges = json::array();
  for (const auto& [id, n] : g.nodes()) {
    json a = json::object();
    for (const auto& [k, v] : n.attrs.values()) a[k] = attr_to_json(v);
    nodes.push_back(
        {{"id", id}, {"type", n.type}, {"name", n.name}, {"attrs", a}, {"pos", {n.x, n.y}}});
  }
  for (const auto& e : g.edges())
    edges.push_back(
        {{"from", g.node(e.src).name}, {"to", g.node(e.dst).name}, {"port", e.dst_port}});
  return {{"nodes", nodes}, {"edges", edges}};
}

Graph graph_from(const json& j, const std::string& src) {
  register_builtin_layers();
  Graph g;
  if (!j.is_object()) fail(src, "graph", "must be an object with 'nodes' and 'edges'");
  if (!j.contains("nodes") || !j["nodes"].is_array())
    fail(src, "graph.nodes", "missing or not a list");
  int k = 0;
  for (const auto& n : j["nodes"]) {
    std::string where = "graph.nodes[" + std::to_string(k++) + "]";
    if (!n.is_object()) fail(src, where, "must be an object");
    if (!n.contains("type") || !n["type"].is_string()) fail(src, where, "has no 'type'");
    std::string type = n["type"];
    const LayerDescriptor* d = LayerRegistry::instance().find(type);
    if (!d) {
      std::string known;
      for (auto* x : LayerRegistry::instance().all())
        known += (known.empty() ? "" : ", ") + x->type;
      fail(src, where, "unknown layer type '" + type + "' (known: " + known + ")");
    }
    std::string name = n.value("name", "");
    if (n.contains("name") && !n["name"].is_string()) fail(src, where, "'name' must be a string");
    if (!name.empty()) where += " (" + type + " '" + name + "')";
    Attrs attrs;
    if (n.contains("attrs")) {
      if (!n["attrs"].is_object()) fail(src, where + ".attrs", "must be an object");
      for (auto it = n["attrs"].begin(); it != n["attrs"].end(); ++it) {
        const AttrSpec* s = d->find_attr(it.key());
        if (!s) {
          std::string valid;
          for (auto& a : d->attrs) valid += (valid.empty() ? "" : ", ") + a.name;
          fail(src, where,
               "unknown attribute '" + it.key() + "' for " + type +
                   (valid.empty() ? " (it has none)" : " (valid: " + valid + ")"));
        }
        AttrValue v = attr_from_json(*s, it.value(), src, where + ".attrs." + it.key());
        std::string err = validate_attr(*s, v);
        if (!err.empty()) fail(src, where, err);
        attrs.set(it.key(), v);
      }
    }
    double x = 0, y = 0;
    if (n.contains("pos")) {
      const json& p = n["pos"];
      if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number())
        fail(src, where + ".pos", "must be [x, y]");
      x = p[0];
      y = p[1];
    }
    int id = -1;
    if (n.contains("id")) {
      if (!n["id"].is_number_integer() || n["id"].get<int>() < 1)
        fail(src, where + ".id", "must be a positive integer");
      id = n["id"];
    }
    try {
      g.add_node(type, name, attrs, x, y, id);
    } catch (const GraphError& e) {
      fail(src, where, e.what());
    }
  }
  if (j.contains("edges")) {
    if (!j["edges"].is_array()) fail(src, "graph.edges", "must be a list");
    k = 0;
    for (const auto& e : j["edges"]) {
      std::string where = "graph.edges[" + std::to_string(k++) + "]";
      if (!e.is_object() || !e.contains("from") || !e.contains("to") || !e["from"].is_string() ||
          !e["to"].is_string())
        fail(src, where, "must be {\"from\": name, \"to\": name, \"port\": n}");
      const Node* a = g.find_by_name(e["from"]);
      const Node* b = g.find_by_name(e["to"]);
      if (!a) fail(src, where, "no node named '" + e["from"].get<std::string>() + "'");
      if (!b) fail(src, where, "no node named '" + e["to"].get<std::string>() + "'");
      int port = 0;
      if (e.contains("port")) {
        if (!e["port"].is_number_integer()) fail(src, where + ".port", "must be an integer");
        port = e["port"];
      }
      try {
        g.connect_without_cycle_check(a->id, b->id, port);
      } catch (const GraphError& ex) {
        fail(src, where, ex.what());
      }
    }
    // Once for all edges: per edge, the search is quadratic in a long chain.
    try {
      g.topo_order();
    } catch (const GraphError& ex) {
      fail(src, "graph.edges", std::string(ex.what()) + "; networks must flow one way");
    }
  }
  return g;
}

// Reads an optional typed field of a JSON object into `out`.
template <typename T>
void field(const json& o, const char* key, T& out, const std::string& src,
           const std::string& where) {
  if (!o.contains(key)) return;
  const json& v = o[key];
  bool ok;
  if constexpr (std::is_same_v<T, bool>)
    ok = v.is_boolean();
  else if constexpr (std::is_integral_v<T>)
    ok = v.is_number_integer() && v.get<int64_t>() >= 0;
  else if constexpr (std::is_floating_point_v<T>)
    ok = v.is_number();
  else
    ok = v.is_string();
  if (!ok) {
    const char* want = std::is_same_v<T, bool>       ? "true or false"
                       : std::is_integral_v<T>       ? "a non-negative integer"
                       : std::is_floating_point_v<T> ? "a number"
                                                     : "a string";
    fail(src, where + "." + key, std::string("must be ") + want + ", got " + v.dump());
  }
  out = v.get<T>();
}

void only_keys(const json& o, std::set<std::string> keys, const std::string& src,
               const std::string& where) {
  if (!o.is_object()) fail(src, where, "must be an object");
  for (auto it = o.begin(); it != o.end(); ++it)
    if (!keys.count(it.key())) {
      std::string valid;
      for (auto& k : keys) valid += (valid.empty() ? "" : ", ") + k;
      fail(src, where, "unknown field '" + it.key() + "' (valid: " + valid + ")");
    }
}

}  // namespace

std::string graph_to_json(const Graph& g) {
  return graph_json(g).dump(2);
}

Graph graph_from_json(const std::string& text, const std::string& source) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) fail(source, "", "is not valid JSON");
  return graph_from(j, source);
}

std::string project_to_json(const Project& p) {
  const TrainConfig& t = p.training;
  json training = {
      {"epochs", t.epochs},
      {"batch", t.batch},
      {"loss", t.loss},
      {"label_smoothing", t.label_smoothing},
      {"val_split", t.val_split},
      {"seed", t.seed},
      {"normalize", t.normalize},
      {"early_stopping_patience", t.early_stopping_patience},
      {"device", t.device},
      {"optimizer",
       {{"type", t.optimizer.type},
        {"lr", t.optimizer.lr},
        {"momentum", t.optimizer.momentum},
        {"nesterov", t.optimizer.nesterov},
        {"weight_decay", t.optimizer.weight_decay},
        {"beta1", t.optimizer.beta1},
        {"beta2", t.optimizer.beta2},
        {"eps", t.optimizer.eps}}},
      {"schedule",
       {{"type", t.schedule.type},
        {"warmup_steps", t.schedule.warmup_steps},
        {"step_epochs", t.schedule.step_epochs},
        {"gamma", t.schedule.gamma},
        {"min_lr", t.schedule.min_lr},
        {"pct_start", t.schedule.pct_start},
        {"div_factor", t.schedule.div_factor},
        {"final_div_factor", t.schedule.final_div_factor}}},
  };
  json j = {{"format", "deepcanvas-project"},
            {"version", kProjectVersion},
            {"name", p.name},
            {"graph", graph_json(p.graph)},
            {"dataset", {{"kind", p.dataset.kind}, {"path", p.dataset.path}}},
            {"training", training}};
  // Written only when set, so fp32 projects keep their earlier form.
  if (t.precision != "fp32") j["training"]["precision"] = t.precision;
  if (t.augment.enabled()) {
    json& au = j["training"]["augment"];
    au = {{"flip", t.augment.flip}, {"crop_padding", t.augment.crop_padding}};
    // The later settings only when used, so earlier files keep their form.
    if (t.augment.rotate > 0) au["rotate"] = t.augment.rotate;
    if (t.augment.translate > 0) au["translate"] = t.augment.translate;
    if (t.augment.brightness > 0) au["brightness"] = t.augment.brightness;
  }
  if (p.dataset.kind != "idx") {
    json& d = j["dataset"];
    d["window"] = p.dataset.window;
    d["test_fraction"] = p.dataset.test_fraction;
    if (p.dataset.kind == "text") d["stride"] = p.dataset.stride;
    if (p.dataset.kind == "csv_sequence") d["target"] = p.dataset.target;
  }
  return j.dump(2) + "\n";
}

Project parse_project(const std::string& text, const std::string& src) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) fail(src, "", "is not valid JSON (the file may be truncated or corrupt)");
  if (!j.is_object() || j.value("format", "") != "deepcanvas-project")
    fail(src, "", "is not a DeepCanvas project (no \"format\": \"deepcanvas-project\")");
  if (!j.contains("version") || !j["version"].is_number_integer())
    fail(src, "version", "missing or not an integer");
  int version = j["version"];
  if (version > kProjectVersion)
    fail(src, "",
         "was saved by a newer DeepCanvas (project format " + std::to_string(version) +
             "); this version reads format " + std::to_string(kProjectVersion) +
             " and older. Update DeepCanvas to open it");
  if (version < 1) fail(src, "version", "must be at least 1");
  only_keys(j, {"format", "version", "name", "graph", "dataset", "training"}, src, "project");
  Project p;
  field(j, "name", p.name, src, "project");
  if (!j.contains("graph")) fail(src, "", "has no 'graph'");
  p.graph = graph_from(j["graph"], src);
  if (j.contains("dataset")) {
    const json& d = j["dataset"];
    only_keys(d, {"kind", "path", "window", "stride", "target", "test_fraction"}, src, "dataset");
    field(d, "kind", p.dataset.kind, src, "dataset");
    field(d, "path", p.dataset.path, src, "dataset");
    field(d, "window", p.dataset.window, src, "dataset");
    field(d, "stride", p.dataset.stride, src, "dataset");
    field(d, "target", p.dataset.target, src, "dataset");
    field(d, "test_fraction", p.dataset.test_fraction, src, "dataset");
    if (p.dataset.kind != "idx" && p.dataset.kind != "text" && p.dataset.kind != "csv_sequence")
      fail(src, "dataset.kind",
           "'" + p.dataset.kind + "' is not supported (use \"idx\", \"text\" or \"csv_sequence\")");
    if (p.dataset.window < 1) fail(src, "dataset.window", "must be at least 1");
    if (p.dataset.stride < 1) fail(src, "dataset.stride", "must be at least 1");
    if (!(p.dataset.test_fraction >= 0 && p.dataset.test_fraction < 1))
      fail(src, "dataset.test_fraction", "must be in [0, 1)");
  }
  if (j.contains("training")) {
    const json& t = j["training"];
    TrainConfig& c = p.training;
    only_keys(t,
              {"epochs", "batch", "loss", "label_smoothing", "val_split", "seed", "normalize",
               "early_stopping_patience", "device", "optimizer", "schedule", "threads", "precision",
               "augment"},
              src, "training");
    field(t, "epochs", c.epochs, src, "training");
    field(t, "batch", c.batch, src, "training");
    field(t, "loss", c.loss, src, "training");
    field(t, "label_smoothing", c.label_smoothing, src, "training");
    field(t, "val_split", c.val_split, src, "training");
    field(t, "seed", c.seed, src, "training");
    field(t, "normalize", c.normalize, src, "training");
    field(t, "early_stopping_patience", c.early_stopping_patience, src, "training");
    field(t, "device", c.device, src, "training");
    field(t, "threads", c.threads, src, "training");
    field(t, "precision", c.precision, src, "training");
    if (t.contains("augment")) {
      const json& au = t["augment"];
      if (!au.is_object()) fail(src, "training.augment", "must be an object");
      only_keys(au, {"flip", "crop_padding", "rotate", "translate", "brightness"}, src,
                "training.augment");
      field(au, "flip", c.augment.flip, src, "training.augment");
      field(au, "crop_padding", c.augment.crop_padding, src, "training.augment");
      field(au, "rotate", c.augment.rotate, src, "training.augment");
      field(au, "translate", c.augment.translate, src, "training.augment");
      field(au, "brightness", c.augment.brightness, src, "training.augment");
      if (c.augment.crop_padding < 0 || c.augment.crop_padding > 64)
        fail(src, "training.augment.crop_padding", "must be in [0, 64]");
      if (!(c.augment.rotate >= 0 && c.augment.rotate <= 180))
        fail(src, "training.augment.rotate", "must be in [0, 180] (degrees)");
      if (!(c.augment.translate >= 0 && c.augment.translate <= 0.5))
        fail(src, "training.augment.translate", "must be in [0, 0.5] (a fraction of the size)");
      if (!(c.augment.brightness >= 0 && c.augment.brightness <= 1))
        fail(src, "training.augment.brightness", "must be in [0, 1]");
    }
    if (t.contains("optimizer")) {
      const json& o = t["optimizer"];
      only_keys(o, {"type", "lr", "momentum", "nesterov", "weight_decay", "beta1", "beta2", "eps"},
                src, "training.optimizer");
      field(o, "type", c.optimizer.type, src, "training.optimizer");
      field(o, "lr", c.optimizer.lr, src, "training.optimizer");
      field(o, "momentum", c.optimizer.momentum, src, "training.optimizer");
      field(o, "nesterov", c.optimizer.nesterov, src, "training.optimizer");
      field(o, "weight_decay", c.optimizer.weight_decay, src, "training.optimizer");
      field(o, "beta1", c.optimizer.beta1, src, "training.optimizer");
      field(o, "beta2", c.optimizer.beta2, src, "training.optimizer");
      field(o, "eps", c.optimizer.eps, src, "training.optimizer");
    }
    if (t.contains("schedule")) {
      const json& s = t["schedule"];
      only_keys(s,
                {"type", "warmup_steps", "step_epochs", "gamma", "min_lr", "pct_start",
                 "div_factor", "final_div_factor"},
                src, "training.schedule");
      field(s, "type", c.schedule.type, src, "training.schedule");
      field(s, "warmup_steps", c.schedule.warmup_steps, src, "training.schedule");
      field(s, "step_epochs", c.schedule.step_epochs, src, "training.schedule");
      field(s, "gamma", c.schedule.gamma, src, "training.schedule");
      field(s, "min_lr", c.schedule.min_lr, src, "training.schedule");
      field(s, "pct_start", c.schedule.pct_start, src, "training.schedule");
      field(s, "div_factor", c.schedule.div_factor, src, "training.schedule");
      field(s, "final_div_factor", c.schedule.final_div_factor, src, "training.schedule");
    }
    auto names = [](std::vector<std::string> v) {
      std::string s;
      for (auto& x : v) s += (s.empty() ? "" : ", ") + x;
      return s;
    };
    auto one_of = [&](const std::string& v, std::vector<std::string> valid, const char* where) {
      for (auto& x : valid)
        if (x == v) return;
      fail(src, where, "'" + v + "' is not one of: " + names(valid));
    };
    one_of(c.optimizer.type, optimizer_names(), "training.optimizer.type");
    one_of(c.schedule.type, schedule_names(), "training.schedule.type");
    one_of(c.loss, loss_names(), "training.loss");
    one_of(c.precision, {"fp32", "bf16", "fp16"}, "training.precision");
    if (c.epochs < 1) fail(src, "training.epochs", "must be at least 1");
    if (c.batch < 1) fail(src, "training.batch", "must be at least 1");
    if (!(c.optimizer.lr > 0)) fail(src, "training.optimizer.lr", "must be positive");
    if (c.val_split < 0 || c.val_split >= 1) fail(src, "training.val_split", "must be in [0, 1)");
    if (c.label_smoothing < 0 || c.label_smoothing >= 1)
      fail(src, "training.label_smoothing", "must be in [0, 1)");
  }
  return p;
}

Project load_project(const std::string& path) {
  Project p = parse_project(read_file(path, kMaxProjectBytes, "project file"), path);
  p.file = path;
  return p;
}

void save_project(Project& p, const std::string& path) {
  write_file_atomic(path, project_to_json(p));
  p.file = path;
}

std::string resource_dir() {
  // Installed layout: <prefix>/bin/deepcanvas-cli and <prefix>/share/deepcanvas
  // holding resources/templates and sample_data, as in the source tree.
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path share = exe.parent_path().parent_path() / "share" / "deepcanvas";
    if (fs::exists(share / "resources" / "templates", ec)) return share.string();
  }
  // A binary still in its build tree uses the source tree's resources; an
  // installed one never does, even when the source tree is still around.
  const std::string build = DC_BINARY_DIR;
  if (!ec && exe.string().rfind(build + "/", 0) == 0 &&
      fs::exists(fs::path(DC_SOURCE_DIR) / "resources", ec))
    return DC_SOURCE_DIR;
  return {};
}

std::string resolve_dataset_dir(const Project& p, const std::string& override_path) {
  std::string path = override_path.empty() ? p.dataset.path : override_path;
  if (path.empty())
    throw IoError((p.file.empty() ? std::string("project") : p.file) +
                  ": no dataset set (dataset.path); pass --data FOLDER");
  if (path == "fashion-mnist") {
    const char* debian = "/usr/share/datasets/fashion-mnist";
    if (fs::exists(debian)) return debian;
    throw IoError(
        "the full Fashion-MNIST is not installed: install Debian's "
        "dataset-fashion-mnist package, or use the bundled subset "
        "(sample_data/fashion-mnist-subset)");
  }
  if (path.rfind("sample:", 0) == 0) {
    // Bundled sample data, wherever the app is installed or built.
    fs::path d = fs::path(resource_dir()) / "sample_data" / path.substr(7);
    if (!fs::exists(d))
      throw IoError("bundled sample data '" + path + "' not found at " + d.string());
    return d.string();
  }
  fs::path d(path);
  if (d.is_relative() && override_path.empty() && !p.file.empty())
    d = fs::path(p.file).parent_path() / d;
  if (!fs::exists(d)) throw IoError("dataset folder '" + d.string() + "' does not exist");
  return d.lexically_normal().string();
}

}  // namespace dc
