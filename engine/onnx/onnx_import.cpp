// ONNX import: walks the model's nodes in order (ONNX keeps them sorted) and
// turns each into DeepCanvas layers, or into a constant when its inputs are
// all known (the shape arithmetic PyTorch writes around recurrent layers and
// view() calls). Values remember how the ONNX tensor relates to the layer
// that computes it, so that ONNX-only steps (Flatten, Reshape, Squeeze, the
// Transposes around LSTM/GRU, a zero Pad before a Conv) need no layer of
// their own. An op that cannot be mapped marks its outputs; only marks that
// reach the graph's output are reported, all at once, so the shape
// bookkeeping PyTorch leaves unused never blocks an import.
//
// This file drives it: the public entry points, the op dispatch table and
// the graph clean-up after the walk; onnx_import_internal.h lists where the
// rest lives.
#include <deepcanvas/checked.h>
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/onnx.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include "onnx_import_internal.h"

namespace dc {

namespace onnx_import {

const std::map<std::string, Importer::Handler>& Importer::handlers() {
  static const std::map<std::string, Handler> h = {
      {"Identity", &Importer::op_alias},
      {"Dropout", &Importer::op_alias},
      {"Constant", &Importer::op_constant},
      {"Conv", &Importer::op_conv},
      {"BatchNormalization", &Importer::op_bn},
      {"LayerNormalization", &Importer::op_layer_norm},
      {"Relu", &Importer::op_activation},
      {"LeakyRelu", &Importer::op_activation},
      {"Sigmoid", &Importer::op_activation},
      {"Tanh", &Importer::op_activation},
      {"Clip", &Importer::op_clip},
      {"HardSigmoid", &Importer::op_hard_activation},
      {"HardSwish", &Importer::op_hard_activation},
      {"Softmax", &Importer::op_softmax},
      {"MaxPool", &Importer::op_pool},
      {"AveragePool", &Importer::op_pool},
      {"GlobalAveragePool", &Importer::op_global_pool},
      {"ReduceMean", &Importer::op_reduce_mean},
      {"Flatten", &Importer::op_flatten},
      {"Reshape", &Importer::op_reshape},
      {"Squeeze", &Importer::op_squeeze},
      {"Unsqueeze", &Importer::op_unsqueeze},
      {"Transpose", &Importer::op_transpose},
      {"Gather", &Importer::op_gather},
      {"Slice", &Importer::op_slice},
      {"Split", &Importer::op_split},
      {"Gemm", &Importer::op_gemm},
      {"MatMul", &Importer::op_matmul},
      {"Add", &Importer::op_add},
      {"Sum", &Importer::op_add},
      {"Sub", &Importer::op_arith},
      {"Mul", &Importer::op_mul},
      {"Div", &Importer::op_arith},
      {"Concat", &Importer::op_concat},
      {"Pad", &Importer::op_pad},
      {"Shape", &Importer::op_shape},
      {"Cast", &Importer::op_cast},
      {"ConstantOfShape", &Importer::op_constant_of_shape},
      {"Expand", &Importer::op_expand},
      {"Equal", &Importer::op_equal},
      {"Where", &Importer::op_where},
      {"LSTM", &Importer::op_recurrent},
      {"GRU", &Importer::op_recurrent},
      {"RNN", &Importer::op_recurrent},
  };
  return h;
}

void Importer::add_input(const onnx::ValueInfoProto& vi) {
  const auto& t = vi.type().tensor_type();
  if (!vi.type().has_tensor_type()) throw Error("input '" + vi.name() + "' is not a tensor");
  const bool ids =
      t.elem_type() == onnx::TensorProto::INT64 || t.elem_type() == onnx::TensorProto::INT32;
  const int rank = t.shape().dim_size();
  if (t.elem_type() != onnx::TensorProto::FLOAT && !(ids && rank == 2))
    throw Error("input '" + vi.name() + "' has element type " + std::to_string(t.elem_type()) +
                "; DeepCanvas networks take float32 inputs, or token ids (int64 or int32) of "
                "shape [N, steps]");
  std::vector<int64_t> dims;
  if (rank < 2 || rank > 4)
    throw Error("input '" + vi.name() + "' has " + std::to_string(rank) +
                " dimensions; supported: [N, features], [N, steps, features] or [N, C, H, W]");
  for (int k = 0; k < rank; ++k) {
    const auto& d = t.shape().dim(k);
    if (k == 0) {
      if (d.has_dim_value()) fixed_batch_ = d.dim_value();
      continue;
    }
    if (!d.has_dim_value() || d.dim_value() <= 0)
      throw Error("input '" + vi.name() + "' has a dynamic size in dimension " + std::to_string(k) +
                  (d.has_dim_param() ? " ('" + d.dim_param() + "')" : std::string()) +
                  "; DeepCanvas needs a fixed input size: export the model with a fixed size (only "
                  "the batch, dimension 0, may be dynamic)");
    dims.push_back(d.dim_value());
  }
  // Before anything is made from it (each dimension is range-checked by the
  // layer; their product is checked here).
  checked_numel(dims, "input '" + vi.name() + "' of shape " + dims_str(dims));
  Attrs a;
  std::string type = "Input";
  if (ids) {
    // One token id per step, for an Embedding (nn.Embedding's input).
    type = "SequenceInput";
    a = token_input_attrs(dims[0]);
  } else if (rank == 3) {
    type = "SequenceInput";
    a.set("steps", dims[0]);
    a.set("features", dims[1]);
  } else {
    a.set("shape", dims);
  }
  std::string name = clean_name(vi.name());
  if (name.empty()) name = "input";
  const NodeId id = g_.add_node(type, name, a);
  scope_[id] = name;
  shapes_[id] = Shape(dims);
  params_[id] = {};
  vals_[vi.name()] = plain(id);
  vals_[vi.name()].ids = ids;
}

// PyTorch writes a stacked nn.LSTM/GRU as one ONNX op per layer; the layers
// of one module (same scope, same form) become one DeepCanvas layer again,
// whose weights then carry PyTorch's names (rnn.weight_ih_l1).
void Importer::merge_recurrent() {
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [id, node] : g_.nodes()) {
      if (node.type != "LSTM" && node.type != "GRU" && node.type != "SimpleRNN") continue;
      const auto outs = g_.out_edges(id);
      if (outs.size() != 1 || !node.attrs.b("return_sequences")) continue;
      const NodeId next = outs[0].dst;
      const Node& b = g_.node(next);
      if (b.type != node.type || scope_[next] != scope_[id]) continue;
      bool same = true;
      for (const char* k : {"hidden_size", "bidirectional", "bias", "nonlinearity"}) {
        auto x = node.attrs.values().find(k), y = b.attrs.values().find(k);
        if ((x == node.attrs.values().end()) != (y == b.attrs.values().end()) ||
            (x != node.attrs.values().end() && x->second != y->second))
          same = false;
      }
      if (!same) continue;
      const int64_t L = node.attrs.i("num_layers");
      for (auto& [pname, t] : params_[next]) {
        // "weight_ih_l0_reverse" -> "weight_ih_l<L + 0>_reverse"
        const size_t at = pname.find("_l");
        const size_t end = pname.find_first_not_of("0123456789", at + 2);
        const int64_t layer = std::stoll(pname.substr(at + 2, end - at - 2));
        params_[id].push_back({pname.substr(0, at) + "_l" + std::to_string(L + layer) +
                                   (end == std::string::npos ? "" : pname.substr(end)),
                               t});
      }
      const int64_t more = b.attrs.i("num_layers");
      const bool seq = b.attrs.b("return_sequences");
      const std::vector<Edge> onward = g_.out_edges(next);
      params_.erase(next);
      g_.remove_node(next);  // (b refers to it: read above)
      g_.set_attr(id, "num_layers", L + more);
      g_.set_attr(id, "return_sequences", seq);
      for (const Edge& e : onward) g_.connect_without_cycle_check(id, e.dst, e.dst_port);
      changed = true;
      break;
    }
  }
}

