#include <deepcanvas/blocks.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>
#include <tuple>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace dc {

using json = nlohmann::json;

namespace {

json attr_json(const AttrValue& v) {
  return std::visit([](const auto& x) -> json { return json(x); }, v);
}

AttrValue attr_value(const AttrSpec& s, const json& v) {
  switch (s.type) {
    case AttrType::Int:
      return v.get<int64_t>();
    case AttrType::Float:
      return v.get<double>();
    case AttrType::Bool:
      return v.get<bool>();
    case AttrType::String:
    case AttrType::Enum:
      return v.get<std::string>();
    case AttrType::IntPair:
    case AttrType::IntList:
      return v.get<std::vector<int64_t>>();
  }
  return v.get<int64_t>();
}

json def_json(const BlockDef& d, bool with_nested) {
  json nodes = json::array(), edges = json::array(), inputs = json::array();
  for (const auto& [id, n] : d.graph.nodes()) {
    json a = json::object();
    for (const auto& [k, v] : n.attrs.values())
      if (with_nested || n.type != kBlockType || k != "definition") a[k] = attr_json(v);
    json node = {{"id", id}, {"type", n.type}, {"name", n.name}, {"attrs", a}, {"pos", {n.x, n.y}}};
    if (!n.trainable) node["trainable"] = false;
    nodes.push_back(std::move(node));
  }
  for (const Edge& e : d.graph.edges())
    edges.push_back({{"from", d.graph.node(e.src).name},
                     {"to", d.graph.node(e.dst).name},
                     {"port", e.dst_port}});
  for (const auto& ports : d.inputs) {
    json p = json::array();
    for (const BlockPort& t : ports) p.push_back({{"node", t.node}, {"port", t.port}});
    inputs.push_back(std::move(p));
  }
  return {{"name", d.name},
          {"graph", {{"nodes", nodes}, {"edges", edges}}},
          {"inputs", inputs},
          {"output", d.output}};
}

// Inner shapes of a definition from the block's input shapes; throws
// ShapeError naming the layer inside that fails.
std::map<NodeId, Shape> inner_shapes(const BlockDef& d, const std::vector<Shape>& in) {
  if (in.size() != d.inputs.size())
    throw ShapeError("block '" + d.name + "' has " + std::to_string(d.inputs.size()) +
                     " input(s) but the node has " + std::to_string(in.size()));
  std::map<std::string, std::vector<std::pair<int, int>>> fed;  // node -> (port, block input)
  for (size_t i = 0; i < d.inputs.size(); ++i)
    for (const BlockPort& t : d.inputs[i]) fed[t.node].push_back({t.port, int(i)});
  const auto& reg = LayerRegistry::instance();
  std::map<NodeId, Shape> shapes;
  for (NodeId id : d.graph.topo_order()) {
    const Node& n = d.graph.node(id);
    const LayerDescriptor& desc = reg.get(n.type);
    const int ports = desc.num_inputs(n.attrs);
    std::vector<Shape> s(size_t(std::max(ports, 0)));
    std::vector<bool> have(s.size(), false);
    for (const Edge& e : d.graph.in_edges(id))
      if (e.dst_port < ports) {
        s[size_t(e.dst_port)] = shapes.at(e.src);
        have[size_t(e.dst_port)] = true;
      }
    if (auto it = fed.find(n.name); it != fed.end())
      for (auto [port, i] : it->second)
        if (port < ports) {
          s[size_t(port)] = in[size_t(i)];
          have[size_t(port)] = true;
        }
    for (size_t p = 0; p < have.size(); ++p)
      if (!have[p])
        throw ShapeError("in block '" + d.name + "': " + node_label(n) + ": input " +
                         std::to_string(p) + " is not connected");
    try {
      shapes[id] = desc.infer(s, n.attrs);
    } catch (const Error& e) {
      throw ShapeError("in block '" + d.name + "': " + node_label(n) + ": " + e.what());
    }
  }
  return shapes;
}

class BlockLayer : public Layer {
 public:
  void forward(const std::vector<const Tensor*>&, Tensor&, RunContext&) override { fail(); }
  void backward(const std::vector<const Tensor*>&, const Tensor&, const Tensor&,
                const std::vector<Tensor*>&, RunContext&) override {
    fail();
  }

 private:
  [[noreturn]] static void fail() {
    throw GraphError("a Block runs as its layers: the graph must be flattened first");
  }
};

}  // namespace

