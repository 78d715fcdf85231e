// The importer's layer ops: Conv, BatchNormalization, LayerNormalization, the activations,
// Softmax, pooling, Gemm/MatMul and Add, each becoming the DeepCanvas layer
// that computes it, with its weights (a zero Pad before a Conv or an
// AveragePool folded into its padding).
#include <deepcanvas/checked.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "onnx_import_internal.h"

namespace dc::onnx_import {

void Importer::op_conv(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  const Const& w = cin(n, 1, "the weight");
  if (w.dims.size() != 4) throw NotSupported{"only 2-D convolution (a 4-D weight) is supported"};
  const auto& v = view_of(x);
  if (v.size() != 3) throw NotSupported{"its input is not channels×height×width"};
  const int64_t group = attr_i(n, "group", 1);
  const std::vector<int64_t> k = {w.dims[2], w.dims[3]};
  const auto strides = attr_ints(n, "strides", {1, 1});
  const auto dil = attr_ints(n, "dilations", {1, 1});
  auto pads = attr_ints(n, "pads", {0, 0, 0, 0});  // top, left, bottom, right
  const std::string auto_pad = attr_s(n, "auto_pad", "NOTSET");
  if (strides.size() != 2 || dil.size() != 2 || pads.size() != 4)
    throw NotSupported{"strides, dilations or pads of the wrong length"};
  std::vector<int64_t> total = pads;
  if (!x.pad.empty())
    for (int s = 0; s < 4; ++s)
      total[size_t(s)] =
          checked_add(total[size_t(s)], x.pad[size_t(s)], "pads with the Pad before");
  Attrs a;
  a.set("filters", w.dims[0]);
  a.set("kernel", k);
  a.set("stride", strides);
  a.set("dilation", dil);
  a.set("groups", group);
  const int64_t H = v[1], W = v[2];
  int64_t st, sb, sl, sr;
  // Also where the model's strides, dilations and kernel are first used: a
  // zero or one near 2^63 is refused here, naming it.
  same_padding(H, k[0], strides[0], dil[0], st, sb, "height");
  same_padding(W, k[1], strides[1], dil[1], sl, sr, "width");
  if (auto_pad == "SAME_UPPER" && x.pad.empty()) {
    a.set("padding_mode", std::string("same"));
  } else if (auto_pad == "VALID" && x.pad.empty()) {
    a.set("padding_mode", std::string("valid"));
  } else if (auto_pad != "NOTSET") {
    throw NotSupported{"auto_pad " + auto_pad + " is not supported"};
  } else if (total[0] == total[2] && total[1] == total[3]) {
    a.set("padding_mode", std::string("explicit"));
    a.set("padding", std::vector<int64_t>{total[0], total[1]});
  } else if (total == std::vector<int64_t>{st, sl, sb, sr}) {
    // TensorFlow's "same" (the extra pixel at the bottom/right), as
    // EfficientNet-Lite and other TF ports write it with ZeroPad2d.
    a.set("padding_mode", std::string("same"));
  } else {
    throw NotSupported{"uneven padding " + dims_str(total) +
                       " (top, left, bottom, right) that is not TensorFlow's 'same' " +
                       dims_str({st, sl, sb, sr})};
  }
  const bool bias = has_in(n, 2);
  a.set("bias", bias);
  std::vector<std::pair<std::string, Tensor>> p = {{"weight", to_tensor(w)}};
  if (bias) {
    const Const& b = cin(n, 2, "the bias");
    if (b.numel() != w.dims[0]) throw NotSupported{"the bias does not have one value per filter"};
    p.push_back({"bias", to_tensor(b, {w.dims[0]})});
  }
  Val base = x;
  base.pad.clear();
  const NodeId src = materialize(base);
  out(n, 0, plain(add("Conv2D", base_name(n, n.input(1), "weight"), a, {src}, std::move(p))));
}

void Importer::op_bn(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  if (attr_i(n, "training_mode", 0) != 0)
    throw NotSupported{"training_mode BatchNormalization (export the model in eval mode)"};
  if (n.output_size() > 1) {
    for (int k = 1; k < n.output_size(); ++k)
      poison(n, k, "its running-statistics outputs are used (export the model in eval mode)");
  }
  const auto& v = view_of(x);
  const std::string type = v.size() == 3 ? "BatchNorm2D" : "BatchNorm1D";
  Attrs a;
  a.set("eps", shortest_decimal(attr_f(n, "epsilon", 1e-5f)));
  std::vector<std::pair<std::string, Tensor>> p;
  const char* names[] = {"weight", "bias", "running_mean", "running_var"};
  for (int k = 0; k < 4; ++k) {
    const Const& c = cin(n, k + 1, names[k]);
    if (c.numel() != v[0])
      throw NotSupported{std::string(names[k]) + " does not have one value per channel"};
    p.push_back({names[k], to_tensor(c, {c.numel()})});
  }
  const NodeId src = materialize(x);
  out(n, 0, plain(add(type, base_name(n, n.input(1), "weight"), a, {src}, std::move(p))));
}

// LayerNormalization (opset 17) over the last axis only: DeepCanvas's
// LayerNorm normalises the last dimension, as torch.nn.LayerNorm(D) does.
void Importer::op_layer_norm(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  const auto& v = view_of(x);
  const int64_t rank = int64_t(v.size()) + 1;  // with the batch
  int64_t axis = attr_i(n, "axis", -1);
  if (axis < 0) axis += rank;
  if (axis != rank - 1)
    throw NotSupported{"LayerNormalization over axes " + std::to_string(axis) + ".." +
                       std::to_string(rank - 1) + " (only the last axis is supported)"};
  for (int k = 1; k < n.output_size(); ++k)
    poison(n, k, "its mean and inverse standard deviation outputs are used");
  const int64_t D = v.back();
  Attrs a;
  a.set("eps", shortest_decimal(attr_f(n, "epsilon", 1e-5f)));
  a.set("affine", true);
  std::vector<std::pair<std::string, Tensor>> p;
  const Const& scale = cin(n, 1, "the scale");
  if (scale.numel() != D) throw NotSupported{"the scale does not have one value per position"};
  p.push_back({"weight", to_tensor(scale, {D})});
  Tensor bias(Shape{D});
  if (has_in(n, 2)) {
    const Const& b = cin(n, 2, "the bias");
    if (b.numel() != D) throw NotSupported{"the bias does not have one value per position"};
    bias = to_tensor(b, {D});
  }
  p.push_back({"bias", std::move(bias)});
  const NodeId src = materialize(x);
  out(n, 0, plain(add("LayerNorm", base_name(n, n.input(1), "weight"), a, {src}, std::move(p))));
}

void Importer::op_activation(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  if (!x.pad.empty() || x.layout != Layout::Plain) materialize(x);  // throws why
  std::string type = n.op_type() == "Relu"      ? "ReLU"
                     : n.op_type() == "Sigmoid" ? "Sigmoid"
                     : n.op_type() == "Tanh"    ? "Tanh"
                                                : "LeakyReLU";
  Attrs a;
  if (type == "LeakyReLU") {
    const float alpha = attr_f(n, "alpha", 0.01f);
    if (alpha < 0 || alpha > 1) throw NotSupported{"alpha outside [0, 1]"};
    a.set("slope", double(alpha));
  }
  // Elementwise: on the layer's values as they are, keeping the view.
  Val o = x;
  o.node = add(type, clean_name(layer_base(n)), a, {x.node});
  out(n, 0, o);
}

void Importer::op_clip(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  if (!x.pad.empty() || x.layout != Layout::Plain) materialize(x);
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (opset_ < 11) {
    lo = attr_f(n, "min", lo);
    hi = attr_f(n, "max", hi);
  } else {
    if (has_in(n, 1)) lo = float(cin(n, 1, "min").at(0));
    if (has_in(n, 2)) hi = float(cin(n, 2, "max").at(0));
  }
  std::string type;
  if (lo == 0 && hi == 6)
    type = "ReLU6";
  else if (lo == 0 && std::isinf(hi))
    type = "ReLU";
  else
    throw NotSupported{"Clip(" + std::to_string(lo) + ", " + std::to_string(hi) +
                       "): only ReLU (0, inf) and ReLU6 (0, 6) are supported"};
  Val o = x;
  o.node = add(type, clean_name(layer_base(n)), {}, {x.node});
  out(n, 0, o);
}

void Importer::op_softmax(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  const int rank = int(view_of(x).size()) + 1;
  int64_t axis = attr_i(n, "axis", opset_ >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  // Before opset 13 the input is folded to 2-D at axis, the same as the
  // last axis when axis is the last one.
  if (axis != rank - 1)
    throw NotSupported{"softmax over axis " + std::to_string(axis) +
                       " (only the last axis is supported)"};
  out(n, 0, plain(add("Softmax", clean_name(layer_base(n)), {}, {materialize(x)})));
}

void Importer::op_pool(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  const bool max = n.op_type() == "MaxPool";
  const auto& v = view_of(x);
  if (v.size() != 3) throw NotSupported{"only 2-D pooling is supported"};
  const auto k = attr_ints(n, "kernel_shape");
  const auto s = attr_ints(n, "strides", {1, 1});
  auto pads = attr_ints(n, "pads", {0, 0, 0, 0});
  if (k.size() != 2 || s.size() != 2 || pads.size() != 4)
    throw NotSupported{"kernel_shape, strides or pads of the wrong length"};
  if (attr_s(n, "auto_pad", "NOTSET") != "NOTSET" && attr_s(n, "auto_pad", "") != "VALID")
    throw NotSupported{"auto_pad " + attr_s(n, "auto_pad", "")};
  for (int64_t d : attr_ints(n, "dilations", {1, 1}))
    if (d != 1) throw NotSupported{"dilated pooling"};
  if (attr_i(n, "storage_order", 0) != 0) throw NotSupported{"storage_order 1"};
  if (n.output_size() > 1) poison(n, 1, "its indices output is used");
  Val base = x;
  if (!x.pad.empty()) {
    // A zero Pad before average pooling counts the zeros: the engine's own
    // average pooling with that padding (how DeepCanvas exports it).
    if (max || pads != std::vector<int64_t>{0, 0, 0, 0}) materialize(x);
    pads = x.pad;
    base.pad.clear();
  } else if (!max && attr_i(n, "count_include_pad", 0) == 0 &&
             pads != std::vector<int64_t>{0, 0, 0, 0}) {
    throw NotSupported{
        "padded average pooling without count_include_pad (DeepCanvas counts the padding)"};
  }
  if (pads[0] != pads[2] || pads[1] != pads[3])
    throw NotSupported{"uneven padding " + dims_str(pads)};
  // Refuses a zero stride, a kernel below 1, negative padding or sizes that
  // overflow before the ceil_mode arithmetic below divides by the stride.
  for (int d = 0; d < 2; ++d)
    conv_window(v[size_t(d + 1)], k[size_t(d)], s[size_t(d)], 1, pads[size_t(d)],
                pads[size_t(d + 2)], d == 0 ? "height" : "width");
  Attrs a;
  a.set("kernel", k);
  a.set("stride", s);
  a.set("padding", std::vector<int64_t>{pads[0], pads[1]});
  if (attr_i(n, "ceil_mode", 0)) {
    // Only where it changes the size; average pooling rounds down here.
    bool differs = false;
    for (int d = 0; d < 2; ++d) {
      // (Checked above: the padded size fits, so neither side overflows.)
      const int64_t in = v[size_t(d + 1)], p = pads[size_t(d)], st = s[size_t(d)];
      const int64_t span = in + 2 * p - k[size_t(d)];
      if (span >= 0 && span % st != 0 && st < in + p - (span - span % st)) differs = true;
    }
    if (differs && !max) throw NotSupported{"average pooling with ceil_mode"};
    if (differs) a.set("ceil_mode", true);
  }
  const NodeId src = materialize(base);
  out(n, 0, plain(add(max ? "MaxPool2D" : "AvgPool2D", clean_name(layer_base(n)), a, {src})));
}

void Importer::op_global_pool(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  if (view_of(x).size() != 3) throw NotSupported{"only 2-D global pooling is supported"};
  Val o = plain(add("GlobalAvgPool2D", clean_name(layer_base(n)), {}, {materialize(x)}));
  o.view = {o.view[0], 1, 1};  // ONNX keeps the 1×1
  out(n, 0, o);
}

void Importer::op_reduce_mean(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  const size_t rank = view_of(x).size() + 1;
  if (rank != 4 && rank != 3)
    throw NotSupported{
        "only the mean over height and width of an image, or over the steps of a sequence, is "
        "supported"};
  std::vector<int64_t> axes =
      opset_ >= 18 && has_in(n, 1) ? cin(n, 1, "axes").i : attr_ints(n, "axes");
  for (int64_t& a : axes)
    if (a < 0) a += int64_t(rank);
  if (rank == 3) {
    // [N, T, E] → [N, E]: a sequence's tokens averaged (TokenPooling).
    if (axes != std::vector<int64_t>{1})
      throw NotSupported{"mean of a sequence over axes " + dims_str(axes) +
                         " (only over its steps, [1])"};
    Attrs a;
    a.set("mode", std::string("mean"));
    Val o = plain(add("TokenPooling", clean_name(layer_base(n)), a, {materialize(x)}));
    if (attr_i(n, "keepdims", 1)) o.view = {1, o.view[0]};
    out(n, 0, o);
    return;
  }
  std::sort(axes.begin(), axes.end());
  if (axes != std::vector<int64_t>{2, 3})
    throw NotSupported{"mean over axes " + dims_str(axes) +
                       " (only over height and width, [2, 3])"};
  Val o = plain(add("GlobalAvgPool2D", clean_name(layer_base(n)), {}, {materialize(x)}));
  if (attr_i(n, "keepdims", 1)) o.view = {o.view[0], 1, 1};
  out(n, 0, o);
}

void Importer::op_gemm(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  const Const& w = cin(n, 1, "B (the weight)");
  if (attr_i(n, "transA", 0) != 0 || attr_f(n, "alpha", 1.f) != 1.f ||
      attr_f(n, "beta", 1.f) != 1.f)
    throw NotSupported{"Gemm with transA, alpha or beta (only y = x·Wᵀ + b)"};
  if (view_of(x).size() != 1 || w.dims.size() != 2) throw NotSupported{"Gemm of a non-matrix"};
  const bool tb = attr_i(n, "transB", 0) != 0;
  const int64_t in_f = tb ? w.dims[1] : w.dims[0], units = tb ? w.dims[0] : w.dims[1];
  if (in_f != x.view[0])
    throw NotSupported{"the weight does not match the input's " + std::to_string(x.view[0]) +
                       " features"};
  Tensor wt{Shape{units, in_f}};
  for (int64_t o = 0; o < units; ++o)
    for (int64_t i = 0; i < in_f; ++i)
      wt.f32()[o * in_f + i] = float(tb ? w.at(o * in_f + i) : w.at(i * units + o));
  Attrs a;
  a.set("units", units);
  std::vector<std::pair<std::string, Tensor>> p = {{"weight", wt}};
  a.set("bias", has_in(n, 2));
  if (has_in(n, 2)) {
    const Const& b = cin(n, 2, "C (the bias)");
    Tensor bt{Shape{units}};
    if (b.numel() == 1)
      for (int64_t o = 0; o < units; ++o) bt.f32()[o] = float(b.at(0));
    else if (b.numel() == units)
      for (int64_t o = 0; o < units; ++o) bt.f32()[o] = float(b.at(o));
    else
      throw NotSupported{"C is not one value per output"};
    p.push_back({"bias", bt});
  }
  out(n, 0,
      plain(add("Dense", base_name(n, n.input(1), "weight"), a, {materialize(x)}, std::move(p))));
}

void Importer::op_matmul(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  const Const& w = cin(n, 1, "the second operand");
  const auto& v = view_of(x);
  if (w.dims.size() != 2 || v.empty() || v.back() != w.dims[0])
    throw NotSupported{"MatMul by something other than a [features, outputs] weight"};
  const int64_t in_f = w.dims[0], units = w.dims[1];
  Tensor wt{Shape{units, in_f}};
  for (int64_t o = 0; o < units; ++o)
    for (int64_t i = 0; i < in_f; ++i) wt.f32()[o * in_f + i] = float(w.at(i * units + o));
  Attrs a;
  a.set("units", units);
  a.set("bias", false);  // a following Add of a constant becomes its bias
  std::string type = v.size() == 1 ? "Dense" : v.size() == 2 ? "TimeDistributedDense" : "";
  if (type.empty()) throw NotSupported{"MatMul of a " + std::to_string(v.size() + 1) + "-D input"};
  std::string base = module_from_initializer(n.input(1), "weight");
  if (base.empty()) base = layer_base(n);
  out(n, 0, plain(add(type, clean_name(base), a, {materialize(x)}, {{"weight", wt}})));
}

// PositionalEmbedding from its table: sinusoidal when it is that layer's
// own fixed table, else learned (a trained nn.Parameter).
NodeId Importer::positions(const onnx::NodeProto& n, const Val& x, const Const& table,
                           const std::string& table_name) {
  const auto& v = view_of(x);
  Attrs a;
  a.set("kind", std::string("sinusoidal"));
  const LayerDescriptor& d = LayerRegistry::instance().get("PositionalEmbedding");
  const Shape s{v[0], v[1]};
  auto layer = d.create(d.with_defaults(a), {s}, s);
  const Tensor& fixed = layer->params().at(0)->value;
  bool sinusoidal = true;
  for (int64_t k = 0; k < fixed.numel() && sinusoidal; ++k)
    sinusoidal = std::abs(double(fixed.f32()[k]) - table.at(k)) <= 1e-6;
  if (!sinusoidal) a.set("kind", std::string("learned"));
  std::string base = named_by_parameter(n, table_name, {"weight", "table"});
  return add("PositionalEmbedding", base, a, {materialize(x)},
             {{sinusoidal ? "table" : "weight", to_tensor(table, {v[0], v[1]})}});
}

void Importer::op_add(const onnx::NodeProto& n) {
  std::vector<const Val*> ins;
  for (int k = 0; k < n.input_size(); ++k) ins.push_back(&in(n, k));
  const bool all_const =
      std::all_of(ins.begin(), ins.end(), [](const Val* v) { return v->is_const; });
  if (all_const) {
    op_arith(n);
    return;
  }
  if (ins.size() == 2 && (ins[0]->is_const || ins[1]->is_const)) {
    // A bias after MatMul (or a bias-free Conv/Dense): folded into the layer.
    const Val& x = ins[0]->is_const ? *ins[1] : *ins[0];
    const Const& b = ins[0]->is_const ? ins[0]->c : ins[1]->c;
    Node& node = g_.node(x.node);
    const bool biasless =
        (node.type == "Dense" || node.type == "TimeDistributedDense" || node.type == "Conv2D") &&
        !node.attrs.b("bias") && g_.out_edges(x.node).empty() && x.layout == Layout::Plain;
    const std::string& xname = ins[0]->is_const ? n.input(1) : n.input(0);
    const auto& v = view_of(x);
    if (v.size() == 2 && v[0] > 1 && b.numel() == v[0] * v[1] && !b.integer &&
        (b.dims.size() == 2 || (b.dims.size() == 3 && b.dims[0] == 1))) {
      // A table [T, E] added to a sequence [N, T, E]: a position signal.
      out(n, 0, plain(positions(n, x, b, ins[0]->is_const ? n.input(0) : n.input(1))));
      return;
    }
    if (!biasless || uses_[xname] != 1)
      throw NotSupported{"Add of a constant other than the bias of the layer before it"};
    const int64_t units = node.type == "Conv2D" ? node.attrs.i("filters") : node.attrs.i("units");
    Tensor bt{Shape{units}};
    if (b.numel() == units)
      for (int64_t o = 0; o < units; ++o) bt.f32()[o] = float(b.at(o));
    else if (b.numel() == 1)
      for (int64_t o = 0; o < units; ++o) bt.f32()[o] = float(b.at(0));
    else
      throw NotSupported{"the constant is not one value per output of the layer before it"};
    if (node.type == "Conv2D" && b.numel() == units &&
        !(b.dims.size() == 3 && b.dims[1] == 1 && b.dims[2] == 1) &&
        !(b.dims.size() == 4 && b.dims[2] == 1 && b.dims[3] == 1))
      throw NotSupported{"the constant is not one value per channel of the Conv before it"};
    g_.set_attr(x.node, "bias", true);
    params_[x.node].push_back({"bias", bt});
    out(n, 0, x);
    return;
  }
  if (ins.size() < 2 || ins.size() > 8)
    throw NotSupported{"a sum of " + std::to_string(ins.size()) + " inputs (2 to 8 are supported)"};
  std::vector<NodeId> srcs;
  for (const Val* v : ins) {
    if (v->is_const) throw NotSupported{"a sum of computed values and constants"};
    if (view_of(*v) != view_of(*ins[0]))
      throw NotSupported{"Add with broadcasting (shapes " + dims_str(ins[0]->view) + " and " +
                         dims_str(v->view) + ")"};
  }
  for (const Val* v : ins) srcs.push_back(materialize(*v));
  Attrs a;
  a.set("inputs", int64_t(ins.size()));
  out(n, 0, plain(add("Add", clean_name(layer_base(n)), a, srcs)));
}

}  // namespace dc::onnx_import
