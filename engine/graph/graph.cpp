#include <deepcanvas/errors.h>
#include <deepcanvas/escape.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/layer.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_set>

namespace dc {

std::string node_label(const Node& n) {
  // Messages reach a terminal: a name's ESC or newline must not act there.
  return n.type + " '" + escape::line_text(n.name) + "'";
}

bool is_token_input(const std::string& type, const Attrs& attrs) {
  return type == "SequenceInput" && attrs.has("kind") && attrs.s("kind") == "tokens";
}

bool reads_tokens(const Graph& g) {
  for (const auto& [id, node] : g.nodes())
    if (is_token_input(node.type, node.attrs)) return true;
  return false;
}

static std::string lower_base(const std::string& type) {
  // "Conv2D" -> "conv", "MaxPool2D" -> "maxpool", "BatchNorm2D" -> "batchnorm"
  std::string b;
  for (char c : type) {
    if (std::isdigit(static_cast<unsigned char>(c))) break;
    b += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return b.empty() ? "node" : b;
}

std::string Graph::unique_name(const std::string& base) const {
  int& i = free_suffix_.try_emplace(base, 1).first->second;
  for (;; ++i) {
    std::string n = base + std::to_string(i);
    if (!find_by_name(n)) return n;
  }
}

NodeId Graph::add_node(const std::string& type, const std::string& name, Attrs attrs, double x,
                       double y, NodeId id) {
  register_builtin_layers();
  const LayerDescriptor& d = LayerRegistry::instance().get(type);
  std::string nm = name.empty() ? unique_name(lower_base(type)) : name;
  if (find_by_name(nm)) throw GraphError("a node named '" + nm + "' already exists");
  for (const auto& [k, v] : attrs.values()) {
    const AttrSpec* s = d.find_attr(k);
    if (!s) throw GraphError(type + " '" + nm + "': unknown attribute '" + k + "'");
    std::string err = validate_attr(*s, v);
    if (!err.empty()) throw GraphError(type + " '" + nm + "': " + err);
  }
  if (id < 0) id = next_id_;
  if (nodes_.count(id)) throw GraphError("node id " + std::to_string(id) + " is already used");
  next_id_ = std::max(next_id_, id + 1);
  Node n;
  n.id = id;
  n.type = type;
  n.name = nm;
  n.attrs = d.with_defaults(attrs);
  n.x = x;
  n.y = y;
  by_name_.emplace(nm, id);
  nodes_.emplace(id, std::move(n));
  return id;
}

void Graph::remove_node(NodeId id) {
  const Node& n = node(id);
  std::vector<Edge> gone = in_edges(id);
  for (const Edge& e : out_edges(id)) gone.push_back(e);
  for (const Edge& e : gone) unindex_edge(e);
  edges_.erase(std::remove_if(edges_.begin(), edges_.end(),
                              [&](const Edge& e) { return e.src == id || e.dst == id; }),
               edges_.end());
  by_name_.erase(n.name);
  free_suffix_.clear();
  nodes_.erase(id);
}

void Graph::index_edge(const Edge& e) {
  in_[e.dst].push_back(e);
  out_[e.src].push_back(e);
}

void Graph::unindex_edge(const Edge& e) {
  auto drop = [&](std::unordered_map<NodeId, std::vector<Edge>>& m, NodeId k) {
    auto it = m.find(k);
    if (it == m.end()) return;
    auto& v = it->second;
    v.erase(std::remove(v.begin(), v.end(), e), v.end());
    if (v.empty()) m.erase(it);
  };
  drop(in_, e.dst);
  drop(out_, e.src);
}

const Node& Graph::node(NodeId id) const {
  auto it = nodes_.find(id);
  if (it == nodes_.end()) throw GraphError("no node with id " + std::to_string(id));
  return it->second;
}

Node& Graph::node(NodeId id) {
  auto it = nodes_.find(id);
  if (it == nodes_.end()) throw GraphError("no node with id " + std::to_string(id));
  return it->second;
}

const Node* Graph::find(NodeId id) const {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : &it->second;
}

const Node* Graph::find_by_name(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : find(it->second);
}

int Graph::num_inputs(NodeId id) const {
  const Node& n = node(id);
  return LayerRegistry::instance().get(n.type).num_inputs(n.attrs);
}

std::vector<Edge> Graph::in_edges(NodeId id) const {
  auto it = in_.find(id);
  if (it == in_.end()) return {};
  std::vector<Edge> v = it->second;
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.dst_port < b.dst_port; });
  return v;
}