void register_block_layer() {
  static std::once_flag once;
  std::call_once(once, [] {
    LayerDescriptor d;
    d.type = kBlockType;
    d.category = "Blocks";
    d.help = "A reusable group of layers (Edit > Group as Block); every instance shares it";
    d.attrs = {
        {"block", AttrType::String, std::string(), -1e18, 1e18, {}, "The block definition's name"},
        {"inputs", AttrType::Int, int64_t{1}, 1, 64, {}, "Number of input ports"},
        {"definition",
         AttrType::String,
         std::string(),
         -1e18,
         1e18,
         {},
         "The definition's layers (shared by every instance)"},
    };
    d.num_inputs = [](const Attrs& a) {
      return a.has("inputs") ? int(std::clamp<int64_t>(a.i("inputs"), 1, 64)) : 1;
    };
    d.infer = [](const std::vector<Shape>& in, const Attrs& a) {
      if (!a.has("definition") || a.s("definition").empty())
        throw ShapeError("has no definition for block '" + (a.has("block") ? a.s("block") : "") +
                         "'");
      std::shared_ptr<const BlockDef> def;
      try {
        def = block_definition(a.s("definition"));
      } catch (const GraphError& e) {
        throw ShapeError(e.what());
      }
      const auto shapes = inner_shapes(*def, in);
      const Node* out = def->graph.find_by_name(def->output);
      if (!out) throw ShapeError("block '" + def->name + "' has no output layer");
      return shapes.at(out->id);
    };
    d.cost = [](const std::vector<Shape>& in, const Shape&, const Attrs& a) {
      Cost c;
      if (!a.has("definition") || a.s("definition").empty()) return c;
      const auto def = block_definition(a.s("definition"));
      const auto shapes = inner_shapes(*def, in);
      const auto& reg = LayerRegistry::instance();
      for (const auto& [id, n] : def->graph.nodes()) {
        const LayerDescriptor& desc = reg.get(n.type);
        if (!desc.cost) continue;
        std::vector<Shape> s(size_t(std::max(desc.num_inputs(n.attrs), 0)));
        for (const Edge& e : def->graph.in_edges(id))
          if (size_t(e.dst_port) < s.size()) s[size_t(e.dst_port)] = shapes.at(e.src);
        for (size_t i = 0; i < def->inputs.size(); ++i)
          for (const BlockPort& t : def->inputs[i])
            if (t.node == n.name && size_t(t.port) < s.size()) s[size_t(t.port)] = in[i];
        const Cost k = desc.cost(s, shapes.at(id), desc.with_defaults(n.attrs));
        c.params += k.params;
        c.macs += k.macs;
      }
      return c;
    };
    d.create = [](const Attrs&, const std::vector<Shape>&, const Shape&) {
      return std::make_unique<BlockLayer>();
    };
    LayerRegistry::instance().add(std::move(d));
  });
}

std::string block_definition_json(const BlockDef& d, bool with_nested) {
  return def_json(d, with_nested).dump();
}

BlockDef parse_block_definition(const std::string& text) {
  register_builtin_layers();
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw GraphError("a block definition is not valid JSON");
  BlockDef d;
  try {
    d.name = j.at("name").get<std::string>();
    const auto& reg = LayerRegistry::instance();
    for (const json& n : j.at("graph").at("nodes")) {
      const std::string type = n.at("type").get<std::string>();
      const LayerDescriptor& desc = reg.get(type);
      Attrs a;
      for (auto it = n.at("attrs").begin(); it != n.at("attrs").end(); ++it) {
        const AttrSpec* s = desc.find_attr(it.key());
        if (!s) throw GraphError("unknown attribute '" + it.key() + "' for " + type);
        a.set(it.key(), attr_value(*s, it.value()));
      }
      const json& pos = n.at("pos");
      const NodeId id =
          d.graph.add_node(type, n.at("name").get<std::string>(), a, pos.at(0).get<double>(),
                           pos.at(1).get<double>(), n.at("id").get<int>());
      if (n.contains("trainable")) d.graph.set_trainable(id, n["trainable"].get<bool>());
    }
    for (const json& e : j.at("graph").at("edges")) {
      const Node* a = d.graph.find_by_name(e.at("from").get<std::string>());
      const Node* b = d.graph.find_by_name(e.at("to").get<std::string>());
      if (!a || !b) throw GraphError("an edge names a missing layer");
      d.graph.connect(a->id, b->id, e.at("port").get<int>());
    }
    for (const json& p : j.at("inputs")) {
      std::vector<BlockPort> ports;
      for (const json& t : p)
        ports.push_back({t.at("node").get<std::string>(), t.at("port").get<int>()});
      d.inputs.push_back(std::move(ports));
    }
    d.output = j.at("output").get<std::string>();
  } catch (const json::exception& e) {
    throw GraphError("block '" + d.name + "': malformed definition (" + e.what() + ")");
  } catch (const Error& e) {
    throw GraphError("block '" + d.name + "': " + e.what());
  }
  return d;
}

