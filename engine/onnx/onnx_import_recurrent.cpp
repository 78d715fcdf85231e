// The importer's recurrent ops: ONNX LSTM, GRU and RNN back to DeepCanvas's
// (PyTorch's) recurrent layers, with their gates reordered to PyTorch's.
#include <deepcanvas/checked.h>

#include <string>
#include <vector>

#include "onnx_import_internal.h"

namespace dc::onnx_import {

namespace {

// ONNX's gate order back to PyTorch's (the exporter's gate_order, inverted):
// ONNX block p holds PyTorch block torch_block[p].
std::vector<int> torch_block(const std::string& op) {
  if (op == "LSTM") return {0, 3, 1, 2};  // i,o,f,c -> i,f,g,o
  if (op == "GRU") return {1, 0, 2};      // z,r,h -> r,z,n
  return {0};
}

}  // namespace

void Importer::op_recurrent(const onnx::NodeProto& n) {
  const std::string op = n.op_type();
  const Val& x = layer_in(n, 0);
  if (x.layout != Layout::TimeFirst)
    throw NotSupported{
        "its input is not a sequence in time-first order (a Transpose of [N, T, F] or a recurrent "
        "layer's output)"};
  const Const& W = cin(n, 1, "W");
  const Const& R = cin(n, 2, "R");
  const int64_t H = attr_i(n, "hidden_size", 0);
  const std::string dir = attr_s(n, "direction", "forward");
  if (dir != "forward" && dir != "bidirectional")
    throw NotSupported{"direction " + dir + " (forward and bidirectional are supported)"};
  const int64_t D = dir == "bidirectional" ? 2 : 1;
  const auto order = torch_block(op);
  const int64_t G = int64_t(order.size());
  const int64_t F = x.view[1];
  // hidden_size is the model's: G·H checked (a wrapped product could match
  // an empty W), and 2·G·H below is then at most W's extent doubled.
  if (H < 1) throw NotSupported{"hidden_size " + std::to_string(H) + " (at least 1)"};
  const int64_t GH = checked_mul(G, H, "gates × hidden_size");
  if (W.dims != std::vector<int64_t>{D, GH, F} || R.dims != std::vector<int64_t>{D, GH, H})
    throw NotSupported{"W or R has an unexpected shape"};
  if (has_in(n, 4)) throw NotSupported{"sequence_lens (sequences of different lengths)"};
  for (int k : {5, 6})
    if (has_in(n, k)) {
      const Const& s = cin(n, k, k == 5 ? "initial_h" : "initial_c");
      for (int64_t q = 0; q < s.numel(); ++q)
        if (s.at(q) != 0) throw NotSupported{"a non-zero initial state"};
    }
  if (has_in(n, 7)) throw NotSupported{"peephole weights"};
  if (find_attr(n, "clip")) throw NotSupported{"cell clipping"};
  if (attr_i(n, "input_forget", 0) || attr_i(n, "layout", 0))
    throw NotSupported{"input_forget or layout 1"};
  Attrs a;
  a.set("hidden_size", H);
  a.set("num_layers", int64_t(1));
  a.set("bidirectional", D == 2);
  a.set("return_sequences", true);
  a.set("bias", has_in(n, 3));
  std::string type = op == "LSTM" ? "LSTM" : op == "GRU" ? "GRU" : "SimpleRNN";
  if (const auto* at = find_attr(n, "activations")) {
    std::vector<std::string> def = op == "LSTM"
                                       ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                   : op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                 : std::vector<std::string>{"Tanh"};
    const size_t per = def.size();
    for (int k = 0; k < at->strings_size(); ++k) {
      const std::string& s = at->strings(k);
      if (op == "RNN" && (s == "Relu" || s == "Tanh")) {
        a.set("nonlinearity", std::string(s == "Relu" ? "relu" : "tanh"));
        continue;
      }
      if (s != def[size_t(k) % per])
        throw NotSupported{"activation " + s + " (only the default ones are supported)"};
    }
  }
  if (op == "GRU" && attr_i(n, "linear_before_reset", 0) != 1)
    throw NotSupported{
        "linear_before_reset 0 (DeepCanvas's GRU is PyTorch's, which applies the reset gate after "
        "the recurrent product: linear_before_reset 1)"};
  std::vector<std::pair<std::string, Tensor>> p;
  auto reorder = [&](const Const& c, int64_t d, int64_t offset, int64_t row) {
    Tensor t{row > 1 ? Shape{GH, row} : Shape{GH}};
    const int64_t block = H * row;
    for (int64_t q = 0; q < G; ++q) {
      const int64_t src = offset + q * block, dst = int64_t(order[size_t(q)]) * block;
      for (int64_t e = 0; e < block; ++e)
        t.f32()[dst + e] = float(c.at(d * (c.numel() / D) + src + e));
    }
    return t;
  };
  const Const* B = has_in(n, 3) ? &cin(n, 3, "B") : nullptr;
  if (B && B->dims != std::vector<int64_t>{D, 2 * GH})
    throw NotSupported{"B has an unexpected shape"};
  for (int64_t d = 0; d < D; ++d) {
    const std::string sfx = std::string("_l0") + (d ? "_reverse" : "");
    p.push_back({"weight_ih" + sfx, reorder(W, d, 0, F)});
    p.push_back({"weight_hh" + sfx, reorder(R, d, 0, H)});
    if (B) {
      p.push_back({"bias_ih" + sfx, reorder(*B, d, 0, 1)});
      p.push_back({"bias_hh" + sfx, reorder(*B, d, GH, 1)});
    }
  }
  std::string base = layer_base(n);
  if (base.empty()) base = type == "SimpleRNN" ? "rnn" : type == "LSTM" ? "lstm" : "gru";
  Val o;
  o.node = add(type, clean_name(base), a, {x.node}, std::move(p));
  o.layout = Layout::RnnY;
  o.T = x.view[0];
  o.D = D;
  o.H = H;
  out(n, 0, o);
  for (int k = 1; k < n.output_size(); ++k)
    poison(n, k,
           "its final state output " + std::string(k == 1 ? "Y_h" : "Y_c") +
               " is used (supported: the output sequence Y, e.g. y[:, -1])");
}

}  // namespace dc::onnx_import