void Importer::prune(NodeId output) {
  std::set<NodeId> keep = {output};
  std::vector<NodeId> stack = {output};
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    for (const Edge& e : g_.in_edges(id))
      if (keep.insert(e.src).second) stack.push_back(e.src);
  }
  std::vector<NodeId> drop;
  for (const auto& [id, node] : g_.nodes())
    if (!keep.count(id)) drop.push_back(id);
  for (NodeId id : drop) {
    g_.remove_node(id);
    params_.erase(id);
  }
}

// Columns by longest path from the input (the app re-lays it out for its
// canvas; this keeps a CLI-written project readable too).
void Importer::lay_out() {
  std::map<NodeId, int> depth;
  std::map<int, int> rows;
  for (NodeId id : g_.topo_order()) {
    int d = 0;
    for (const Edge& e : g_.in_edges(id)) d = std::max(d, depth[e.src] + 1);
    depth[id] = d;
    g_.move(id, 190.0 * d, 100.0 * rows[d]++);
  }
}

OnnxImport Importer::run() {
  register_builtin_layers();
  const onnx::GraphProto& graph = m_.graph();
  std::set<std::string> inits;
  for (const auto& t : graph.initializer()) {
    if (inits.count(t.name())) throw Error("initializer '" + t.name() + "' is defined twice");
    inits.insert(t.name());
    try {
      vals_[t.name()] = constant(read_tensor(t));
    } catch (const NotSupported& e) {
      throw Error(e.why);
    }
  }
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& vi : graph.input())
    if (!inits.count(vi.name())) inputs.push_back(&vi);
  if (inputs.size() != 1)
    throw Error("the model has " + std::to_string(inputs.size()) +
                " inputs; a DeepCanvas network has exactly one");
  if (graph.output_size() != 1)
    throw Error("the model has " + std::to_string(graph.output_size()) +
                " outputs; a DeepCanvas network has exactly one");
  add_input(*inputs[0]);
  for (const auto& n : graph.node())
    for (const auto& i : n.input()) ++uses_[i];
  for (const auto& o : graph.output()) ++uses_[o.name()];
  find_fusions();

  for (const auto& n : graph.node()) {
    if (skipped_.count(&n)) continue;
    if (auto f = fusions_.find(&n); f != fusions_.end()) {
      Val inherited;
      for (const std::string* name : {&f->second.input, &f->second.input2}) {
        auto x = vals_.find(*name);
        if (x != vals_.end())
          inherited.problems.insert(x->second.problems.begin(), x->second.problems.end());
      }
      if (!inherited.problems.empty()) {
        out(n, 0, inherited);
        continue;
      }
      try {
        emit_fusion(n, f->second);
      } catch (const NotSupported& e) {
        refuse(n, e.why);
      } catch (const ShapeError& e) {
        refuse(n, e.what());
      }
      continue;
    }
    std::set<int> inherited;
    for (const auto& i : n.input()) {
      auto it = vals_.find(i);
      if (it != vals_.end())
        inherited.insert(it->second.problems.begin(), it->second.problems.end());
    }
    if (!inherited.empty()) {
      // Downstream of a problem; still named when it is one itself, so the
      // message lists every unsupported op at once.
      if (!handlers().count(n.op_type()))
        inherited.insert(problem(n, "no DeepCanvas layer for this op"));
      if (attention_miss_.count(&n)) inherited.insert(problem(n, kAttentionMiss));
      for (const auto& o : n.output()) {
        Val v;
        v.problems = inherited;
        vals_[o] = v;
      }
      continue;
    }
    try {
      if (!n.domain().empty() && n.domain() != "ai.onnx")
        throw NotSupported{"an op of domain '" + n.domain() + "'"};
      auto h = handlers().find(n.op_type());
      if (h == handlers().end()) throw NotSupported{"no DeepCanvas layer for this op"};
      (this->*(h->second))(n);
    } catch (const NotSupported& e) {
      refuse(n, e.why);
    } catch (const ShapeError& e) {
      // The checked arithmetic's refusal (deepcanvas/checked.h): a zero
      // stride, an overflowing size, a tensor beyond the limits.
      refuse(n, e.what());
    }
  }

  const std::string& out_name = graph.output(0).name();
  auto it = vals_.find(out_name);
  if (it == vals_.end())
    throw Error("the model's output '" + out_name + "' is not computed by any node");
  std::set<int> probs = it->second.problems;
  NodeId out_node = -1;
  if (probs.empty()) {
    if (it->second.is_const) throw Error("the model's output is a constant");
    try {
      out_node = materialize(it->second);
    } catch (const NotSupported& e) {
      probs.insert(int(problems_.size()));
      problems_.push_back("output '" + out_name + "': " + e.why);
    }
  }
  if (!probs.empty()) {
    std::string m = std::to_string(probs.size()) +
                    (probs.size() == 1 ? " operation" : " operations") + " cannot be imported:";
    for (int p : probs) m += "\n  " + problems_[size_t(p)];
    throw Error(m);
  }
  prune(out_node);
  merge_recurrent();
  lay_out();

  // Refused before a Plan allocates it: the activations of one sample
  // beyond 2^31 values (8 GiB) are no network one trains or runs here.
  int64_t values = 0;
  for (const auto& [id, node] : g_.nodes())
    if ((values += shapes_.at(id).numel()) > (int64_t(1) << 31))
      throw Error("the network is too large: one sample's activations pass 2^31 values");
  OnnxImport r;
  r.name = graph.name();
  for (NodeId id : g_.topo_order())
    for (auto& [p, t] : params_[id]) r.weights.push_back({g_.node(id).name + "." + p, t});
  try {
    g_.validate();
    Plan plan(g_, 1);  // every weight has its place and shape
    plan.load_state(r.weights, source_);
  } catch (const std::exception& e) {
    throw Error(std::string("the imported network does not build (a bug in DeepCanvas's importer; "
                            "please report it): ") +
                e.what());
  }
  r.graph = std::move(g_);
  return r;
}

}  // namespace onnx_import

