#include <deepcanvas/blocks.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/escape.h>
#include <deepcanvas/io.h>
#include <deepcanvas/json_number.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/project.h>
#include <deepcanvas/settings.h>

#include <cfloat>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
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

// Node positions on the canvas: far beyond any drawing, and bounded so that
// the editor's scene (fitting the view, snapping to the grid) never meets
// a coordinate near the double's limit.
constexpr double kMaxCanvasCoordinate = 1e9;

// The field's name in messages: "FILE: graph.nodes[2].id".
std::string field_name(const std::string& src, const std::string& where) {
  return src + ": " + where;
}

AttrValue attr_from_json(const AttrSpec& s, const json& v, const std::string& src,
                         const std::string& where) {
  auto wrong = [&]() -> AttrValue {
    fail(src, where, "must be " + attr_type_with_article(s.type) + ", got " + v.dump());
  };
  switch (s.type) {
    case AttrType::Int:
      if (!v.is_number_integer()) return wrong();
      return json_int(v, field_name(src, where), INT64_MIN, INT64_MAX);
    case AttrType::Float:
      if (!v.is_number()) return wrong();
      return json_double(v, field_name(src, where), -DBL_MAX, DBL_MAX);
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
      if (s.type == AttrType::IntPair && v.is_number_integer()) {
        const int64_t both = json_int(v, field_name(src, where), INT64_MIN, INT64_MAX);
        return std::vector<int64_t>{both, both};
      }
      if (!v.is_array()) return wrong();
      std::vector<int64_t> out;
      for (auto& x : v) {
        if (!x.is_number_integer()) return wrong();
        out.push_back(json_int(x, field_name(src, where), INT64_MIN, INT64_MAX));
      }
      return out;
    }
  }
  return wrong();
}

json attr_to_json(const AttrValue& v) {
  return std::visit([](const auto& x) -> json { return json(x); }, v);
}

// `file_form`: a Block node names its definition, which the project file
// holds once ("blocks"), instead of carrying it.
json graph_json(const Graph& g, bool file_form = false) {
  json nodes = json::array(), edges = json::array();
  for (const auto& [id, n] : g.nodes()) {
    json a = json::object();
    for (const auto& [k, v] : n.attrs.values())
      if (!file_form || n.type != kBlockType || k != "definition") a[k] = attr_to_json(v);
    json node = {{"id", id}, {"type", n.type}, {"name", n.name}, {"attrs", a}, {"pos", {n.x, n.y}}};
    // Written only when frozen, so projects without frozen layers keep the
    // form older versions read and write.
    if (!n.trainable) node["trainable"] = false;
    nodes.push_back(std::move(node));
  }
  for (const auto& e : g.edges())
    edges.push_back(
        {{"from", g.node(e.src).name}, {"to", g.node(e.dst).name}, {"port", e.dst_port}});
  return {{"nodes", nodes}, {"edges", edges}};
}

