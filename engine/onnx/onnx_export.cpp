// The graph walk of ONNX export: inputs, one writer per layer (registered by
// type, beside each family's code), outputs, then the ONNX library's checker
// before anything is written.
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/onnx.h>

#include <cstring>

#include <onnx/checker.h>

#include "onnx_builder.h"

namespace dc {

namespace onnx_export {

onnx::NodeProto& Builder::node(const std::string& op, const std::vector<std::string>& in,
                               const std::string& out, const std::string& name) {
  onnx::NodeProto& n = *g_.add_node();
  n.set_op_type(op);
  n.set_name(fresh(name));
  for (const auto& i : in) n.add_input(i);
  n.add_output(out);
  return n;
}

onnx::NodeProto& Builder::node(const std::string& op, const std::vector<std::string>& in,
                               const std::vector<std::string>& outs, const std::string& name) {
  onnx::NodeProto& n = node(op, in, outs.front(), name);
  for (size_t i = 1; i < outs.size(); ++i) n.add_output(outs[i]);
  return n;
}

std::string Builder::fresh(const std::string& base) {
  int& k = used_[base];
  return k++ == 0 ? base : base + "_" + std::to_string(k - 1);
}

std::string Builder::weight(const std::string& name, const Tensor& t, std::vector<int64_t> dims) {
  if (auto it = provided.find(name); it != provided.end()) return it->second;
  if (dims.empty()) dims = t.shape().dims();
  onnx::TensorProto& p = *g_.add_initializer();
  p.set_name(fresh(name));
  p.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) p.add_dims(d);
  p.set_raw_data(std::string(static_cast<const char*>(t.raw()), t.bytes()));
  return p.name();
}

std::string Builder::ints(const std::string& name, const std::vector<int64_t>& v) {
  onnx::TensorProto& p = *g_.add_initializer();
  p.set_name(fresh(name));
  p.set_data_type(onnx::TensorProto::INT64);
  p.add_dims(int64_t(v.size()));
  for (int64_t x : v) p.add_int64_data(x);
  return p.name();
}

std::string Builder::scalar(const std::string& name, float v) {
  onnx::TensorProto& p = *g_.add_initializer();
  p.set_name(fresh(name));
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_float_data(v);
  return p.name();
}

std::string Builder::index(const std::string& name, int64_t v) {
  onnx::TensorProto& p = *g_.add_initializer();
  p.set_name(fresh(name));
  p.set_data_type(onnx::TensorProto::INT64);
  p.add_int64_data(v);
  return p.name();
}

void set_attr(onnx::NodeProto& n, const std::string& name, int64_t v) {
  onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
}

void set_attr(onnx::NodeProto& n, const std::string& name, float v) {
  onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
}

void set_attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
}

void set_attr(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(v);
}

void set_attr(onnx::NodeProto& n, const std::string& name, const std::vector<std::string>& v) {
  onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRINGS);
  for (const auto& x : v) a.add_strings(x);
}

const Tensor& OnnxLayer::param(const std::string& p) const {
  auto it = weights.find(param_name(p));
  if (it == weights.end())
    throw Error("ONNX export: the weights have no tensor '" + param_name(p) + "'");
  return it->second;
}

bool OnnxLayer::has_param(const std::string& p) const {
  return weights.count(param_name(p)) != 0;
}

void add_writer(std::map<std::string, Writer>& w, const std::string& type, Writer writer) {
  w[type] = std::move(writer);
}

const std::map<std::string, Writer>& writers() {
  static const std::map<std::string, Writer> table = [] {
    std::map<std::string, Writer> w;
    register_basic_writers(w);
    register_recurrent_writers(w);
    register_attention_writers(w);
    return w;
  }();
  return table;
}