std::shared_ptr<const BlockDef> block_definition(const std::string& text) {
  // Shape and cost rules run per node on every edit; parsing a definition
  // each time would dominate them.
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<const BlockDef>> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache.find(text); it != cache.end()) return it->second;
  }
  auto def = std::make_shared<const BlockDef>(parse_block_definition(text));
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() >= 256) cache.clear();  // edits leave old versions behind
  cache[text] = def;
  return def;
}

std::shared_ptr<const BlockDef> block_definition_of(const Node& n) {
  if (n.type != kBlockType) throw GraphError(node_label(n) + " is not a block");
  const std::string name = n.attrs.has("block") ? n.attrs.s("block") : "";
  if (!n.attrs.has("definition") || n.attrs.s("definition").empty())
    throw GraphError(node_label(n) + ": unknown block definition '" + name + "'");
  return block_definition(n.attrs.s("definition"));
}

void check_block_definition(const BlockDef& d) {
  const std::string who = "block '" + d.name + "'";
  if (d.name.empty()) throw GraphError("a block definition has no name");
  if (d.graph.empty()) throw GraphError(who + " has no layers");
  const Node* out = d.graph.find_by_name(d.output);
  if (!out) throw GraphError(who + ": its output '" + d.output + "' is not a layer of it");
  if (d.inputs.empty()) throw GraphError(who + " has no inputs");
  for (const auto& [id, n] : d.graph.nodes()) {
    if (is_input_type(n.type))
      throw GraphError(who + " holds an input layer (" + node_label(n) + ")");
    if (id != out->id && d.graph.out_edges(id).empty())
      throw GraphError(who + ": " + node_label(n) +
                       "'s output is unused (a block has one output, '" + d.output + "')");
  }
  for (size_t i = 0; i < d.inputs.size(); ++i) {
    if (d.inputs[i].empty())
      throw GraphError(who + ": input " + std::to_string(i) + " feeds no layer");
    for (const BlockPort& t : d.inputs[i]) {
      const Node* n = d.graph.find_by_name(t.node);
      if (!n)
        throw GraphError(who + ": input " + std::to_string(i) + " feeds '" + t.node +
                         "', which is not a layer of it");
      if (t.port < 0 || t.port >= d.graph.num_inputs(n->id))
        throw GraphError(who + ": input " + std::to_string(i) + " feeds port " +
                         std::to_string(t.port) + " of " + node_label(*n) + ", which it lacks");
      for (const Edge& e : d.graph.in_edges(n->id))
        if (e.dst_port == t.port)
          throw GraphError(who + ": input " + std::to_string(i) + " feeds port " +
                           std::to_string(t.port) + " of " + node_label(*n) +
                           ", which a layer inside already feeds");
    }
  }
}

Attrs block_node_attrs(const BlockDef& d) {
  Attrs a;
  a.set("block", d.name);
  a.set("inputs", int64_t(d.inputs.size()));
  a.set("definition", block_definition_json(d));
  return a;
}

bool has_block_nodes(const Graph& g) {
  for (const auto& [id, n] : g.nodes())
    if (n.type == kBlockType) return true;
  return false;
}