Graph graph_from(const json& j, const std::string& src, const std::string& at = "graph") {
  register_builtin_layers();
  Graph g;
  if (!j.is_object()) fail(src, at, "must be an object with 'nodes' and 'edges'");
  if (!j.contains("nodes") || !j["nodes"].is_array())
    fail(src, at + ".nodes", "missing or not a list");
  int k = 0;
  for (const auto& n : j["nodes"]) {
    std::string where = at + ".nodes[" + std::to_string(k++) + "]";
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
    // Checked before it is read: json::value() throws its own type_error
    // for a name that is not a string (the project fuzzer found one).
    if (n.contains("name") && !n["name"].is_string()) fail(src, where, "'name' must be a string");
    std::string name = n.value("name", "");
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
      x = json_double(p[0], field_name(src, where + ".pos[0]"), -kMaxCanvasCoordinate,
                      kMaxCanvasCoordinate);
      y = json_double(p[1], field_name(src, where + ".pos[1]"), -kMaxCanvasCoordinate,
                      kMaxCanvasCoordinate);
    }
    bool trainable = true;
    if (n.contains("trainable")) {
      if (!n["trainable"].is_boolean()) fail(src, where + ".trainable", "must be true or false");
      trainable = n["trainable"];
    }
    int id = -1;
    // Well below INT_MAX, so that the ids of layers added later still fit.
    if (n.contains("id")) id = json_int32(n["id"], field_name(src, where + ".id"), 1, 1000000000);
    try {
      g.set_trainable(g.add_node(type, name, attrs, x, y, id), trainable);
    } catch (const GraphError& e) {
      fail(src, where, e.what());
    }
  }
  if (j.contains("edges")) {
    if (!j["edges"].is_array()) fail(src, at + ".edges", "must be a list");
    k = 0;
    for (const auto& e : j["edges"]) {
      std::string where = at + ".edges[" + std::to_string(k++) + "]";
      if (!e.is_object() || !e.contains("from") || !e.contains("to") || !e["from"].is_string() ||
          !e["to"].is_string())
        fail(src, where, "must be {\"from\": name, \"to\": name, \"port\": n}");
      const Node* a = g.find_by_name(e["from"]);
      const Node* b = g.find_by_name(e["to"]);
      if (!a) fail(src, where, "no node named '" + e["from"].get<std::string>() + "'");
      if (!b) fail(src, where, "no node named '" + e["to"].get<std::string>() + "'");
      int port = 0;
      if (e.contains("port"))
        port = json_int32(e["port"], field_name(src, where + ".port"), 0, 1 << 20);
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
      fail(src, at + ".edges", std::string(ex.what()) + "; networks must flow one way");
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
  const std::string name = field_name(src, where + "." + key);
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) fail(src, where + "." + key, "must be true or false, got " + v.dump());
    out = v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    out = T(json_int(v, name, 0, int64_t(std::numeric_limits<T>::max())));
  } else if constexpr (std::is_floating_point_v<T>) {
    out = T(json_double(v, name, -double(std::numeric_limits<T>::max()),
                        double(std::numeric_limits<T>::max())));
  } else {
    if (!v.is_string()) fail(src, where + "." + key, "must be a string, got " + v.dump());
    out = v.get<T>();
  }
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

// The object at `path` below o, or null when some part is missing.
const json* find_path(const json& o, const std::vector<std::string>& path, size_t n) {
  const json* at = &o;
  for (size_t i = 0; i < n && at; ++i)
    at = at->is_object() && at->contains(path[i]) ? &(*at)[path[i]] : nullptr;
  return at;
}

// The training settings, generated from the settings table.
json training_json(const TrainConfig& c) {
  return settings_json(c, [&](const SettingSpec& s) { return !s.written || s.written(c); });
}

void read_training(const json& t, TrainConfig& c, const std::string& src) {
  // Which keys each object may hold: "training" the first parts ("epochs",
  // "optimizer"), "training.optimizer" the keys below it, and so on.
  std::map<std::vector<std::string>, std::set<std::string>> allowed;
  for (const SettingSpec& s : training_settings()) {
    std::vector<std::string> path = setting_key_path(s.attr.name);
    for (size_t n = 0; n < path.size(); ++n)
      allowed[std::vector<std::string>(path.begin(), path.begin() + long(n))].insert(path[n]);
  }
  for (const auto& [object, keys] : allowed) {
    std::string where = "training";
    for (const auto& part : object) where += "." + part;
    if (const json* o = find_path(t, object, object.size())) only_keys(*o, keys, src, where);
  }
  for (const SettingSpec& s : training_settings()) {
    const std::vector<std::string> path = setting_key_path(s.attr.name);
    const json* v = find_path(t, path, path.size());
    if (!v) continue;
    const std::string where = "training." + s.attr.name;
    AttrValue value = attr_from_json(s.attr, *v, src, where);
    if (std::string why = setting_problem(s, value); !why.empty()) fail(src, where, why);
    s.set(c, value);
  }
}

json preprocess_json(const ImagePreprocess& p) {
  json j = json::object();
  if (p.size > 0) j["size"] = p.size;
  if (p.channels > 0) j["channels"] = p.channels;
  if (!p.mean.empty()) j["mean"] = p.mean;
  if (!p.std.empty()) j["std"] = p.std;
  return j;
}