namespace {

void set_shape(onnx::ValueInfoProto& v, const std::string& name, const Shape& per_sample,
               int64_t batch) {
  v.set_name(name);
  auto& t = *v.mutable_type()->mutable_tensor_type();
  t.set_elem_type(onnx::TensorProto::FLOAT);
  auto& s = *t.mutable_shape();
  if (batch > 0)
    s.add_dim()->set_dim_value(batch);
  else
    s.add_dim()->set_dim_param("N");  // any batch size
  for (int64_t d : per_sample.dims()) s.add_dim()->set_dim_value(d);
}

// The IR version each opset was released with: older runtimes refuse a
// model that claims a newer IR than they know.
int64_t ir_version_for(int opset) {
  if (opset <= 10) return 5;
  if (opset == 11) return 6;
  if (opset <= 14) return 7;
  return 8;
}

// Every step that cannot be written at `opset`, after the opset itself.
std::vector<std::string> unsupported(const std::vector<PlanStep>& steps, int opset) {
  std::vector<std::string> out;
  if (opset < kOnnxMinOpset || opset > kOnnxMaxOpset)
    out.push_back("opset " + std::to_string(opset) + " is not supported (use " +
                  std::to_string(kOnnxMinOpset) + " to " + std::to_string(kOnnxMaxOpset) + ")");
  for (const PlanStep& s : steps) {
    if (s.is_input) continue;
    auto it = writers().find(s.type);
    std::string why = it == writers().end()
                          ? "has no ONNX form in DeepCanvas yet"
                          : (it->second.unsupported ? it->second.unsupported(s, opset) : "");
    if (!why.empty()) out.push_back(s.type + " '" + s.name + "': " + why);
  }
  return out;
}

}  // namespace

}  // namespace onnx_export

std::vector<std::string> onnx_unsupported(const Graph& g, int opset) {
  return onnx_export::unsupported(lower_graph(g), opset);
}

namespace onnx_export {

onnx::ModelProto build_model(const std::vector<PlanStep>& steps,
                             const std::map<std::string, Tensor>& weights,
                             const OnnxExportOptions& o,
                             const std::function<void(Builder&, OnnxLayer&)>& before_layer) {
  if (auto bad = unsupported(steps, o.opset); !bad.empty()) {
    std::string m = "cannot export to ONNX at opset " + std::to_string(o.opset) + ":";
    for (const auto& b : bad) m += "\n  " + b;
    throw Error(m);
  }
  onnx::ModelProto model;
  model.set_ir_version(ir_version_for(o.opset));
  model.set_producer_name("DeepCanvas");
  auto* op = model.add_opset_import();
  op->set_domain("");
  op->set_version(o.opset);
  onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name(o.model_name.empty() ? "deepcanvas" : o.model_name);
  if (o.batch < 0) throw Error("ONNX export: the batch must be positive (or 0 for any batch)");
  Builder b(graph, o.opset, o.batch);
  // Layer names are the value names; reserve them so generated names
  // ("relu1_0") never take one.
  for (const PlanStep& s : steps) b.fresh(s.name);

  for (const PlanStep& s : steps) {
    if (s.is_input) {
      set_shape(*graph.add_input(), s.name, s.out_shape, o.batch);
      continue;
    }
    OnnxLayer layer{s, s.attrs, {}, s.in_shapes, s.out_shape, s.name, weights};
    for (int i : s.inputs) layer.inputs.push_back(steps[size_t(i)].name);
    b.provided.clear();
    if (before_layer) before_layer(b, layer);
    writers().at(s.type).write(b, layer);
  }
  // The plan ends with the network's one output.
  set_shape(*graph.add_output(), steps.back().name, steps.back().out_shape, o.batch);
  return model;
}

std::string checked_bytes(const onnx::ModelProto& model) {
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw Error(std::string("ONNX export produced a model the ONNX checker refuses (a bug in "
                            "DeepCanvas; please report it): ") +
                e.what());
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw Error("ONNX export: the model could not be encoded");
  return bytes;
}

}  // namespace onnx_export

// The plan's steps carry everything written (order, port order, shapes,
// attributes with defaults); g is the graph it was built from.
std::string onnx_model_bytes(const Graph& /*g*/, const Plan& plan, const OnnxExportOptions& o) {
  std::map<std::string, Tensor> weights;
  for (auto& [name, t] : plan.state()) weights.emplace(name, t);
  return onnx_export::checked_bytes(onnx_export::build_model(plan.steps(), weights, o));
}

void export_onnx(const std::string& path, const Graph& g, const Plan& plan,
                 const OnnxExportOptions& o) {
  write_file_atomic(path, onnx_model_bytes(g, plan, o));
}

}  // namespace dc