namespace {

// A definition with its nested blocks flattened: inputs and output name
// the flat graph's layers.
struct FlatDef {
  Graph graph;
  std::vector<std::vector<BlockPort>> inputs;
  std::string output;
};

FlatDef flatten_def(const BlockDef& d, int depth);

// g flattened; `ports`, when given, gets each Block node's flat inputs and
// output by the node's name (what a definition's ports that name a nested
// block become).
Graph flatten_graph(const Graph& g, int depth, std::map<std::string, FlatDef>* ports) {
  // Definitions are self-contained texts, so a cycle cannot reach here from
  // a checked project; the depth keeps a crafted one from exhausting the stack.
  if (depth > 64) throw GraphError("blocks nest more than 64 deep (a block contains itself?)");
  Graph out;
  NodeId next = 1;
  for (const auto& [id, n] : g.nodes()) next = std::max(next, id + 1);
  struct Instance {
    FlatDef flat;  // names prefixed with the instance's
    std::map<std::string, NodeId> ids;
  };
  std::map<NodeId, Instance> inst;
  for (const auto& [id, n] : g.nodes())
    if (n.type != kBlockType)
      out.set_trainable(out.add_node(n.type, n.name, n.attrs, n.x, n.y, id), n.trainable);
  for (const auto& [id, b] : g.nodes()) {
    if (b.type != kBlockType) continue;
    const auto def = block_definition_of(b);
    if (int(def->inputs.size()) != g.num_inputs(id))
      throw GraphError(node_label(b) + " has " + std::to_string(g.num_inputs(id)) +
                       " input port(s) but block '" + def->name + "' has " +
                       std::to_string(def->inputs.size()));
    Instance& in = inst[id];
    FlatDef f = flatten_def(*def, depth + 1);
    const std::string prefix = b.name + "_";
    std::map<NodeId, NodeId> map;
    for (const auto& [iid, n] : f.graph.nodes()) {
      NodeId nid;
      try {
        nid = out.add_node(n.type, prefix + n.name, n.attrs, b.x + n.x, b.y + n.y, next++);
      } catch (const GraphError& e) {
        throw GraphError(node_label(b) + ": flattening block '" + def->name + "': " + e.what());
      }
      out.set_trainable(nid, n.trainable && b.trainable);
      map[iid] = nid;
      in.ids[prefix + n.name] = nid;
    }
    for (const Edge& e : f.graph.edges())
      out.connect_without_cycle_check(map.at(e.src), map.at(e.dst), e.dst_port);
    for (auto& ports_i : f.inputs)
      for (BlockPort& t : ports_i) t.node = prefix + t.node;
    f.output = prefix + f.output;
    in.flat = std::move(f);
  }
  auto id_of = [&](const Instance& in, const std::string& name) {
    auto it = in.ids.find(name);
    if (it == in.ids.end()) throw GraphError("a block's port names a missing layer '" + name + "'");
    return it->second;
  };
  for (const Edge& e : g.edges()) {
    NodeId src = e.src;
    if (auto it = inst.find(e.src); it != inst.end())
      src = id_of(it->second, it->second.flat.output);
    if (auto it = inst.find(e.dst); it != inst.end()) {
      const auto& inputs = it->second.flat.inputs;
      if (size_t(e.dst_port) >= inputs.size()) continue;
      for (const BlockPort& t : inputs[size_t(e.dst_port)])
        out.connect_without_cycle_check(src, id_of(it->second, t.node), t.port);
    } else {
      out.connect_without_cycle_check(src, e.dst, e.dst_port);
    }
  }
  if (ports)
    for (auto& [id, in] : inst) (*ports)[g.node(id).name] = std::move(in.flat);
  return out;
}

FlatDef flatten_def(const BlockDef& d, int depth) {
  if (!has_block_nodes(d.graph)) return {d.graph, d.inputs, d.output};
  std::map<std::string, FlatDef> nested;
  FlatDef f;
  f.graph = flatten_graph(d.graph, depth, &nested);
  for (const auto& ports : d.inputs) {
    std::vector<BlockPort> flat;
    for (const BlockPort& t : ports) {
      auto it = nested.find(t.node);
      if (it == nested.end()) {
        flat.push_back(t);
      } else if (size_t(t.port) < it->second.inputs.size()) {
        for (const BlockPort& u : it->second.inputs[size_t(t.port)]) flat.push_back(u);
      }
    }
    f.inputs.push_back(std::move(flat));
  }
  auto it = nested.find(d.output);
  f.output = it == nested.end() ? d.output : it->second.output;
  return f;
}

}  // namespace

Graph flatten_blocks(const Graph& g) {
  if (!has_block_nodes(g)) return g;
  Graph out = flatten_graph(g, 0, nullptr);
  out.topo_order();  // names a node on a cycle
  return out;
}

std::map<std::string, int> block_instance_counts(const Graph& g) {
  std::map<std::string, int> counts;
  for (const auto& [id, n] : g.nodes())
    if (n.type == kBlockType) ++counts[n.attrs.has("block") ? n.attrs.s("block") : ""];
  return counts;
}