ImagePreprocess read_preprocess(const json& j, const std::string& src) {
  const std::string where = "dataset.preprocess";
  if (!j.is_object()) fail(src, where, "must be an object");
  only_keys(j, {"size", "channels", "mean", "std"}, src, where);
  ImagePreprocess p;
  field(j, "size", p.size, src, where);
  field(j, "channels", p.channels, src, where);
  for (const char* key : {"mean", "std"}) {
    if (!j.contains(key)) continue;
    const json& a = j[key];
    std::vector<float>& out = std::string(key) == "mean" ? p.mean : p.std;
    if (!a.is_array()) fail(src, where + "." + key, "must be an array of numbers, one per channel");
    for (const json& v : a) {
      if (!v.is_number()) fail(src, where + "." + key, "must hold numbers only");
      out.push_back(float(json_double(v, field_name(src, where + "." + key), -FLT_MAX, FLT_MAX)));
    }
  }
  if (std::string why = preprocess_problem(p); !why.empty()) fail(src, where, why);
  return p;
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
  json j = {{"format", "deepcanvas-project"},
            {"version", kProjectVersion},
            {"name", p.name},
            {"graph", graph_json(p.graph, true)},
            {"dataset", {{"kind", p.dataset.kind}, {"path", p.dataset.path}}},
            {"training", training_json(p.training)}};
  if (p.dataset.kind != "idx") {
    json& d = j["dataset"];
    d["window"] = p.dataset.window;
    d["test_fraction"] = p.dataset.test_fraction;
    if (p.dataset.kind == "text") d["stride"] = p.dataset.stride;
    if (p.dataset.kind == "csv_sequence") d["target"] = p.dataset.target;
    if (p.dataset.is_images()) {
      d.erase("window");
      d["split_seed"] = p.dataset.split_seed;
      d["crop_fraction"] = p.dataset.crop_fraction;
      d["loading"] = p.dataset.loading;
      d["memory_budget_mb"] = p.dataset.memory_budget_mb;
      d["cache"] = p.dataset.cache;
      d["bad_images"] = p.dataset.bad_images_are_errors ? "error" : "skip";
    }
  }
  if (p.dataset.preprocess.active())
    j["dataset"]["preprocess"] = preprocess_json(p.dataset.preprocess);
  // Written only when there are any, so projects without blocks keep the
  // form older versions read and write. By name: the file is the same for
  // the same definitions.
  std::map<std::string, BlockDef> defs = block_definitions(p.graph);
  for (const BlockDef& d : p.unused_blocks) {
    defs.emplace(d.name, d);
    for (auto& [name, nested] : block_definitions(d.graph)) defs.emplace(name, nested);
  }
  if (!defs.empty()) {
    json blocks = json::array();
    for (const auto& [name, d] : defs)
      blocks.push_back(json::parse(block_definition_json(d, false)));
    j["blocks"] = std::move(blocks);
  }
  return j.dump(2) + "\n";
}

