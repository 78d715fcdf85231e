#pragma once
// What a layer's ONNX writer gets: a builder that appends nodes, constants
// and initializers to the graph being written, and the layer's context (its
// plan step: attributes with defaults, shapes; input value names, weights).
#include <deepcanvas/attrs.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/onnx.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/tensor.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace dc::onnx_export {

class Builder {
 public:
  Builder(onnx::GraphProto& g, int opset, int64_t batch) : g_(g), opset_(opset), batch_(batch) {}
  int opset() const { return opset_; }
  int64_t batch() const { return batch_; }  // 0: dynamic
  onnx::GraphProto& graph() { return g_; }

  // A node; `name` is also the base of any generated names.
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in,
                        const std::string& out, const std::string& name);
  // A node with several outputs ("" for an optional one left out).
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in,
                        const std::vector<std::string>& outs, const std::string& name);
  // A value name not used yet, derived from base ("conv1/pad").
  std::string fresh(const std::string& base);
  // A float32 initializer holding t, with `dims` (t's shape when empty).
  std::string weight(const std::string& name, const Tensor& t, std::vector<int64_t> dims = {});
  std::string ints(const std::string& name, const std::vector<int64_t>& v);  // int64 1-D
  std::string scalar(const std::string& name, float v);                      // float32 0-D
  std::string index(const std::string& name, int64_t v);                     // int64 0-D

  // Weights the caller writes itself (the quantized export's int8 weights
  // behind a DequantizeLinear): weight(name, ...) returns the value named
  // here instead of adding a float initializer.
  std::map<std::string, std::string> provided;

 private:
  onnx::GraphProto& g_;
  int opset_;
  int64_t batch_;
  std::map<std::string, int> used_;
};

void set_attr(onnx::NodeProto& n, const std::string& name, int64_t v);
void set_attr(onnx::NodeProto& n, const std::string& name, float v);
void set_attr(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v);
void set_attr(onnx::NodeProto& n, const std::string& name, const std::string& v);
void set_attr(onnx::NodeProto& n, const std::string& name, const std::vector<std::string>& v);

struct OnnxLayer {
  const PlanStep& step;                 // the plan's step: name, type
  const Attrs& attrs;                   // the step's, with the descriptor's defaults filled in
  std::vector<std::string> inputs;      // the producers' value names, in port order
  const std::vector<Shape>& in_shapes;  // per sample
  const Shape& out_shape;               // per sample
  std::string output;                   // the value the writer must produce (the node's name)
  const std::map<std::string, Tensor>& weights;  // "conv1.weight" -> tensor

  // This layer's parameter `p` ("weight"); throws when the plan lacks it.
  const Tensor& param(const std::string& p) const;
  bool has_param(const std::string& p) const;
  std::string param_name(const std::string& p) const { return step.name + "." + p; }
};

struct Writer {
  // "" when the layer can be written at this opset with these attributes
  // (the step's, defaults filled in), else why not (shown as "Type 'name': why").
  std::function<std::string(const PlanStep&, int opset)> unsupported;
  std::function<void(Builder&, const OnnxLayer&)> write;
};

// Layer type -> its writer; registered beside each family's code.
const std::map<std::string, Writer>& writers();
void add_writer(std::map<std::string, Writer>& w, const std::string& type, Writer writer);
// The graph of `steps` with `weights` (opset, IR version, inputs, one
// writer per layer, the output), not yet checked. before_layer may rewrite
// a layer's input names or set Builder::provided before its writer runs.
onnx::ModelProto build_model(const std::vector<PlanStep>& steps,
                             const std::map<std::string, Tensor>& weights,
                             const OnnxExportOptions& o,
                             const std::function<void(Builder&, OnnxLayer&)>& before_layer = {});
// Runs the ONNX checker (its complaint is a bug of ours) and serializes.
std::string checked_bytes(const onnx::ModelProto& model);

void register_basic_writers(std::map<std::string, Writer>& w);      // onnx_layers.cpp
void register_recurrent_writers(std::map<std::string, Writer>& w);  // onnx_recurrent.cpp
void register_attention_writers(std::map<std::string, Writer>& w);  // onnx_attention.cpp

}  // namespace dc::onnx_export