std::vector<Edge> Graph::out_edges(NodeId id) const {
  auto it = out_.find(id);
  return it == out_.end() ? std::vector<Edge>{} : it->second;
}

std::string Graph::connect_problem(NodeId src, NodeId dst, int port) const {
  const Node* s = find(src);
  const Node* d = find(dst);
  if (!s || !d) return "both ends of a connection must be existing nodes";
  if (src == dst) return "a layer cannot feed itself";
  int ports = num_inputs(dst);
  if (ports == 0) return node_label(*d) + " has no inputs";
  if (port < 0 || port >= ports)
    return node_label(*d) + " has " + std::to_string(ports) + " input(s); port " +
           std::to_string(port) + " does not exist";
  if (auto it = in_.find(dst); it != in_.end())
    for (const auto& e : it->second)
      if (e.dst_port == port)
        return "input " + std::to_string(port) + " of " + node_label(*d) +
               " is already connected (from '" + node(e.src).name + "'); remove that edge first";
  return "";
}

std::string Graph::can_connect(NodeId src, NodeId dst, int port) const {
  if (std::string why = connect_problem(src, dst, port); !why.empty()) return why;
  // A path dst -> ... -> src would close a cycle. Iterative: a chain of 100k
  // layers would overflow the stack of a recursive search.
  std::unordered_set<NodeId> seen{dst};
  std::vector<NodeId> todo{dst};
  while (!todo.empty()) {
    NodeId from = todo.back();
    todo.pop_back();
    if (from == src)
      return "connecting '" + node(src).name + "' to '" + node(dst).name +
             "' would create a cycle; networks must flow one way";
    if (auto it = out_.find(from); it != out_.end())
      for (const auto& e : it->second)
        if (seen.insert(e.dst).second) todo.push_back(e.dst);
  }
  return "";
}

void Graph::connect(NodeId src, NodeId dst, int port) {
  std::string err = can_connect(src, dst, port);
  if (!err.empty()) throw GraphError(err);
  edges_.push_back({src, dst, port});
  index_edge(edges_.back());
}

void Graph::connect_without_cycle_check(NodeId src, NodeId dst, int port) {
  std::string err = connect_problem(src, dst, port);
  if (!err.empty()) throw GraphError(err);
  edges_.push_back({src, dst, port});
  index_edge(edges_.back());
}

void Graph::disconnect(const Edge& e) {
  auto it = std::find(edges_.begin(), edges_.end(), e);
  if (it == edges_.end()) return;
  unindex_edge(e);
  edges_.erase(it);
}

void Graph::set_attr(NodeId id, const std::string& name, AttrValue v) {
  Node& n = node(id);
  const LayerDescriptor& d = LayerRegistry::instance().get(n.type);
  const AttrSpec* s = d.find_attr(name);
  if (!s) throw GraphError(node_label(n) + ": unknown attribute '" + name + "'");
  std::string err = validate_attr(*s, v);
  if (!err.empty()) throw GraphError(node_label(n) + ": " + err);
  n.attrs.set(name, std::move(v));
  // Fewer input ports (Add/Concat "inputs") drops edges into removed ports.
  int ports = d.num_inputs(n.attrs);
  for (const Edge& e : in_edges(id))
    if (e.dst_port >= ports) unindex_edge(e);
  edges_.erase(std::remove_if(edges_.begin(), edges_.end(),
                              [&](const Edge& e) { return e.dst == id && e.dst_port >= ports; }),
               edges_.end());
}

