// ONNX forms of the feed-forward layers: convolution, pooling, dense,
// normalisation (inference form), activations, merges, shape layers,
// dropout (identity), embedding and the sequence helpers. Each writes
// exactly what the engine's forward computes in inference mode.
#include <deepcanvas/layer.h>

#include <cmath>

#include "onnx_builder.h"

namespace dc::onnx_export {

namespace {

// A writer that always works and maps to one ONNX op with no attributes.
Writer plain(const char* op) {
  return {nullptr,
          [op](Builder& b, const OnnxLayer& l) { b.node(op, l.inputs, l.output, l.step.name); }};
}

void write_conv(Builder& b, const OnnxLayer& l) {
  const Attrs& a = l.attrs;
  const Shape& in = l.in_shapes[0];
  const auto& k = a.ints("kernel");
  const auto& s = a.ints("stride");
  const auto& d = a.ints("dilation");
  int64_t pt = 0, pb = 0, pl = 0, pr = 0;
  if (a.s("padding_mode") == "same") {
    same_padding(in[1], k[0], s[0], d[0], pt, pb, "height");
    same_padding(in[2], k[1], s[1], d[1], pl, pr, "width");
  } else if (a.s("padding_mode") == "explicit") {
    pt = pb = a.ints("padding")[0];
    pl = pr = a.ints("padding")[1];
  }
  std::vector<std::string> inputs = {l.inputs[0],
                                     b.weight(l.param_name("weight"), l.param("weight"))};
  if (l.has_param("bias")) inputs.push_back(b.weight(l.param_name("bias"), l.param("bias")));
  auto& n = b.node("Conv", inputs, l.output, l.step.name);
  set_attr(n, "kernel_shape", k);
  set_attr(n, "strides", s);
  set_attr(n, "dilations", d);
  set_attr(n, "pads", std::vector<int64_t>{pt, pl, pb, pr});
  set_attr(n, "group", a.i("groups"));
}

void write_pool(Builder& b, const OnnxLayer& l, const char* op) {
  const auto& p = l.attrs.ints("padding");
  std::string x = l.inputs[0];
  const bool average = std::string(op) == "AveragePool";
  // The engine's average divides by the whole window, padding included
  // (count_include_pad). Some runtimes (OpenCV 4.6) ignore that attribute,
  // so padded average pooling is written as an explicit zero Pad first,
  // which means the same everywhere.
  if (average && (p[0] > 0 || p[1] > 0)) {
    const std::vector<int64_t> pads = {0, 0, p[0], p[1], 0, 0, p[0], p[1]};
    x = b.fresh(l.step.name + "/padded");
    if (b.opset() >= 11) {
      b.node("Pad", {l.inputs[0], b.ints(l.step.name + "/pads", pads)}, x, l.step.name + "/pad");
    } else {  // opset 10: pads were an attribute
      auto& n = b.node("Pad", {l.inputs[0]}, x, l.step.name + "/pad");
      set_attr(n, "pads", pads);
    }
  }
  auto& n = b.node(op, {x}, l.output, l.step.name);
  set_attr(n, "kernel_shape", l.attrs.ints("kernel"));
  set_attr(n, "strides", l.attrs.ints("stride"));
  if (!average) set_attr(n, "pads", std::vector<int64_t>{p[0], p[1], p[0], p[1]});
  if (!average && l.attrs.b("ceil_mode")) set_attr(n, "ceil_mode", int64_t(1));
}

void write_global_pool(Builder& b, const OnnxLayer& l) {
  // ONNX keeps the 1×1 spatial dimensions the engine drops.
  const std::string pooled = b.fresh(l.step.name + "/pooled");
  b.node("GlobalAveragePool", l.inputs, pooled, l.step.name);
  auto& f = b.node("Flatten", {pooled}, l.output, l.step.name + "/flatten");
  set_attr(f, "axis", int64_t(1));
}

void write_dense(Builder& b, const OnnxLayer& l) {
  std::vector<std::string> inputs = {l.inputs[0],
                                     b.weight(l.param_name("weight"), l.param("weight"))};
  if (l.has_param("bias"))
    inputs.push_back(b.weight(l.param_name("bias"), l.param("bias")));
  else if (b.opset() < 11)  // Gemm's C became optional in opset 11
    inputs.push_back(b.weight(l.param_name("bias"), Tensor(Shape{l.out_shape[0]})));
  auto& n = b.node("Gemm", inputs, l.output, l.step.name);
  set_attr(n, "transB", int64_t(1));  // weights are [out, in], as PyTorch's
}

// Dense applied to every step of [N, T, F]: MatMul with the transposed
// weight, plus the bias.
void write_time_distributed(Builder& b, const OnnxLayer& l) {
  const std::string wt = b.fresh(l.param_name("weight") + "/T");
  auto& t = b.node("Transpose", {b.weight(l.param_name("weight"), l.param("weight"))}, wt,
                   l.step.name + "/transpose");
  set_attr(t, "perm", std::vector<int64_t>{1, 0});
  if (!l.has_param("bias")) {
    b.node("MatMul", {l.inputs[0], wt}, l.output, l.step.name);
    return;
  }
  const std::string mm = b.fresh(l.step.name + "/matmul");
  b.node("MatMul", {l.inputs[0], wt}, mm, l.step.name + "/matmul");
  b.node("Add", {mm, b.weight(l.param_name("bias"), l.param("bias"))}, l.output, l.step.name);
}

void write_batch_norm(Builder& b, const OnnxLayer& l) {
  std::vector<std::string> inputs = {l.inputs[0]};
  for (const char* p : {"weight", "bias", "running_mean", "running_var"})
    inputs.push_back(b.weight(l.param_name(p), l.param(p)));
  auto& n = b.node("BatchNormalization", inputs, l.output, l.step.name);
  set_attr(n, "epsilon", float(l.attrs.f("eps")));
}

// LayerNormalization from opset 17, which needs a scale (and takes a bias):
// ones and zeros when the layer is not affine. Before 17 the same
// arithmetic as single ops, as torch.onnx writes it: (x − mean) /
// sqrt(mean((x − mean)²) + eps) over the last axis, then · weight + bias.
void write_layer_norm(Builder& b, const OnnxLayer& l) {
  const std::string& name = l.step.name;
  const int64_t D = l.in_shapes[0][l.in_shapes[0].rank() - 1];
  const bool affine = l.attrs.b("affine");
  auto param = [&](const char* p, float fill) {
    if (affine) return b.weight(l.param_name(p), l.param(p));
    Tensor t(Shape{D});
    t.fill(fill);
    return b.weight(name + "/" + p, t);
  };
  const float eps = float(l.attrs.f("eps"));
  if (b.opset() >= 17) {
    auto& n = b.node("LayerNormalization", {l.inputs[0], param("weight", 1.f), param("bias", 0.f)},
                     l.output, name);
    set_attr(n, "axis", int64_t(-1));
    set_attr(n, "epsilon", eps);
    return;
  }
  auto value = [&](const char* what) { return b.fresh(name + "/" + what); };
  auto reduce_mean = [&](const std::string& x, const std::string& out, const char* what) {
    auto& n = b.node("ReduceMean", {x}, out, name + "/" + what);
    // The last axis counted from the front (OpenCV 4.6 refuses -1 here).
    set_attr(n, "axes", std::vector<int64_t>{int64_t(l.in_shapes[0].rank())});
    set_attr(n, "keepdims", int64_t(1));
  };
  const std::string mean = value("mean"), d = value("centred"), sq = value("squared"),
                    var = value("variance"), ve = value("variance_eps"), sd = value("std");
  reduce_mean(l.inputs[0], mean, "mean");
  b.node("Sub", {l.inputs[0], mean}, d, name + "/sub");
  b.node("Mul", {d, d}, sq, name + "/square");
  reduce_mean(sq, var, "variance");
  b.node("Add", {var, b.scalar(name + "/eps", eps)}, ve, name + "/add_eps");
  b.node("Sqrt", {ve}, sd, name + "/sqrt");
  if (!affine) {
    b.node("Div", {d, sd}, l.output, name);
    return;
  }
  const std::string normed = value("normalised"), scaled = value("scaled");
  b.node("Div", {d, sd}, normed, name + "/div");
  b.node("Mul", {normed, param("weight", 1.f)}, scaled, name + "/scale");
  b.node("Add", {scaled, param("bias", 0.f)}, l.output, name);
}

// GELU(x) = x * Phi(x) = 0.5 * x * (1 + erf(x / sqrt 2)), the exact form the
// engine computes; ONNX has a Gelu op only from opset 20.
void write_gelu(Builder& b, const OnnxLayer& l) {
  const std::string& x = l.inputs[0];
  const std::string& name = l.step.name;
  auto value = [&](const char* what) { return b.fresh(name + "/" + what); };
  const std::string scaled = value("scaled"), erf = value("erf"), plus1 = value("plus1"),
                    half = value("half");
  b.node("Div", {x, b.scalar(name + "/sqrt2", float(std::sqrt(2.0)))}, scaled, name + "/div");
  b.node("Erf", {scaled}, erf, name + "/erf");
  b.node("Add", {erf, b.scalar(name + "/one", 1.f)}, plus1, name + "/add");
  b.node("Mul", {x, b.scalar(name + "/half", 0.5f)}, half, name + "/mul_half");
  b.node("Mul", {half, plus1}, l.output, name);
}

// ReLU6 is Clip(0, 6); its bounds are inputs from opset 11, attributes before.
void write_relu6(Builder& b, const OnnxLayer& l) {
  if (b.opset() >= 11) {
    b.node("Clip",
           {l.inputs[0], b.scalar(l.step.name + "/min", 0.f), b.scalar(l.step.name + "/max", 6.f)},
           l.output, l.step.name);
    return;
  }
  auto& n = b.node("Clip", l.inputs, l.output, l.step.name);
  set_attr(n, "min", 0.f);
  set_attr(n, "max", 6.f);
}

// SiLU as torch.onnx writes it: x · Sigmoid(x) (no SiLU op in ONNX).
void write_silu(Builder& b, const OnnxLayer& l) {
  const std::string sig = b.fresh(l.step.name + "/sigmoid");
  b.node("Sigmoid", l.inputs, sig, l.step.name + "/sigmoid");
  b.node("Mul", {l.inputs[0], sig}, l.output, l.step.name);
}

// PyTorch's Hardsigmoid, ReLU6(x + 3)/6, is ONNX's HardSigmoid with
// alpha 1/6 (ONNX's default is Keras's 0.2).
onnx::NodeProto& hard_sigmoid(Builder& b, const std::string& x, const std::string& out,
                              const std::string& name) {
  auto& n = b.node("HardSigmoid", {x}, out, name);
  set_attr(n, "alpha", 1.f / 6.f);
  set_attr(n, "beta", 0.5f);
  return n;
}

// HardSwish is an op from opset 14; before, x · HardSigmoid(x), as
// torch.onnx writes it.
void write_hard_swish(Builder& b, const OnnxLayer& l) {
  if (b.opset() >= 14) {
    b.node("HardSwish", l.inputs, l.output, l.step.name);
    return;
  }
  const std::string gate = b.fresh(l.step.name + "/hardsigmoid");
  hard_sigmoid(b, l.inputs[0], gate, l.step.name + "/hardsigmoid");
  b.node("Mul", {l.inputs[0], gate}, l.output, l.step.name);
}

// The gate reshaped to [N, C, 1, ...] (a Conv's [N, C, 1, 1] already is)
// and multiplied with broadcasting.
void write_channel_scale(Builder& b, const OnnxLayer& l) {
  const Shape& x = l.in_shapes[0];
  std::string gate = l.inputs[1];
  if (l.in_shapes[1].rank() != x.rank()) {
    std::vector<int64_t> dims = {0, x[0]};  // 0: the batch, copied
    dims.resize(x.rank() + 1, 1);
    gate = b.fresh(l.step.name + "/gate");
    b.node("Reshape", {l.inputs[1], b.ints(l.step.name + "/gate_shape", dims)}, gate,
           l.step.name + "/gate");
  }
  b.node("Mul", {l.inputs[0], gate}, l.output, l.step.name);
}

// torchvision's channel_shuffle as torch.onnx writes it: Reshape to
// [N, groups, C/groups, rest], swap the two, Reshape back.
void write_channel_shuffle(Builder& b, const OnnxLayer& l) {
  const Shape& x = l.in_shapes[0];
  const int64_t g = l.attrs.i("groups");
  std::vector<int64_t> split = {0, g, x[0] / g}, back = {0};
  for (size_t i = 1; i < x.rank(); ++i) split.push_back(x[i]);
  for (size_t i = 0; i < x.rank(); ++i) back.push_back(x[i]);
  std::vector<int64_t> perm = {0, 2, 1};
  for (size_t i = 1; i < x.rank(); ++i) perm.push_back(int64_t(i) + 2);
  const std::string& name = l.step.name;
  const std::string grouped = b.fresh(name + "/grouped"), swapped = b.fresh(name + "/swapped");
  b.node("Reshape", {l.inputs[0], b.ints(name + "/group_shape", split)}, grouped, name + "/group");
  auto& t = b.node("Transpose", {grouped}, swapped, name + "/transpose");
  set_attr(t, "perm", perm);
  b.node("Reshape", {swapped, b.ints(name + "/shape", back)}, l.output, name);
}

// Slice along axis 1 (its bounds are inputs from opset 10, the lowest
// exported).
void write_channel_slice(Builder& b, const OnnxLayer& l) {
  const int64_t start = l.attrs.i("start"), end = start + l.attrs.i("count");
  const std::string& name = l.step.name;
  b.node("Slice",
         {l.inputs[0], b.ints(name + "/starts", {start}), b.ints(name + "/ends", {end}),
          b.ints(name + "/axes", {1})},
         l.output, name);
}

void write_softmax(Builder& b, const OnnxLayer& l) {
  auto& n = b.node("Softmax", l.inputs, l.output, l.step.name);
  // The last dimension. Before opset 13 Softmax works on the input folded to
  // 2-D at `axis`, which for the last axis is the same thing.
  set_attr(n, "axis", int64_t(l.in_shapes[0].rank()));
}

void write_concat(Builder& b, const OnnxLayer& l) {
  auto& n = b.node("Concat", l.inputs, l.output, l.step.name);
  set_attr(n, "axis", l.attrs.i("axis") + 1);  // the engine's axes are per sample
}

void write_flatten(Builder& b, const OnnxLayer& l) {
  auto& n = b.node("Flatten", l.inputs, l.output, l.step.name);
  set_attr(n, "axis", int64_t(1));
}

void write_reshape(Builder& b, const OnnxLayer& l) {
  std::vector<int64_t> dims = {0};  // 0: the batch, copied from the input
  for (int64_t d : l.out_shape.dims()) dims.push_back(d);
  b.node("Reshape", {l.inputs[0], b.ints(l.step.name + "/shape", dims)}, l.output, l.step.name);
}

void write_embedding(Builder& b, const OnnxLayer& l) {
  // Token ids arrive as float values (the engine's single input type).
  const std::string ids = b.fresh(l.step.name + "/ids");
  auto& c = b.node("Cast", l.inputs, ids, l.step.name + "/cast");
  set_attr(c, "to", int64_t(onnx::TensorProto::INT64));
  b.node("Gather", {b.weight(l.param_name("weight"), l.param("weight")), ids}, l.output,
         l.step.name);
}

void write_last_step(Builder& b, const OnnxLayer& l) {
  // A non-negative index: OpenCV's importer fails on a negative one.
  const int64_t steps = l.in_shapes[0][0];
  int64_t i = l.attrs.i("index");
  if (i < 0) i += steps;
  // A 0-D index drops the step axis: [N, T, F] -> [N, F].
  auto& n =
      b.node("Gather", {l.inputs[0], b.index(l.step.name + "/index", i)}, l.output, l.step.name);
  set_attr(n, "axis", int64_t(1));
}

}  // namespace

void register_basic_writers(std::map<std::string, Writer>& w) {
  add_writer(w, "Conv2D", {nullptr, write_conv});
  add_writer(w, "MaxPool2D",
             {nullptr, [](Builder& b, const OnnxLayer& l) { write_pool(b, l, "MaxPool"); }});
  add_writer(w, "AvgPool2D",
             {nullptr, [](Builder& b, const OnnxLayer& l) { write_pool(b, l, "AveragePool"); }});
  add_writer(w, "GlobalAvgPool2D", {nullptr, write_global_pool});
  add_writer(w, "Dense", {nullptr, write_dense});
  add_writer(w, "TimeDistributedDense", {nullptr, write_time_distributed});
  add_writer(w, "BatchNorm1D", {nullptr, write_batch_norm});
  add_writer(w, "BatchNorm2D", {nullptr, write_batch_norm});
  add_writer(w, "LayerNorm", {nullptr, write_layer_norm});
  add_writer(w, "ReLU", plain("Relu"));
  add_writer(w, "ReLU6", {nullptr, write_relu6});
  add_writer(w, "Sigmoid", plain("Sigmoid"));
  add_writer(w, "Tanh", plain("Tanh"));
  add_writer(w, "LeakyReLU", {nullptr, [](Builder& b, const OnnxLayer& l) {
                                auto& n = b.node("LeakyRelu", l.inputs, l.output, l.step.name);
                                set_attr(n, "alpha", float(l.attrs.f("slope")));
                              }});
  add_writer(w, "GELU", {nullptr, write_gelu});
  add_writer(w, "Softmax", {nullptr, write_softmax});
  add_writer(w, "SiLU", {nullptr, write_silu});
  add_writer(w, "HardSwish", {nullptr, write_hard_swish});
  add_writer(w, "HardSigmoid", {nullptr, [](Builder& b, const OnnxLayer& l) {
                                  hard_sigmoid(b, l.inputs[0], l.output, l.step.name);
                                }});
  add_writer(w, "ChannelScale", {nullptr, write_channel_scale});
  add_writer(w, "ChannelShuffle", {nullptr, write_channel_shuffle});
  add_writer(w, "ChannelSlice", {nullptr, write_channel_slice});
  add_writer(w, "Add", plain("Sum"));
  add_writer(w, "Concat", {nullptr, write_concat});
  add_writer(w, "Flatten", {nullptr, write_flatten});
  add_writer(w, "Reshape", {nullptr, write_reshape});
  add_writer(w, "Dropout", plain("Identity"));  // inference: dropout does nothing
  add_writer(w, "Embedding", {nullptr, write_embedding});
  add_writer(w, "LastStep", {nullptr, write_last_step});
}

}  // namespace dc::onnx_export