namespace {
void collect_definitions(const Graph& g, std::map<std::string, BlockDef>& out, int depth) {
  if (depth > 64) throw GraphError("blocks nest more than 64 deep (a block contains itself?)");
  for (const auto& [id, n] : g.nodes()) {
    if (n.type != kBlockType) continue;
    const auto def = block_definition_of(n);
    if (out.count(def->name)) continue;
    out[def->name] = *def;
    collect_definitions(def->graph, out, depth + 1);
  }
}

int replace_in(Graph& g, const std::string& name, const BlockDef& d, const std::string& text,
               int depth) {
  if (depth > 64) return 0;
  int changed = 0;
  std::vector<NodeId> ids;
  for (const auto& [id, n] : g.nodes())
    if (n.type == kBlockType) ids.push_back(id);
  for (NodeId id : ids) {
    const Node& n = g.node(id);
    if (n.attrs.has("block") && n.attrs.s("block") == name) {
      g.node(id).attrs.set("block", d.name);
      g.node(id).attrs.set("inputs", int64_t(d.inputs.size()));
      g.node(id).attrs.set("definition", text);
      ++changed;
      continue;
    }
    // A definition holding the replaced one changes too.
    BlockDef outer = *block_definition_of(n);
    if (replace_in(outer.graph, name, d, text, depth + 1) > 0) {
      g.node(id).attrs.set("definition", block_definition_json(outer));
      ++changed;
    }
  }
  return changed;
}
}  // namespace

std::map<std::string, BlockDef> block_definitions(const Graph& g) {
  std::map<std::string, BlockDef> out;
  collect_definitions(g, out, 0);
  return out;
}

int replace_block_definition(Graph& g, const std::string& name, const BlockDef& d) {
  return replace_in(g, name, d, block_definition_json(d), 0);
}

NodeId group_as_block(Graph& g, const std::vector<NodeId>& selection, const std::string& name) {
  if (name.empty()) throw GraphError("a block needs a name");
  if (selection.empty()) throw GraphError("select the layers to group first");
  std::set<NodeId> sel(selection.begin(), selection.end());
  for (NodeId id : sel)
    if (is_input_type(g.node(id).type))
      throw GraphError(node_label(g.node(id)) + " is where data enters; a block cannot hold it");
  if (block_definitions(g).count(name)) throw GraphError("a block named '" + name + "' exists");
  // A common "P_" prefix becomes the instance's name.
  std::string prefix;
  {
    const std::string& first = g.node(*sel.begin()).name;
    const size_t us = first.find('_');
    if (us != std::string::npos && us > 0) {
      prefix = first.substr(0, us + 1);
      for (NodeId id : sel) {
        const std::string& n = g.node(id).name;
        if (n.rfind(prefix, 0) != 0 || n.size() == prefix.size()) prefix.clear();
      }
    }
  }
  BlockDef d;
  d.name = name;
  double x0 = 1e300, y0 = 1e300;
  for (NodeId id : sel) {
    x0 = std::min(x0, g.node(id).x);
    y0 = std::min(y0, g.node(id).y);
  }
  auto inner = [&](NodeId id) { return g.node(id).name.substr(prefix.size()); };
  for (NodeId id : sel) {
    const Node& n = g.node(id);
    d.graph.set_trainable(d.graph.add_node(n.type, inner(id), n.attrs, n.x - x0, n.y - y0, id),
                          n.trainable);
  }
  std::map<NodeId, std::vector<Edge>> in_from;  // outside source -> its edges in
  std::set<NodeId> out_src;
  std::vector<Edge> out_edges;
  for (const Edge& e : g.edges()) {
    const bool s_in = sel.count(e.src) > 0, d_in = sel.count(e.dst) > 0;
    if (s_in && d_in) d.graph.connect(e.src, e.dst, e.dst_port);
    if (!s_in && d_in) in_from[e.src].push_back(e);
    if (s_in && !d_in) {
      out_src.insert(e.src);
      out_edges.push_back(e);
    }
  }
  if (in_from.empty())
    throw GraphError("nothing outside feeds the selection; a block needs an input");
  if (out_src.size() > 1) {
    std::string names;
    for (NodeId id : out_src) names += (names.empty() ? "'" : ", '") + g.node(id).name + "'";
    throw GraphError("a block has one output, but " + names + " feed layers outside");
  }
  if (out_src.empty()) {
    for (NodeId id : sel)
      if (d.graph.out_edges(id).empty()) out_src.insert(id);
    if (out_src.size() != 1)
      throw GraphError("a block has one output; the selection has several ends");
  }
  d.output = inner(*out_src.begin());
  for (auto& [src, edges] : in_from) {
    std::vector<BlockPort> ports;
    for (const Edge& e : edges) ports.push_back({inner(e.dst), e.dst_port});
    std::sort(ports.begin(), ports.end(), [](const BlockPort& a, const BlockPort& b) {
      return std::tie(a.node, a.port) < std::tie(b.node, b.port);
    });
    d.inputs.push_back(std::move(ports));
  }
  check_block_definition(d);
  Graph out = g;
  for (NodeId id : sel) out.remove_node(id);
  std::string instance = prefix.empty() ? "" : prefix.substr(0, prefix.size() - 1);
  if (instance.empty() || out.find_by_name(instance)) {
    std::string base;
    for (char c : name)
      base += std::isalnum(static_cast<unsigned char>(c)) ? char(std::tolower(c)) : '_';
    instance = out.unique_name(base.empty() ? "block" : base);
  }
  const NodeId b = out.add_node(kBlockType, instance, block_node_attrs(d), x0, y0);
  int port = 0;
  for (const auto& [src, edges] : in_from) out.connect(src, b, port++);
  for (const Edge& e : out_edges) out.connect(b, e.dst, e.dst_port);  // throws on a cycle
  g = std::move(out);
  return b;
}