namespace {

namespace fs = std::filesystem;

}  // namespace

OnnxImport onnx_import_bytes(const std::string& bytes, const std::string& source) {
  const std::string where = "cannot import " + source + ": ";
  if (int64_t(bytes.size()) > kOnnxImportMaxBytes)
    throw Error(
        where +
        "the file is larger than 2 GB, the most an ONNX file can hold without external data");
  onnx::ModelProto m;
  if (bytes.empty() || !m.ParseFromString(bytes))
    throw Error(
        where +
        "not an ONNX model, or the file is truncated (it does not parse as an ONNX ModelProto)");
  if (!m.has_graph() || m.graph().node_size() == 0 || m.opset_import_size() == 0)
    throw Error(where + "not an ONNX model (no graph, nodes or opset)");
  for (const auto& t : m.graph().initializer())
    if (t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0)
      throw Error(where + "initializer '" + t.name() +
                  "' keeps its data in an external file, which the importer does not read; save "
                  "the model with its weights inside (onnx.save_model(m, path, "
                  "save_as_external_data=False), possible below 2 GB)");
  try {
    onnx::checker::check_model(m);
  } catch (const std::exception& e) {
    throw Error(where + "the ONNX checker refuses the model: " + e.what());
  }
  try {
    return onnx_import::Importer(m, source).run();
  } catch (const Error& e) {
    throw Error(where + e.what());
  }
}

