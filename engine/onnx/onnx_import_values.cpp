// The importer's value tracker: looking up each op's inputs, recording its
// outputs or why they cannot be imported, and adding the layers that compute
// them (materializing a regrouped view as a Flatten or Reshape only where a
// layer needs it).
#include <exception>
#include <string>

#include "onnx_import_internal.h"

namespace dc::onnx_import {

const Val& Importer::in(const onnx::NodeProto& n, int k) {
  if (k >= n.input_size() || n.input(k).empty())
    throw NotSupported{"input " + std::to_string(k) + " is missing"};
  auto it = vals_.find(n.input(k));
  if (it == vals_.end()) throw NotSupported{"input '" + n.input(k) + "' is not defined before it"};
  Val& v = it->second;
  // A single direction's final state is the layer's output once it is
  // used: the layer then outputs its final state.
  if (!v.is_const && v.layout == Layout::RnnFinal && v.D == 1 && v.t == v.T - 1) {
    const NodeId id = final_state(v);
    v = plain(id);
  }
  return v;
}

const Const& Importer::cin(const onnx::NodeProto& n, int k, const char* what) {
  const Val& v = in(n, k);
  if (!v.is_const) throw NotSupported{std::string(what) + " must be a constant (an initializer)"};
  return v.c;
}

Val Importer::constant(Const c) {
  check_extent(c.dims, "a constant");
  Val v;
  v.is_const = true;
  v.c = std::move(c);
  return v;
}

const Val& Importer::layer_in(const onnx::NodeProto& n, int k) {
  const Val& v = in(n, k);
  if (v.is_const)
    throw NotSupported{"a computation on constants only (input " + std::to_string(k) +
                       ") is not supported"};
  return v;
}

NodeId Importer::add(const std::string& type, const std::string& base, Attrs a,
                     const std::vector<NodeId>& inputs,
                     std::vector<std::pair<std::string, Tensor>> params) {
  const LayerDescriptor& d = LayerRegistry::instance().get(type);
  // The layer's own ranges first: its shape rule assumes valid attributes
  // (groups 0 would divide by zero).
  for (const auto& [k, v] : a.values()) {
    const AttrSpec* spec = d.find_attr(k);
    const std::string bad = spec ? validate_attr(*spec, v) : "unknown attribute " + k;
    if (!bad.empty()) throw NotSupported{"as " + type + ": " + k + ": " + bad};
  }
  std::vector<Shape> in_shapes;
  for (NodeId i : inputs) in_shapes.push_back(shapes_.at(i));
  Shape s;
  try {
    s = d.infer(in_shapes, d.with_defaults(a));
  } catch (const std::exception& e) {
    throw NotSupported{"the " + type + " layer it maps to refuses it: " + e.what()};
  }
  std::string name = base;
  if (!name.empty() && g_.find_by_name(name)) {
    for (int k = 1;; ++k)
      if (!g_.find_by_name(base + "_" + std::to_string(k))) {
        name = base + "_" + std::to_string(k);
        break;
      }
  }
  NodeId id;
  try {
    id = g_.add_node(type, name, a);
  } catch (const std::exception& e) {
    throw NotSupported{std::string("as ") + type + ": " + e.what()};
  }
  scope_[id] = base;
  for (size_t k = 0; k < inputs.size(); ++k) g_.connect_without_cycle_check(inputs[k], id, int(k));
  shapes_[id] = s;
  params_[id] = std::move(params);
  return id;
}

Val Importer::plain(NodeId id) {
  Val v;
  v.node = id;
  v.view = shapes_.at(id).dims();
  return v;
}

NodeId Importer::materialize(const Val& v) {
  if (v.is_const) throw NotSupported{"a constant input where a computed one is expected"};
  if (v.ids || token_inputs_.count(v.node))
    throw NotSupported{
        "token ids used as numbers (only an Embedding, a Gather from a constant "
        "table, reads them)"};
  if (!v.pad.empty())
    throw NotSupported{
        "its input is zero-padded by a Pad, which is supported only before a Conv or an "
        "AveragePool"};
  if (v.layout != Layout::Plain) (void)view_of(v);  // throws why, naming the arrangement
  if (shapes_.at(v.node).dims() == v.view) return v.node;
  auto key = std::make_pair(v.node, v.view);
  if (auto it = regrouped_.find(key); it != regrouped_.end()) return it->second;
  const std::string& src = g_.node(v.node).name;
  NodeId id;
  if (v.view.size() == 1) {
    id = add("Flatten", v.regroup_name.empty() ? src + "_flat" : v.regroup_name, {}, {v.node});
  } else {
    Attrs a;
    a.set("shape", v.view);
    id = add("Reshape", v.regroup_name.empty() ? src + "_reshape" : v.regroup_name, a, {v.node});
  }
  regrouped_[key] = id;
  return id;
}

NodeId Importer::final_state(const Val& v) {
  if (!g_.out_edges(v.node).empty() || sequence_used_.count(v.node))
    throw NotSupported{"both the final state and the sequence of a recurrent layer are used"};
  g_.set_attr(v.node, "return_sequences", false);
  shapes_[v.node] = Shape{v.D * v.H};
  final_.insert(v.node);
  return v.node;
}

const std::vector<int64_t>& Importer::view_of(const Val& v) {
  // A time-first value need not come from a recurrent layer: any
  // Transpose [1, 0, 2] of a sequence makes one (attention does, before its
  // projections).
  if (v.layout == Layout::TimeFirst)
    throw NotSupported{
        "its input is a sequence in time-first order ([steps, N, features], after a Transpose), "
        "which only a recurrent layer or a Transpose back to [N, steps, features] can take"};
  if (v.layout != Layout::Plain)
    throw NotSupported{"its input is a recurrent layer's output in an arrangement it cannot take"};
  return v.view;
}

void Importer::poison(const onnx::NodeProto& n, int k, const std::string& why) {
  if (k >= n.output_size() || n.output(k).empty()) return;
  Val v;
  v.problems.insert(problem(n, why));
  vals_[n.output(k)] = v;
}

void Importer::refuse(const onnx::NodeProto& n, const std::string& why) {
  const int p = problem(n, why);
  for (const auto& o : n.output()) {
    Val v;
    v.problems = {p};
    vals_[o] = v;
  }
}

int Importer::problem(const onnx::NodeProto& n, const std::string& why) {
  problems_.push_back(n.op_type() + " '" + (n.name().empty() ? n.output(0) : n.name()) +
                      "': " + why);
  return int(problems_.size()) - 1;
}

}  // namespace dc::onnx_import