namespace {

// The project's block definitions ("blocks"), each checked, and every Block
// node (in the graph and inside definitions) given its definition's text.
void read_blocks(const json& j, Project& p, const std::string& src) {
  std::map<std::string, std::pair<BlockDef, std::string>> raw;  // name -> definition, where
  if (j.contains("blocks")) {
    if (!j["blocks"].is_array()) fail(src, "blocks", "must be a list");
    int k = 0;
    for (const json& b : j["blocks"]) {
      std::string where = "blocks[" + std::to_string(k++) + "]";
      only_keys(b, {"name", "graph", "inputs", "output"}, src, where);
      BlockDef d;
      field(b, "name", d.name, src, where);
      if (d.name.empty()) fail(src, where, "has no name");
      where += " ('" + d.name + "')";
      if (raw.count(d.name)) fail(src, where, "a second block named '" + d.name + "'");
      if (!b.contains("graph")) fail(src, where, "has no 'graph'");
      d.graph = graph_from(b["graph"], src, where + ".graph");
      field(b, "output", d.output, src, where);
      if (!b.contains("inputs") || !b["inputs"].is_array())
        fail(src, where + ".inputs", "missing or not a list");
      for (const json& ports : b["inputs"]) {
        if (!ports.is_array())
          fail(src, where + ".inputs", "must be lists of {\"node\", \"port\"}");
        std::vector<BlockPort> in;
        for (const json& t : ports) {
          if (!t.is_object() || !t.contains("node") || !t["node"].is_string())
            fail(src, where + ".inputs", "must be lists of {\"node\", \"port\"}");
          BlockPort bp;
          bp.node = t["node"];
          if (t.contains("port"))
            bp.port = json_int32(t["port"], field_name(src, where + ".inputs"), 0, 1 << 20);
          in.push_back(bp);
        }
        d.inputs.push_back(std::move(in));
      }
      const std::string name = d.name;  // before d is moved from
      raw.emplace(name, std::make_pair(std::move(d), where));
    }
  }
  std::map<std::string, std::string> text;  // resolved definitions
  std::vector<std::string> stack;
  // Gives g's Block nodes their definitions; `where` names g in messages.
  std::function<void(Graph&, const std::string&)> resolve_graph;
  auto resolve = [&](const std::string& name) {
    auto& [d, where] = raw.at(name);
    if (text.count(name)) return;
    if (std::find(stack.begin(), stack.end(), name) != stack.end()) {
      std::string path;
      for (auto it = std::find(stack.begin(), stack.end(), name); it != stack.end(); ++it)
        path += *it + " > ";
      fail(src, where, "block '" + name + "' contains itself (" + path + name + ")");
    }
    stack.push_back(name);
    resolve_graph(d.graph, where);
    stack.pop_back();
    try {
      check_block_definition(d);
    } catch (const GraphError& e) {
      fail(src, where, e.what());
    }
    text[name] = block_definition_json(d);
  };
  std::set<std::string> used;
  resolve_graph = [&](Graph& g, const std::string& where) {
    for (const auto& [id, n] : g.nodes()) {
      if (n.type != kBlockType) continue;
      const std::string name = n.attrs.has("block") ? n.attrs.s("block") : "";
      const std::string who = where + ": " + node_label(n);
      if (!raw.count(name)) fail(src, who, "uses an unknown block definition '" + name + "'");
      used.insert(name);
      const BlockDef& d = raw.at(name).first;
      if (g.num_inputs(id) != int(d.inputs.size()))
        fail(src, who,
             "has " + std::to_string(g.num_inputs(id)) + " input port(s) but block '" + name +
                 "' has " + std::to_string(d.inputs.size()));
      resolve(name);
      g.node(id).attrs.set("definition", text.at(name));
    }
  };
  resolve_graph(p.graph, "graph");
  for (auto& [name, d] : raw) {
    if (used.count(name)) continue;
    resolve(name);
    BlockDef kept = d.first;
    for (const auto& [id, n] : kept.graph.nodes())
      if (n.type == kBlockType)
        kept.graph.node(id).attrs.set("definition", text.at(n.attrs.s("block")));
    p.unused_blocks.push_back(std::move(kept));
  }
}

Project parse_project_json(const std::string& text, const std::string& src) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) fail(src, "", "is not valid JSON (the file may be truncated or corrupt)");
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string() ||
      j["format"].get<std::string>() != "deepcanvas-project")
    fail(src, "", "is not a DeepCanvas project (no \"format\": \"deepcanvas-project\")");
  if (!j.contains("version") || !j["version"].is_number_integer())
    fail(src, "version", "missing or not an integer");
  // An integer beyond int64 is a version from the far future, not a bad field.
  const int64_t version = json_int_problem(j["version"], INT64_MIN, INT64_MAX).empty()
                              ? j["version"].get<int64_t>()
                              : INT64_MAX;
  if (version > kProjectVersion)
    fail(src, "",
         "was saved by a newer DeepCanvas (project format " + std::to_string(version) +
             "); this version reads format " + std::to_string(kProjectVersion) +
             " and older. Update DeepCanvas to open it");
  if (version < 1) fail(src, "version", "must be at least 1");
  only_keys(j, {"format", "version", "name", "graph", "dataset", "training", "blocks"}, src,
            "project");
  Project p;
  field(j, "name", p.name, src, "project");
  if (!j.contains("graph")) fail(src, "", "has no 'graph'");
  p.graph = graph_from(j["graph"], src);
  read_blocks(j, p, src);
  if (j.contains("dataset")) {
    const json& d = j["dataset"];
    only_keys(d,
              {"kind", "path", "window", "stride", "target", "test_fraction", "preprocess",
               "split_seed", "crop_fraction", "loading", "memory_budget_mb", "cache", "bad_images"},
              src, "dataset");
    if (d.contains("preprocess")) p.dataset.preprocess = read_preprocess(d["preprocess"], src);
    field(d, "kind", p.dataset.kind, src, "dataset");
    field(d, "path", p.dataset.path, src, "dataset");
    field(d, "window", p.dataset.window, src, "dataset");
    field(d, "stride", p.dataset.stride, src, "dataset");
    field(d, "target", p.dataset.target, src, "dataset");
    field(d, "test_fraction", p.dataset.test_fraction, src, "dataset");
    field(d, "split_seed", p.dataset.split_seed, src, "dataset");
    field(d, "crop_fraction", p.dataset.crop_fraction, src, "dataset");
    field(d, "loading", p.dataset.loading, src, "dataset");
    field(d, "memory_budget_mb", p.dataset.memory_budget_mb, src, "dataset");
    field(d, "cache", p.dataset.cache, src, "dataset");
    std::string bad = "skip";
    field(d, "bad_images", bad, src, "dataset");
    if (bad != "skip" && bad != "error")
      fail(src, "dataset.bad_images", "'" + bad + "' is neither \"skip\" nor \"error\"");
    p.dataset.bad_images_are_errors = bad == "error";
    if (p.dataset.kind != "idx" && p.dataset.kind != "text" && p.dataset.kind != "csv_sequence" &&
        !p.dataset.is_images())
      fail(src, "dataset.kind",
           "'" + p.dataset.kind +
               "' is not supported (use \"idx\", \"text\", \"csv_sequence\", \"image_folder\" "
               "or \"image_csv\")");
    if (!(p.dataset.crop_fraction > 0 && p.dataset.crop_fraction <= 1))
      fail(src, "dataset.crop_fraction", "must be in (0, 1]");
    if (p.dataset.loading != "auto" && p.dataset.loading != "memory" &&
        p.dataset.loading != "stream")
      fail(src, "dataset.loading", "must be \"auto\", \"memory\" or \"stream\"");
    if (p.dataset.memory_budget_mb < 0) fail(src, "dataset.memory_budget_mb", "must be at least 0");
    if (p.dataset.window < 1) fail(src, "dataset.window", "must be at least 1");
    if (p.dataset.stride < 1) fail(src, "dataset.stride", "must be at least 1");
    if (!(p.dataset.test_fraction >= 0 && p.dataset.test_fraction < 1))
      fail(src, "dataset.test_fraction", "must be in [0, 1)");
  }
  if (j.contains("training")) read_training(j["training"], p.training, src);
  return p;
}

}  // namespace

