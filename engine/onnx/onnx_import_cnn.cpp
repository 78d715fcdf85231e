// The importer's ops for today's mobile CNN bases (EfficientNet, MobileNetV3,
// ShuffleNetV2): HardSigmoid and HardSwish, Mul of two computed values
// (x·Sigmoid(x) as SiLU, x·HardSigmoid(x) as HardSwish, a per-channel gate
// as ChannelScale: squeeze-and-excitation), Split along the channels, and
// the channel shuffle and channel slices op_transpose and op_slice hand over.
#include <cmath>

#include "onnx_import_internal.h"

namespace dc::onnx_import {

void Importer::op_hard_activation(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  if (!x.pad.empty() || x.layout != Layout::Plain) materialize(x);  // throws why
  std::string type = n.op_type();
  if (type == "HardSigmoid") {
    // PyTorch's Hardsigmoid, ReLU6(x + 3)/6; ONNX's default alpha is
    // Keras's 0.2, a different function.
    const float alpha = attr_f(n, "alpha", 0.2f), beta = attr_f(n, "beta", 0.5f);
    if (std::fabs(alpha - 1.f / 6.f) > 1e-6f || std::fabs(beta - 0.5f) > 1e-6f)
      throw NotSupported{"HardSigmoid with alpha " + std::to_string(alpha) + " and beta " +
                         std::to_string(beta) +
                         " (only PyTorch's Hardsigmoid, alpha 1/6 and beta 0.5, is supported)"};
  }
  Val o = x;  // elementwise: the view stays
  o.node = add(type, clean_name(layer_base(n)), {}, {x.node});
  out(n, 0, o);
}

// s = Sigmoid(x) or HardSigmoid(x) as a layer of its own whose only use is
// this Mul: replaced by one SiLU or HardSwish layer on x.
bool Importer::fuse_gated(const onnx::NodeProto& n, const Val& x, const Val& s,
                          const std::string& s_name) {
  if (x.layout != Layout::Plain || s.layout != Layout::Plain || !x.pad.empty() || !s.pad.empty() ||
      x.view != s.view || uses_[s_name] != 1 || !g_.out_edges(s.node).empty())
    return false;
  // A copy: the node is removed below, and its type is read after that.
  const std::string type = g_.node(s.node).type;
  if (type != "Sigmoid" && type != "HardSigmoid") return false;
  const auto in = g_.in_edges(s.node);
  if (in.size() != 1 || in[0].src != x.node) return false;
  g_.remove_node(s.node);
  params_.erase(s.node);
  Val o = x;
  o.node = add(type == "Sigmoid" ? "SiLU" : "HardSwish", clean_name(layer_base(n)), {}, {x.node});
  out(n, 0, o);
  return true;
}

void Importer::op_mul(const onnx::NodeProto& n) {
  if (n.input_size() != 2) throw NotSupported{"Mul needs two inputs"};
  const Val& a = in(n, 0);
  const Val& b = in(n, 1);
  if (a.is_const && b.is_const) {
    op_arith(n);
    return;
  }
  if (a.is_const || b.is_const)
    throw NotSupported{
        "Mul of a computed value by a constant (supported: constants only, x·Sigmoid(x), "
        "x·HardSigmoid(x), and values times a per-channel gate)"};
  if (fuse_gated(n, a, b, n.input(1)) || fuse_gated(n, b, a, n.input(0))) return;
  // Squeeze-and-excitation: values [C, rest] times a gate [C, 1, ..., 1] of
  // the same rank (ONNX broadcasts from the last dimension, so only then is
  // the gate per channel).
  const auto& va = view_of(a);
  const auto& vb = view_of(b);
  auto per_channel = [](const std::vector<int64_t>& g, const std::vector<int64_t>& x) {
    if (g.size() != x.size() || g.empty() || g[0] != x[0]) return false;
    for (size_t k = 1; k < g.size(); ++k)
      if (g[k] != 1) return false;
    return true;
  };
  const bool b_gate = per_channel(vb, va);
  if (!b_gate && !per_channel(va, vb))
    throw NotSupported{"Mul of computed values of shapes " + dims_str(va) + " and " + dims_str(vb) +
                       " (supported: x·Sigmoid(x), x·HardSigmoid(x), and values times a "
                       "per-channel gate [C, 1, 1])"};
  const Val& x = b_gate ? a : b;
  const Val& gate = b_gate ? b : a;
  const NodeId xs = materialize(x);
  // The gate as its layer computes it when that is already [C] (a pooled
  // vector): no Reshape needed, ChannelScale takes either form.
  const auto& gs = shapes_.at(gate.node).dims();
  const NodeId gs_node = gate.layout == Layout::Plain && gate.pad.empty() && gs.size() == 1 &&
                                 gs[0] == view_of(gate)[0]
                             ? gate.node
                             : materialize(gate);
  Val o = plain(add("ChannelScale", clean_name(layer_base(n)), {}, {xs, gs_node}));
  o.view = view_of(x);
  out(n, 0, o);
}

// Transpose [N, G, C/G, rest] -> [N, C/G, G, rest] of a layer's [N, C, rest]
// output regrouped: torchvision's channel_shuffle; the Reshape after it is
// again a view.
bool Importer::channel_shuffle(const onnx::NodeProto& n, const Val& x,
                               const std::vector<int64_t>& perm) {
  if (x.layout != Layout::Plain || !x.pad.empty() || x.view.size() < 3) return false;
  const auto& v = x.view;
  std::vector<int64_t> want = {0, 2, 1};
  for (size_t k = 3; k <= v.size(); ++k) want.push_back(int64_t(k));
  if (perm != want) return false;
  const auto& d = shapes_.at(x.node).dims();
  if (d.size() != v.size() - 1 || d[0] != v[0] * v[1]) return false;
  for (size_t k = 1; k < d.size(); ++k)
    if (d[k] != v[k + 1]) return false;
  Attrs a;
  a.set("groups", v[0]);
  Val o = plain(add("ChannelShuffle", clean_name(layer_base(n)), a, {x.node}));
  o.view = v;
  std::swap(o.view[0], o.view[1]);
  out(n, 0, o);
  return true;
}

Val Importer::channel_slice(const onnx::NodeProto& n, const Val& x, int64_t start, int64_t count,
                            const std::string& name) {
  const auto& v = view_of(x);
  if (start == 0 && count == v[0]) return x;
  Attrs a;
  a.set("start", start);
  a.set("count", count);
  return plain(
      add("ChannelSlice", name.empty() ? clean_name(layer_base(n)) : name, a, {materialize(x)}));
}

void Importer::op_split(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  const auto& v = view_of(x);
  int64_t axis = attr_i(n, "axis", 0);
  if (axis < 0) axis += int64_t(v.size()) + 1;
  if (axis != 1) throw NotSupported{"Split along axis " + std::to_string(axis) + " (only 1)"};
  std::vector<int64_t> sizes;
  if (opset_ >= 13) {
    if (has_in(n, 1)) sizes = cin(n, 1, "split").i;
  } else {
    sizes = attr_ints(n, "split");
  }
  const int64_t parts = n.output_size();
  if (sizes.empty()) {
    if (parts < 1 || v[0] % parts != 0)
      throw NotSupported{"Split of " + std::to_string(v[0]) + " channels into " +
                         std::to_string(parts) + " equal parts"};
    sizes.assign(size_t(parts), v[0] / parts);
  }
  if (int64_t(sizes.size()) != parts) throw NotSupported{"split sizes do not match the outputs"};
  int64_t start = 0;
  for (int64_t k = 0; k < parts; ++k) {
    const int64_t count = sizes[size_t(k)];
    if (count < 1 || start + count > v[0]) throw NotSupported{"split sizes " + dims_str(sizes)};
    const std::string base = clean_name(layer_base(n));
    out(n, int(k), channel_slice(n, x, start, count, base + "_" + std::to_string(k)));
    start += count;
  }
  if (start != v[0]) throw NotSupported{"split sizes " + dims_str(sizes) + " do not add up"};
}

}  // namespace dc::onnx_import
