#pragma once
// The network as the editor edits it: nodes (a layer type, a unique name,
// attributes, a canvas position) and edges from a node's output to an input
// port of another node. The graph is a DAG; shape inference reports, per
// node, either its output shape or an error naming the node.
#include <deepcanvas/attrs.h>
#include <deepcanvas/tensor.h>

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace dc {

using NodeId = int;

struct Node {
  NodeId id = -1;
  std::string type;
  std::string name;
  Attrs attrs;
  double x = 0, y = 0;
  // False freezes the node (transfer learning): its parameters are not
  // updated, BatchNorm keeps its running statistics, and a frozen prefix of
  // the network gets no backward pass. A per-node flag rather than a layer
  // attribute, because it applies to every layer type alike and is about
  // training, not about what the layer computes.
  bool trainable = true;
};

struct Edge {
  NodeId src = -1;  // producing node (single output)
  NodeId dst = -1;  // consuming node
  int dst_port = 0;
  bool operator==(const Edge& o) const {
    return src == o.src && dst == o.dst && dst_port == o.dst_port;
  }
};

struct NodeShape {
  std::optional<Shape> shape;  // per sample, no batch dimension
  std::string error;           // set when shape is empty
  bool inherited = false;      // the error is an upstream node's ("has no valid shape")
  bool ok() const { return shape.has_value(); }
};

class Graph {
 public:
  // Adds a node; fills missing attributes from the layer's defaults. An empty
  // name becomes a unique one ("conv1", "conv2", ...). Throws GraphError for
  // an unknown type or a duplicate name. Returns the new id.
  NodeId add_node(const std::string& type, const std::string& name = "", Attrs attrs = {},
                  double x = 0, double y = 0, NodeId id = -1);
  void remove_node(NodeId id);  // also removes its edges
  // Connects src's output to dst's input port. Throws GraphError with the
  // reason when the edge would be illegal (port out of range, port already
  // connected, self loop, cycle).
  void connect(NodeId src, NodeId dst, int dst_port = 0);
  // connect() without the cycle search, for loading many edges at once: the
  // search can visit the whole graph per edge. The caller must then call
  // topo_order(), which names a node on any cycle.
  void connect_without_cycle_check(NodeId src, NodeId dst, int dst_port);
  // Returns "" when connect() would succeed, else the reason.
  std::string can_connect(NodeId src, NodeId dst, int dst_port) const;
  void disconnect(const Edge& e);

  void set_attr(NodeId id, const std::string& name, AttrValue v);  // validates
  void rename(NodeId id, const std::string& name);
  void move(NodeId id, double x, double y);
  void set_trainable(NodeId id, bool trainable);

  const Node& node(NodeId id) const;  // throws GraphError
  Node& node(NodeId id);
  const Node* find(NodeId id) const;
  const Node* find_by_name(const std::string& name) const;
  const std::map<NodeId, Node>& nodes() const { return nodes_; }
  const std::vector<Edge>& edges() const { return edges_; }
  std::vector<Edge> in_edges(NodeId id) const;  // by port
  std::vector<Edge> out_edges(NodeId id) const;
  int num_inputs(NodeId id) const;  // ports, from the descriptor
  std::string unique_name(const std::string& base) const;
  bool empty() const { return nodes_.empty(); }
  void clear();

  // Topological order; throws GraphError naming a node on a cycle.
  std::vector<NodeId> topo_order() const;
  // Shapes per node. Never throws: errors (unconnected input, shape rule
  // failure, cycle, upstream error) are reported on the node they concern.
  std::map<NodeId, NodeShape> infer_shapes() const;
  // The Input nodes and the output nodes (no outgoing edges), by id.
  std::vector<NodeId> inputs() const;
  std::vector<NodeId> outputs() const;
  // Throws GraphError when the graph cannot be compiled (exactly one Input,
  // exactly one output, all shapes ok), one problem per line: the layers
  // whose own rule fails first, in topological order, then a count of the
  // layers downstream of them. Listings are capped so that a huge broken
  // graph gives a readable message.
  void validate() const;

  bool operator==(const Graph& o) const;

 private:
  std::string connect_problem(NodeId src, NodeId dst, int port) const;
  void index_edge(const Edge& e);
  void unindex_edge(const Edge& e);

  std::map<NodeId, Node> nodes_;
  std::vector<Edge> edges_;
  NodeId next_id_ = 1;
  // Indexes over nodes_ and edges_, so that loading, lookups and the graph
  // algorithms stay linear in the graph's size (projects may have 100k+
  // layers).
  std::unordered_map<std::string, NodeId> by_name_;
  std::unordered_map<NodeId, std::vector<Edge>> in_, out_;
  // Per unique_name() base, a suffix below which every name is taken; only
  // ever a lower bound, reset when a name is freed.
  mutable std::unordered_map<std::string, int> free_suffix_;
};

// The node and every node it depends on (its ancestors through the edges):
// what a "keep up to here" edit keeps, and what freezing a base freezes.
std::unordered_set<NodeId> upstream_of(const Graph& g, NodeId id);

// Freezes the named node and every node it depends on (a pretrained base up
// to that layer), as the CLI's --freeze-until does. Returns how many nodes
// were frozen; throws GraphError for an unknown name.
int freeze_until(Graph& g, const std::string& name);

// "Conv2D 'conv2'" — how messages name a node.
std::string node_label(const Node& n);

// Whether a layer feeds token ids (a SequenceInput of kind "tokens"): the
// one rule behind reads_tokens, input_is_tokens (plan.h), the export's
// train.py and text generation.
bool is_token_input(const std::string& type, const Attrs& attrs);
// Whether a network reads token windows (a character model's input [T]).
// On the graph, so the editor can ask while the network does not validate.
bool reads_tokens(const Graph& g);

}  // namespace dc