Project parse_project(const std::string& text, const std::string& src) {
  // Every field is type-checked before it is read; this is the net for one
  // that is not, so that a malformed file is still one clear error and
  // never an exception from the JSON library (the project fuzzer found a
  // non-string node name read that way).
  try {
    return parse_project_json(text, src);
  } catch (const json::exception& e) {
    fail(src, "", std::string("has a value of the wrong type (") + e.what() + ")");
  }
}

Project load_project(const std::string& path) {
  Project p = parse_project(read_file(path, kMaxProjectBytes, "project file"), path);
  p.file = path;
  return p;
}

void rebase_project_paths(Project& p, const std::string& new_file) {
  if (p.file.empty() || new_file.empty()) return;
  std::error_code ec;
  const fs::path from = fs::absolute(fs::path(p.file), ec).parent_path().lexically_normal();
  const fs::path to = fs::absolute(fs::path(new_file), ec).parent_path().lexically_normal();
  if (ec || from == to) return;
  auto rebase = [&](std::string& s) {
    // Names that are not paths (Debian's package, bundled samples) and
    // absolute paths mean the same from anywhere.
    if (s.empty() || s == "fashion-mnist" || s.rfind("sample:", 0) == 0) return;
    const fs::path f(s);
    if (f.is_absolute()) return;
    const fs::path target = (from / f).lexically_normal();
    const fs::path rel = target.lexically_relative(to);
    // Still beside or below the project: relative, so the pair can move
    // together; elsewhere an absolute path, which survives the next move.
    s = !rel.empty() && *rel.begin() != ".." ? rel.generic_string() : target.generic_string();
  };
  rebase(p.dataset.path);
  rebase(p.training.init_weights);
}