OnnxImport onnx_import_file(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (!ec && int64_t(size) > kOnnxImportMaxBytes)
    throw Error("cannot import " + path + ": the file is " + std::to_string(size >> 20) +
                " MiB, more than the 2 GB an ONNX file can hold without external data");
  return onnx_import_bytes(read_file(path, kOnnxImportMaxBytes, "ONNX model"), path);
}

std::string onnx_import_checkpoint_path(const std::string& project_path) {
  return fs::path(project_path).replace_extension(".safetensors").string();
}

std::string import_onnx(const std::string& onnx_path, const std::string& project_path) {
  OnnxImport im = onnx_import_file(onnx_path);
  Project p;
  p.name = im.name.empty() || im.name == "main_graph" || im.name == "torch_jit"
               ? fs::path(onnx_path).stem().string()
               : im.name;
  p.graph = std::move(im.graph);
  const std::string ck = onnx_import_checkpoint_path(project_path);
  CheckpointMeta meta;
  const auto shapes = p.graph.infer_shapes();
  meta.input_shape = shapes.at(p.graph.inputs().at(0)).shape->str(true);
  const Shape& out = *shapes.at(p.graph.outputs().at(0)).shape;
  if (out.rank() == 1) meta.num_classes = out[0];
  write_checkpoint(ck, im.weights, {}, meta);
  // Training the imported model starts from its weights (a fresh run: new
  // optimizer, epoch 1), so fine-tuning it or a new head on it just works.
  p.training.init_weights = fs::path(ck).filename().string();
  try {
    save_project(p, project_path);
  } catch (...) {
    std::error_code ec;
    fs::remove(ck, ec);
    throw;
  }
  return ck;
}

}  // namespace dc
