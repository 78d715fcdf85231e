// fp16 and QDQ int8 ONNX models, and the preprocessing a device's model can
// carry: the fp32 writers produce the graph, the quantized ops get their
// QDQ pairs from a hook before their writer runs, and the input and output
// are rewritten afterwards.
#include <deepcanvas/errors.h>
#include <deepcanvas/onnx_quantize.h>

#include <cstring>

#include "onnx_builder.h"

namespace dc {

namespace {

using onnx_export::Builder;
using onnx_export::OnnxLayer;
using onnx_export::set_attr;

// IEEE binary16 bits of f, rounded half to even as numpy and onnxruntime
// convert. Written out rather than through _Float16, which clang 14 (the
// sanitizer builds) does not support on x86.
uint16_t half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u)  // inf stays inf; NaN stays a (quiet) NaN
    return uint16_t(sign | 0x7C00u | (abs > 0x7F800000u ? 0x0200u | ((abs >> 13) & 0x3FFu) : 0));
  if (abs >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // rounds to above 65504: inf
  if (abs < 0x38800000u) {
    // A subnormal half (or zero): the value in units of 2^-24, rounded.
    if (abs < 0x33000000u) return uint16_t(sign);  // below half of 2^-24: zero
    const uint32_t exp = abs >> 23, mant = (abs & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126 - exp;  // 14 + (113 - exp) - 1 ... in [14, 24]
    uint32_t h = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return uint16_t(sign | h);
  }
  // A normal half: rebias the exponent, keep 10 mantissa bits, round the
  // 13 dropped ones to even (a carry may step into the exponent, correctly).
  uint32_t h = ((abs - 0x38000000u) >> 13);
  const uint32_t rem = abs & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return uint16_t(sign | h);
}

// Every float initializer as float16.
void initializers_to_fp16(onnx::GraphProto& g) {
  for (onnx::TensorProto& t : *g.mutable_initializer()) {
    if (t.data_type() != onnx::TensorProto::FLOAT) continue;
    std::vector<float> v;
    if (t.has_raw_data()) {
      v.resize(t.raw_data().size() / 4);
      std::memcpy(v.data(), t.raw_data().data(), v.size() * 4);
    } else {
      v.assign(t.float_data().begin(), t.float_data().end());
    }
    std::string raw(v.size() * 2, '\0');
    for (size_t i = 0; i < v.size(); ++i) {
      const uint16_t h = half_bits(v[i]);
      std::memcpy(&raw[i * 2], &h, 2);
    }
    t.clear_float_data();
    t.set_data_type(onnx::TensorProto::FLOAT16);
    t.set_raw_data(raw);
  }
}

// Replaces every use of value `from` by `to` in the nodes from `first` on.
void rename_uses(onnx::GraphProto& g, const std::string& from, const std::string& to, int first) {
  for (int i = first; i < g.node_size(); ++i)
    for (std::string& in : *g.mutable_node(i)->mutable_input())
      if (in == from) in = to;
}

// Moves the nodes added after index `old_count` to the front (they read
// the graph's input, so they must come first in ONNX's topological order).
void move_to_front(onnx::GraphProto& g, int old_count) {
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = old_count; i < g.node_size(); ++i) *nodes.Add() = g.node(i);
  for (int i = 0; i < old_count; ++i) *nodes.Add() = g.node(i);
  g.mutable_node()->Swap(&nodes);
}

onnx::NodeProto& add_node(onnx::GraphProto& g, const std::string& op,
                          const std::vector<std::string>& in, const std::string& out) {
  onnx::NodeProto& n = *g.add_node();
  n.set_op_type(op);
  n.set_name(out);
  for (const auto& i : in) n.add_input(i);
  n.add_output(out);
  return n;
}

std::string float_init(onnx::GraphProto& g, const std::string& name, const std::vector<float>& v,
                       const std::vector<int64_t>& dims) {
  onnx::TensorProto& t = *g.add_initializer();
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  for (float x : v) t.add_float_data(x);
  return name;
}

// Rewrites the input and output around the graph the writers made: the
// preprocessing (uint8 in), and for fp16 the Casts that keep float32 I/O.
void rewrite_io(onnx::ModelProto& m, const std::vector<PlanStep>& steps, bool fp16,
                const OnnxPreprocessing& pre) {
  onnx::GraphProto& g = *m.mutable_graph();
  if (fp16) initializers_to_fp16(g);
  const PlanStep& input = steps.front();
  const std::string x = input.name;
  const int old_count = g.node_size();
  std::string cur = x;
  if (pre.enabled) {
    if (!input.is_input || input.out_shape.rank() != 3)
      throw Error("--include-preprocessing needs an image input (channels×height×width); " +
                  input.name + " is " + input.out_shape.str(true));
    const int64_t C = input.out_shape[0];
    auto& type = *g.mutable_input(0)->mutable_type()->mutable_tensor_type();
    type.set_elem_type(onnx::TensorProto::UINT8);
    if (pre.nhwc) {
      auto& s = *type.mutable_shape();
      const auto c = s.dim(1);
      for (int i = 1; i < 3; ++i) *s.mutable_dim(i) = s.dim(i + 1);
      *s.mutable_dim(3) = c;
      auto& t = add_node(g, "Transpose", {cur}, x + "/nchw");
      set_attr(t, "perm", std::vector<int64_t>{0, 3, 1, 2});
      cur = x + "/nchw";
    }
    auto& cast = add_node(g, "Cast", {cur}, x + "/float");
    set_attr(cast, "to", int64_t(onnx::TensorProto::FLOAT));
    // The dataset's arithmetic (normalize_pixel.h): p / 255, then
    // (v - mean) * (1 / stddev), or (v - mean_c) / std_c per channel.
    add_node(g, "Div", {x + "/float", float_init(g, x + "/255", {255.f}, {})}, x + "/unit");
    if (!pre.channel_mean.empty()) {
      if (int64_t(pre.channel_mean.size()) != C || int64_t(pre.channel_std.size()) != C)
        throw Error("the per-channel normalisation has " + std::to_string(pre.channel_mean.size()) +
                    " values for " + std::to_string(C) + " channels");
      add_node(g, "Sub", {x + "/unit", float_init(g, x + "/mean", pre.channel_mean, {C, 1, 1})},
               x + "/centered");
      add_node(g, "Div", {x + "/centered", float_init(g, x + "/std", pre.channel_std, {C, 1, 1})},
               x + "/normalized");
    } else {
      const float inv = 1.0f / (pre.stddev > 0 ? pre.stddev : 1.0f);
      add_node(g, "Sub", {x + "/unit", float_init(g, x + "/mean", {pre.mean}, {})},
               x + "/centered");
      add_node(g, "Mul", {x + "/centered", float_init(g, x + "/inv_std", {inv}, {})},
               x + "/normalized");
    }
    cur = x + "/normalized";
  }
  if (fp16) {
    auto& c = add_node(g, "Cast", {cur}, x + "/fp16");
    set_attr(c, "to", int64_t(onnx::TensorProto::FLOAT16));
    cur = x + "/fp16";
  }
  if (cur != x) {
    rename_uses(g, x, cur, 0);
    // The added nodes' own first input is the graph input again.
    for (int i = old_count; i < g.node_size(); ++i) {
      onnx::NodeProto& n = *g.mutable_node(i);
      if (i == old_count) n.set_input(0, x);
    }
    move_to_front(g, old_count);
  }
  if (fp16) {
    const std::string y = steps.back().name, y16 = y + "/fp16";
    for (onnx::NodeProto& n : *g.mutable_node())
      for (std::string& o : *n.mutable_output())
        if (o == y) o = y16;
    auto& c = add_node(g, "Cast", {y16}, y);
    set_attr(c, "to", int64_t(onnx::TensorProto::FLOAT));
  }
}

}  // namespace