void save_project(Project& p, const std::string& path) {
  // Paths relative to the old folder must still lead to the same files
  // from the new one (Save As of the read-only installed sample); the
  // project is changed only once the file is written.
  Project saved = p;
  rebase_project_paths(saved, path);
  write_file_atomic(path, project_to_json(saved));
  p.dataset.path = saved.dataset.path;
  p.training.init_weights = saved.training.init_weights;
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

std::string resolve_project_file(const Project& p, const std::string& path) {
  if (path.empty()) return path;
  fs::path f(path);
  if (f.is_relative() && !p.file.empty()) f = fs::path(p.file).parent_path() / f;
  return f.lexically_normal().string();
}

std::string resolve_dataset_dir(const Project& p, const std::string& override_path) {
  std::string path = override_path.empty() ? p.dataset.path : override_path;
  if (path.empty())
    throw IoError((p.file.empty() ? std::string("project") : p.file) +
                  ": no dataset set (dataset.path); choose a dataset folder");
  if (path == "fashion-mnist") {
    const char* debian = "/usr/share/datasets/fashion-mnist";
    if (fs::exists(debian)) return debian;
    throw IoError(
        "the full Fashion-MNIST is not installed: install Debian's "
        "dataset-fashion-mnist package, or use the bundled subset "
        "(sample_data/fashion-mnist-subset)");
  }
  if (path.rfind("sample:", 0) == 0) {
    // Bundled sample data, wherever the app is installed or built: a name
    // or a path of plain names inside the sample folder
    // (sample:text/corpus.txt), never one that could lead out of it.
    const fs::path name(path.substr(7));
    bool plain = !name.empty() && !name.is_absolute();
    for (const fs::path& part : name) plain = plain && part != ".." && part != "." && !part.empty();
    if (!plain)
      throw IoError("bundled sample data '" + escape::line_text(path) +
                    "' is not a sample's name (sample:NAME, e.g. sample:fashion-mnist-subset)");
    fs::path d = fs::path(resource_dir()) / "sample_data" / name;
    if (!fs::exists(d))
      throw IoError("bundled sample data '" + escape::line_text(path) + "' not found at " +
                    escape::line_text(d.string()));
    return d.string();
  }
  fs::path d(path);
  if (d.is_relative() && override_path.empty() && !p.file.empty())
    d = fs::path(p.file).parent_path() / d;
  if (!fs::exists(d))
    throw IoError("dataset folder '" + escape::line_text(d.string()) + "' does not exist");
  return d.lexically_normal().string();
}

std::string dataset_location_note(const Project& p) {
  const std::string& path = p.dataset.path;
  if (path.empty() || path == "fashion-mnist" || path.rfind("sample:", 0) == 0 || p.file.empty())
    return "";
  const fs::path home = fs::path(p.file).parent_path().lexically_normal();
  const fs::path d = (home / path).lexically_normal();  // an absolute path replaces home
  const fs::path rel = d.lexically_relative(home);
  if (!rel.empty() && *rel.begin() != "..") return "";
  return "the project reads its dataset from '" + escape::line_text(d.string()) +
         "', outside the project's folder (dataset.path); check that this is the data you mean";
}

}  // namespace dc
