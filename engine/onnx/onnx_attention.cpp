// MultiHeadAttention in ONNX as the single ops torch.onnx writes for
// nn.MultiheadAttention (ONNX has no attention op before opset 23):
// projections by MatMul with the transposed weights, the heads split by
// Reshape [N, T, H, D] and Transpose, scores by MatMul, scaled, masked
// (causal: −inf above the diagonal) and Softmax over the keys, the heads
// joined again and the output projection. The batch stays dynamic: every
// Reshape copies dimension 0. Also the token layers around attention.
#include <deepcanvas/layer.h>

#include <cmath>
#include <limits>

#include "onnx_builder.h"

namespace dc::onnx_export {

namespace {

void write_attention(Builder& b, const OnnxLayer& l) {
  const std::string& name = l.step.name;
  const Attrs& a = l.attrs;
  const bool cross = a.s("mode") == "cross", bias = a.b("bias");
  const int64_t T = l.in_shapes[0][0], E = l.in_shapes[0][1];
  const int64_t S = cross ? l.in_shapes[1][0] : T, H = a.i("heads"), D = E / H;
  const std::string& xq = l.inputs[0];
  const std::string& xk = cross ? l.inputs[1] : l.inputs[0];
  auto value = [&](const std::string& what) { return b.fresh(name + "/" + what); };
  auto node = [&](const char* op, const std::vector<std::string>& in, const std::string& what) {
    const std::string out = value(what);
    b.node(op, in, out, name + "/" + what);
    return out;
  };
  auto transpose = [&](const std::string& x, std::vector<int64_t> perm, const std::string& what) {
    const std::string out = value(what);
    set_attr(b.node("Transpose", {x}, out, name + "/" + what), "perm", perm);
    return out;
  };
  // The parameters keep their checkpoint names, one initializer each: the
  // query, key and value parts are slices of in_proj's transpose [E, 3E].
  auto slice = [&](const std::string& x, int64_t from, int64_t to, int64_t axis,
                   const std::string& what) {
    const std::string out = value(what);
    b.node("Slice",
           {x, b.ints(name + "/" + what + "_start", {from}),
            b.ints(name + "/" + what + "_end", {to}), b.ints(name + "/" + what + "_axis", {axis})},
           out, name + "/" + what);
    return out;
  };
  const std::string w_all = transpose(
      b.weight(l.param_name("in_proj_weight"), l.param("in_proj_weight")), {1, 0}, "in_proj_t");
  const std::string b_all =
      bias ? b.weight(l.param_name("in_proj_bias"), l.param("in_proj_bias")) : std::string();
  // x·W_kᵀ + b_k, then [N, rows, H, D] with the heads second.
  const char* tags[3] = {"q", "k", "v"};
  auto head_split = [&](const std::string& x, int64_t k, int64_t rows) {
    const std::string tag = tags[k];
    std::string y =
        node("MatMul", {x, slice(w_all, k * E, (k + 1) * E, 1, "w_" + tag)}, tag + "_proj");
    if (bias)
      y = node("Add", {y, slice(b_all, k * E, (k + 1) * E, 0, "b_" + tag)}, tag + "_biased");
    return node("Reshape", {y, b.ints(name + "/" + tag + "_heads", {0, rows, H, D})},
                tag + "_heads");
  };
  const std::string q = transpose(head_split(xq, 0, T), {0, 2, 1, 3}, "q_t");   // N H T D
  const std::string kt = transpose(head_split(xk, 1, S), {0, 2, 3, 1}, "k_t");  // N H D S
  const std::string v = transpose(head_split(xk, 2, S), {0, 2, 1, 3}, "v_t");   // N H S D
  std::string scores = node("MatMul", {q, kt}, "scores");
  scores = node("Mul", {scores, b.scalar(name + "/scale", 1.f / std::sqrt(float(D)))}, "scaled");
  if (a.b("causal")) {
    Tensor mask(Shape{T, S});
    for (int64_t t = 0; t < T; ++t)
      for (int64_t s = 0; s < S; ++s)
        mask.f32()[t * S + s] = s > t ? -std::numeric_limits<float>::infinity() : 0.f;
    scores = node("Add", {scores, b.weight(name + "/causal_mask", mask)}, "masked");
  }
  // Axis 3 is the last: the same in the opsets that flatten to 2-D (< 13).
  const std::string p = value("weights");
  set_attr(b.node("Softmax", {scores}, p, name + "/softmax"), "axis", int64_t(3));
  const std::string o = transpose(node("MatMul", {p, v}, "heads"), {0, 2, 1, 3}, "heads_t");
  const std::string joined = node("Reshape", {o, b.ints(name + "/joined", {0, T, E})}, "joined");
  const std::string wo = transpose(
      b.weight(l.param_name("out_proj_weight"), l.param("out_proj_weight")), {1, 0}, "out_proj_t");
  if (!bias) {
    b.node("MatMul", {joined, wo}, l.output, name);
    return;
  }
  const std::string y = node("MatMul", {joined, wo}, "out_proj");
  b.node("Add", {y, b.weight(l.param_name("out_proj_bias"), l.param("out_proj_bias"))}, l.output,
         name);
}

// [N, C, H, W] -> [N, H·W, C].
void write_image_to_tokens(Builder& b, const OnnxLayer& l) {
  const std::string& name = l.step.name;
  const Shape& s = l.in_shapes[0];
  const std::string flat = b.fresh(name + "/flat");
  b.node("Reshape", {l.inputs[0], b.ints(name + "/shape", {0, s[0], s[1] * s[2]})}, flat,
         name + "/reshape");
  set_attr(b.node("Transpose", {flat}, l.output, name), "perm", std::vector<int64_t>{0, 2, 1});
}

void write_positions(Builder& b, const OnnxLayer& l) {
  const std::string p = l.attrs.s("kind") == "learned" ? "weight" : "table";
  b.node("Add", {l.inputs[0], b.weight(l.param_name(p), l.param(p))}, l.output, l.step.name);
}

// The token [1, 1, E] expanded to [N, 1, E] (N from the input's shape), then
// the input after it.
void write_class_token(Builder& b, const OnnxLayer& l) {
  const std::string& name = l.step.name;
  const int64_t E = l.in_shapes[0][1];
  auto value = [&](const char* what) { return b.fresh(name + "/" + what); };
  const std::string shape = value("input_shape"), n = value("batch"), target = value("target"),
                    tokens = value("tokens");
  b.node("Shape", {l.inputs[0]}, shape, name + "/shape");
  b.node("Slice",
         {shape, b.ints(name + "/start", {0}), b.ints(name + "/end", {1}),
          b.ints(name + "/axis", {0})},
         n, name + "/batch");
  set_attr(b.node("Concat", {n, b.ints(name + "/one_e", {1, E})}, target, name + "/target"), "axis",
           int64_t(0));
  Tensor t = l.param("token").clone();
  b.node("Expand", {b.weight(l.param_name("token"), t, {1, 1, E}), target}, tokens,
         name + "/expand");
  set_attr(b.node("Concat", {tokens, l.inputs[0]}, l.output, name), "axis", int64_t(1));
}

void write_token_pooling(Builder& b, const OnnxLayer& l) {
  const std::string& name = l.step.name;
  if (l.attrs.s("mode") == "first") {
    auto& n = b.node("Gather", {l.inputs[0], b.index(name + "/index", 0)}, l.output, name);
    set_attr(n, "axis", int64_t(1));
    return;
  }
  // ReduceMean's axes became an input in opset 18.
  if (b.opset() >= 18) {
    auto& n = b.node("ReduceMean", {l.inputs[0], b.ints(name + "/axes", {1})}, l.output, name);
    set_attr(n, "keepdims", int64_t(0));
    return;
  }
  auto& n = b.node("ReduceMean", {l.inputs[0]}, l.output, name);
  set_attr(n, "axes", std::vector<int64_t>{1});
  set_attr(n, "keepdims", int64_t(0));
}

}  // namespace

void register_attention_writers(std::map<std::string, Writer>& w) {
  add_writer(w, "MultiHeadAttention", {nullptr, write_attention});
  add_writer(w, "ImageToTokens", {nullptr, write_image_to_tokens});
  add_writer(w, "PositionalEmbedding", {nullptr, write_positions});
  add_writer(w, "ClassToken", {nullptr, write_class_token});
  add_writer(w, "TokenPooling", {nullptr, write_token_pooling});
}

}  // namespace dc::onnx_export