void Graph::rename(NodeId id, const std::string& name) {
  Node& n = node(id);
  if (name.empty()) throw GraphError("a node name cannot be empty");
  const Node* other = find_by_name(name);
  if (other && other->id != id) throw GraphError("a node named '" + name + "' already exists");
  by_name_.erase(n.name);
  by_name_[name] = id;
  free_suffix_.clear();
  n.name = name;
}

void Graph::move(NodeId id, double x, double y) {
  Node& n = node(id);
  n.x = x;
  n.y = y;
}

void Graph::set_trainable(NodeId id, bool trainable) {
  node(id).trainable = trainable;
}

std::unordered_set<NodeId> upstream_of(const Graph& g, NodeId id) {
  std::unordered_set<NodeId> seen{id};
  std::vector<NodeId> todo{id};
  while (!todo.empty()) {
    const NodeId at = todo.back();
    todo.pop_back();
    for (const Edge& e : g.in_edges(at))
      if (seen.insert(e.src).second) todo.push_back(e.src);
  }
  return seen;
}

int freeze_until(Graph& g, const std::string& name) {
  const Node* last = g.find_by_name(name);
  if (!last) throw GraphError("there is no layer named '" + name + "' to freeze up to");
  const std::unordered_set<NodeId> base = upstream_of(g, last->id);
  for (NodeId id : base) g.set_trainable(id, false);
  return int(base.size());
}

void Graph::clear() {
  nodes_.clear();
  edges_.clear();
  by_name_.clear();
  in_.clear();
  out_.clear();
  free_suffix_.clear();
  next_id_ = 1;
}

std::vector<NodeId> Graph::topo_order() const {
  // Kahn's algorithm with ids in ascending order among ready nodes, so the
  // order (and therefore initialisation and RNG use) is stable.
  std::unordered_map<NodeId, int> indeg;
  for (const auto& [id, n] : nodes_) indeg[id] = 0;
  for (const auto& e : edges_) indeg[e.dst]++;
  std::set<NodeId> ready;
  for (auto& [id, d] : indeg)
    if (d == 0) ready.insert(id);
  std::vector<NodeId> order;
  order.reserve(nodes_.size());
  while (!ready.empty()) {
    NodeId id = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(id);
    if (auto it = out_.find(id); it != out_.end())
      for (const auto& e : it->second)
        if (--indeg[e.dst] == 0) ready.insert(e.dst);
  }
  if (order.size() != nodes_.size()) {
    // The smallest id left over, so the message does not depend on hashing.
    for (const auto& [id, n] : nodes_)
      if (indeg[id] > 0) throw GraphError(node_label(n) + " is part of a cycle");
  }
  return order;
}

std::map<NodeId, NodeShape> Graph::infer_shapes() const {
  std::map<NodeId, NodeShape> out;
  std::vector<NodeId> order;
  try {
    order = topo_order();
  } catch (const GraphError& e) {
    for (const auto& [id, n] : nodes_) out[id].error = e.what();
    return out;
  }
  const auto& reg = LayerRegistry::instance();
  for (NodeId id : order) {
    const Node& n = node(id);
    NodeShape& r = out[id];
    const LayerDescriptor* d = reg.find(n.type);
    if (!d) {
      r.error = "unknown layer type '" + n.type + "'";
      continue;
    }
    int ports = d->num_inputs(n.attrs);
    std::vector<Shape> in(ports);
    std::string problem;
    std::vector<bool> have(ports, false);
    for (const auto& e : in_edges(id)) {
      if (e.dst_port >= ports) continue;
      have[e.dst_port] = true;
      const NodeShape& up = out[e.src];
      if (!up.ok()) {
        if (problem.empty()) {
          problem = "input from '" + node(e.src).name + "' has no valid shape";
          r.inherited = true;
        }
      } else {
        in[e.dst_port] = *up.shape;
      }
    }
    for (int p = 0; p < ports && problem.empty(); ++p)
      if (!have[p])
        problem = ports == 1 ? "input is not connected"
                             : "input " + std::to_string(p) + " is not connected";
    if (!problem.empty()) {
      r.error = node_label(n) + ": " + problem;
      continue;
    }
    try {
      r.shape = d->infer(in, n.attrs);
    } catch (const Error& e) {
      r.error = node_label(n) + ": " + e.what();
    }
  }
  return out;
}