std::vector<NodeId> ungroup_block(Graph& g, NodeId block) {
  const Node b = g.node(block);
  const auto def = block_definition_of(b);
  Graph out = g;
  const auto ins = g.in_edges(block);
  const auto outs = g.out_edges(block);
  out.remove_node(block);
  std::map<std::string, NodeId> ids;
  std::vector<NodeId> added;
  for (const auto& [iid, n] : def->graph.nodes()) {
    const NodeId id = out.add_node(n.type, b.name + "_" + n.name, n.attrs, b.x + n.x, b.y + n.y);
    out.set_trainable(id, n.trainable && b.trainable);
    ids[n.name] = id;
    added.push_back(id);
  }
  for (const Edge& e : def->graph.edges())
    out.connect(ids.at(def->graph.node(e.src).name), ids.at(def->graph.node(e.dst).name),
                e.dst_port);
  for (const Edge& e : ins)
    if (size_t(e.dst_port) < def->inputs.size())
      for (const BlockPort& t : def->inputs[size_t(e.dst_port)])
        out.connect(e.src, ids.at(t.node), t.port);
  for (const Edge& e : outs) out.connect(ids.at(def->output), e.dst, e.dst_port);
  g = std::move(out);
  return added;
}

std::vector<NodeId> repeat_block(Graph& g, NodeId block, int count) {
  const Node b = g.node(block);
  if (b.type != kBlockType) throw GraphError(node_label(b) + " is not a block");
  if (g.num_inputs(block) != 1) throw GraphError("only a block with one input repeats in a chain");
  if (count < 2 || count > 1000) throw GraphError("repeat between 2 and 1000 times");
  Graph out = g;
  const auto outs = g.out_edges(block);
  for (const Edge& e : outs) out.disconnect(e);
  std::string base = b.name;
  while (!base.empty() && std::isdigit(static_cast<unsigned char>(base.back()))) base.pop_back();
  if (base.empty()) base = "block";
  std::vector<NodeId> added;
  NodeId prev = block;
  for (int k = 1; k < count; ++k) {
    // Beside the previous one: the card's width and a gap.
    const NodeId id =
        out.add_node(kBlockType, out.unique_name(base), b.attrs, b.x + 240.0 * k, b.y);
    out.set_trainable(id, b.trainable);
    out.connect(prev, id, 0);
    added.push_back(id);
    prev = id;
  }
  for (const Edge& e : outs) out.connect(prev, e.dst, e.dst_port);
  g = std::move(out);
  return added;
}

void rename_block_definition(Graph& g, const std::string& from, const std::string& to) {
  if (to.empty()) throw GraphError("a block needs a name");
  const auto defs = block_definitions(g);
  auto it = defs.find(from);
  if (it == defs.end()) throw GraphError("no block named '" + from + "'");
  if (from == to) return;
  if (defs.count(to)) throw GraphError("a block named '" + to + "' exists");
  BlockDef d = it->second;
  d.name = to;
  replace_block_definition(g, from, d);
}

}  // namespace dc
