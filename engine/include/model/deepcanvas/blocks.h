#pragma once
// Reusable blocks. A definition is a name, an inner graph, the inner ports
// each block input feeds and the inner node that is the block's output.
// A "Block" node uses one: attribute "block" names it, "inputs" is its
// port count and "definition" holds the definition itself (its canonical
// JSON, block_definition_json), so that a node is self-contained wherever
// the graph goes (undo snapshots, the clipboard, shape inference through
// the registry) while the project file stores each definition once
// ("blocks", project.cpp). Instances of one name share the definition: the
// editor changes every instance together.
//
// Everything that trains, summarises or exports works on flatten_blocks()'s
// graph (lower_graph flattens), in which each instance is replaced by its
// layers named "<instance>_<layer>": names valid for the exporters and the
// state files, and stable while the instance and the layer keep theirs.
#include <deepcanvas/graph.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dc {

inline constexpr const char* kBlockType = "Block";

// An inner node's input port.
struct BlockPort {
  std::string node;
  int port = 0;
  bool operator==(const BlockPort& o) const { return node == o.node && port == o.port; }
};

struct BlockDef {
  std::string name;
  Graph graph;  // the layers inside; no Input nodes
  // Block input i feeds every port in inputs[i] (one outside value may
  // feed several layers inside, e.g. both branches of a residual).
  std::vector<std::vector<BlockPort>> inputs;
  std::string output;  // the inner node whose output is the block's
};

// Registers the "Block" layer type; register_builtin_layers() calls it.
void register_block_layer();

// The canonical JSON of a definition (what a Block node's "definition"
// holds); `with_nested` false leaves out nested Block nodes' definitions
// (the project file's form, which names them).
std::string block_definition_json(const BlockDef& d, bool with_nested = true);
// Parses block_definition_json's text. Throws GraphError naming the block.
BlockDef parse_block_definition(const std::string& json_text);
// Parsed once per distinct text (a cache), for the shape and cost rules.
std::shared_ptr<const BlockDef> block_definition(const std::string& json_text);
// A Block node's definition; throws GraphError naming the node when it has
// none or the node is not a Block.
std::shared_ptr<const BlockDef> block_definition_of(const Node& n);

// Refuses a definition whose ports name missing layers or ports, that has
// no output or an Input layer, or whose layers leave an output unused (a
// block has one output): GraphError naming the block.
void check_block_definition(const BlockDef& d);

// The attributes of a Block node using d.
Attrs block_node_attrs(const BlockDef& d);

bool has_block_nodes(const Graph& g);
// g with every Block node (nested ones too) replaced by its definition's
// layers, wired as the instance was; names "<instance>_<layer>", positions
// around the instance's. Other nodes keep their ids, names and positions.
// Throws GraphError naming the node for a Block without a definition or
// with a port count other than its definition's.
Graph flatten_blocks(const Graph& g);

// How many Block nodes of g (not nested ones) use each definition name.
std::map<std::string, int> block_instance_counts(const Graph& g);
// Every definition g uses, by name, nested ones included (the first found
// for a name: the editor keeps instances of one name identical).
std::map<std::string, BlockDef> block_definitions(const Graph& g);

// g with every Block node named `name` (nested ones inside other
// definitions too) using d instead. Returns how many nodes changed.
int replace_block_definition(Graph& g, const std::string& name, const BlockDef& d);

// The editor's block edits, on the engine's graph so that they are tested
// without Qt. Each throws GraphError with the reason it is refused and
// leaves g unchanged then.
//
// Replaces the selected nodes by one Block node of a new definition
// `name`, wired as they were: one block input per outside node feeding the
// selection (by that node's id), the output the one selected node that
// feeds on outside (or the selection's only end). When every selected name
// starts with one prefix "P_", the layers inside drop it and the instance
// is named "P", so that flattening gives back the same names (checkpoints
// keep working). Returns the Block node's id.
NodeId group_as_block(Graph& g, const std::vector<NodeId>& selection, const std::string& name);
// Replaces a Block node by its definition's layers (one level), named
// "<instance>_<layer>". Returns their ids.
std::vector<NodeId> ungroup_block(Graph& g, NodeId block);
// Makes a Block node with one input the first of `count` instances wired
// in a chain (what it fed, the last one feeds). Returns the new ids.
std::vector<NodeId> repeat_block(Graph& g, NodeId block, int count);
// Renames a definition in every instance and definition that uses it.
void rename_block_definition(Graph& g, const std::string& from, const std::string& to);

}  // namespace dc