std::vector<NodeId> Graph::inputs() const {
  std::vector<NodeId> v;
  for (const auto& [id, n] : nodes_)
    if (is_input_type(n.type)) v.push_back(id);
  return v;
}

std::vector<NodeId> Graph::outputs() const {
  std::vector<NodeId> v;
  for (const auto& [id, n] : nodes_)
    if (!is_input_type(n.type) && !out_.count(id)) v.push_back(id);
  return v;
}

namespace {

// Beyond this many, a listing says "and N more": one message for a graph of
// 300k broken layers would otherwise run to megabytes.
constexpr size_t kMaxListed = 10;

}  // namespace

void Graph::validate() const {
  if (nodes_.empty()) throw GraphError("the network is empty: add an Input and some layers");
  std::string errors;
  auto ins = inputs();
  if (ins.empty()) errors += "the network has no Input layer\n";
  if (ins.size() > 1)
    errors += "the network has more than one Input layer; only one is supported\n";
  auto outs = outputs();
  if (outs.empty()) errors += "the network has no output layer\n";
  if (outs.size() > 1) {
    std::string names;
    for (size_t i = 0; i < std::min(outs.size(), kMaxListed); ++i)
      names += (i ? ", " : "") + node(outs[i]).name;
    if (outs.size() > kMaxListed)
      names += " and " + std::to_string(outs.size() - kMaxListed) + " more";
    errors += "the network has several outputs (" + names +
              "); connect them so that exactly one layer has no outgoing edge\n";
  }
  // The layers whose own rule fails are the causes; the layers that only
  // inherit a missing shape follow from them, so they are counted, not listed.
  auto shapes = infer_shapes();
  std::vector<NodeId> order;
  try {
    order = topo_order();
  } catch (const GraphError& e) {
    errors += std::string(e.what()) + "\n";
  }
  size_t causes = 0, inherited = 0;
  for (NodeId id : order) {
    const NodeShape& s = shapes[id];
    if (s.ok()) continue;
    if (s.inherited) {
      ++inherited;
    } else if (++causes <= kMaxListed) {
      errors += s.error + "\n";
    }
  }
  if (causes > kMaxListed)
    errors += "... and " + std::to_string(causes - kMaxListed) + " more layers with errors\n";
  if (inherited)
    errors += std::to_string(inherited) +
              (inherited == 1 ? " layer downstream has" : " layers downstream have") +
              " no shape because of " + (causes == 1 ? "this" : "these") + "\n";
  if (!errors.empty()) {
    errors.pop_back();
    throw GraphError(errors);
  }
}

bool Graph::operator==(const Graph& o) const {
  if (nodes_.size() != o.nodes_.size()) return false;
  for (const auto& [id, n] : nodes_) {
    const Node* m = o.find(id);
    if (!m || m->type != n.type || m->name != n.name || !(m->attrs == n.attrs) || m->x != n.x ||
        m->y != n.y || m->trainable != n.trainable)
      return false;
  }
  auto a = edges_, b = o.edges_;
  auto key = [](const Edge& e) { return std::tuple(e.dst, e.dst_port, e.src); };
  auto cmp = [&](const Edge& x, const Edge& y) { return key(x) < key(y); };
  std::sort(a.begin(), a.end(), cmp);
  std::sort(b.begin(), b.end(), cmp);
  return a == b;
}

}  // namespace dc