std::string onnx_float_model_bytes(const std::vector<PlanStep>& steps,
                                   const std::map<std::string, Tensor>& weights,
                                   const OnnxExportOptions& o, bool fp16,
                                   const OnnxPreprocessing& pre) {
  onnx::ModelProto m = onnx_export::build_model(steps, weights, o);
  rewrite_io(m, steps, fp16, pre);
  return onnx_export::checked_bytes(m);
}

std::string onnx_qdq_model_bytes(const QuantizedNetwork& q, const OnnxExportOptions& o,
                                 const OnnxPreprocessing& pre) {
  if (o.opset < kOnnxQdqMinOpset)
    throw Error("an int8 model needs opset " + std::to_string(kOnnxQdqMinOpset) +
                " or later (per-channel DequantizeLinear); asked for " + std::to_string(o.opset));
  const std::vector<PlanStep>& steps = q.net.steps;
  std::map<std::string, const QuantOp*> by_name;
  for (const QuantOp& op : q.ops) by_name[steps[size_t(op.step)].name] = &op;
  auto hook = [&](Builder& b, OnnxLayer& l) {
    auto it = by_name.find(l.step.name);
    if (it == by_name.end()) return;
    const QuantOp& op = *it->second;
    onnx::GraphProto& g = b.graph();
    const std::string& name = l.step.name;
    // The input: int8, zero point 0, the calibrated scale.
    const std::string s = b.fresh(name + "/input_scale"), z = b.fresh(name + "/input_zero_point");
    float_init(g, s, {op.input_scale}, {});
    onnx::TensorProto& zt = *g.add_initializer();
    zt.set_name(z);
    zt.set_data_type(onnx::TensorProto::INT8);
    zt.add_int32_data(0);
    const std::string qx = b.fresh(name + "/input_quantized"), dqx = b.fresh(name + "/input_dq");
    b.node("QuantizeLinear", {l.inputs[0], s, z}, qx, name + "/quantize_input");
    b.node("DequantizeLinear", {qx, s, z}, dqx, name + "/dequantize_input");
    l.inputs[0] = dqx;
    // The weight: int8 per output channel.
    const Tensor& w = l.param("weight");
    const int64_t C = w.dim(0);
    onnx::TensorProto& wq = *g.add_initializer();
    wq.set_name(b.fresh(l.param_name("weight_quantized")));
    wq.set_data_type(onnx::TensorProto::INT8);
    for (int64_t d : w.shape().dims()) wq.add_dims(d);
    wq.set_raw_data(
        std::string(reinterpret_cast<const char*>(op.weight.q.data()), op.weight.q.size()));
    const std::string ws =
        float_init(g, b.fresh(l.param_name("weight_scale")), op.weight.scale, {C});
    onnx::TensorProto& wz = *g.add_initializer();
    wz.set_name(b.fresh(l.param_name("weight_zero_point")));
    wz.set_data_type(onnx::TensorProto::INT8);
    wz.add_dims(C);
    wz.set_raw_data(std::string(size_t(C), '\0'));
    const std::string wdq = b.fresh(l.param_name("weight"));
    auto& dq =
        b.node("DequantizeLinear", {wq.name(), ws, wz.name()}, wdq, name + "/dequantize_weight");
    set_attr(dq, "axis", int64_t(0));
    b.provided[l.param_name("weight")] = wdq;
  };
  onnx::ModelProto m = onnx_export::build_model(steps, q.net.weights, o, hook);
  rewrite_io(m, steps, false, pre);
  return onnx_export::checked_bytes(m);
}

}  // namespace dc
