// ONNX forms of SimpleRNN, LSTM and GRU: one ONNX RNN/LSTM/GRU op per layer
// of a stack, both directions in one op. The engine keeps PyTorch's layout
// (batch first, gates i,f,g,o and r,z,n, two biases); ONNX wants time first,
// gates i,o,f,c and z,r,h, and the weights of both directions stacked, so
// the writer reorders the gate blocks and transposes around each op.
#include <cstring>

#include "onnx_builder.h"

namespace dc::onnx_export {

namespace {

enum class Cell { Rnn, Lstm, Gru };

Cell cell_of(const std::string& type) {
  return type == "LSTM" ? Cell::Lstm : type == "GRU" ? Cell::Gru : Cell::Rnn;
}

// PyTorch's gate block k goes to ONNX's position p: order[p] = k.
std::vector<int> gate_order(Cell c) {
  switch (c) {
    case Cell::Lstm:
      return {0, 3, 1, 2};  // i,f,g,o -> i,o,f,c
    case Cell::Gru:
      return {1, 0, 2};  // r,z,n -> z,r,h
    default:
      return {0};
  }
}

// Appends t's rows (or elements, for a bias) with its gate blocks of H rows
// reordered for ONNX.
void append_reordered(std::vector<float>& out, const Tensor& t, int64_t H, Cell c) {
  const int64_t row = t.shape().rank() == 2 ? t.shape()[1] : 1;
  for (int k : gate_order(c)) {
    const float* src = t.f32() + int64_t(k) * H * row;
    out.insert(out.end(), src, src + H * row);
  }
}

std::string stacked(Builder& b, const OnnxLayer& l, const std::string& name,
                    const std::vector<const Tensor*>& parts, std::vector<int64_t> dims, int64_t H,
                    Cell c) {
  std::vector<float> v;
  for (const Tensor* t : parts) append_reordered(v, *t, H, c);
  Tensor t{Shape(dims)};
  std::memcpy(t.f32(), v.data(), v.size() * sizeof(float));
  return b.weight(l.step.name + "." + name, t);
}

std::string transposed(Builder& b, const std::string& x, const std::vector<int64_t>& perm,
                       const std::string& base) {
  const std::string y = b.fresh(base);
  auto& n = b.node("Transpose", {x}, y, base);
  set_attr(n, "perm", perm);
  return y;
}

std::string reshaped(Builder& b, const std::string& x, const std::vector<int64_t>& dims,
                     const std::string& base, const std::string& out = "") {
  const std::string y = out.empty() ? b.fresh(base) : out;
  b.node("Reshape", {x, b.ints(base + "/shape", dims)}, y, base);
  return y;
}

std::string gathered(Builder& b, const std::string& x, int64_t axis, int64_t index,
                     const std::string& base) {
  const std::string y = b.fresh(base);
  // A 0-D index drops the axis, in ONNX and in OpenCV alike (OpenCV drops
  // it for a 1-element index too, unlike ONNX).
  auto& n = b.node("Gather", {x, b.index(base + "/index", index)}, y, base);
  set_attr(n, "axis", axis);
  return y;
}

// Each direction's final state, as PyTorch's h_n of the last layer: the
// forward one at the last step, the reverse one at step 0. Taken from Y
// [T, D, N, H] rather than from the op's Y_h output, which OpenCV 4.6's GRU
// does not produce.
void final_states(Builder& b, const std::string& y, int64_t T, int64_t D, int64_t H,
                  const std::string& name, const std::string& out) {
  std::vector<std::string> parts;
  for (int64_t d = 0; d < D; ++d) {
    const std::string base = name + (d ? "/final_reverse" : "/final");
    const std::string step = gathered(b, y, 0, d ? 0 : T - 1, base + "_step");  // [D, N, H]
    parts.push_back(reshaped(b, gathered(b, step, 0, d, base), {-1, H}, base + "_nh",
                             D == 1 ? out : ""));  // [N, H]
  }
  if (D == 2) {
    auto& n = b.node("Concat", parts, out, name);
    set_attr(n, "axis", int64_t(1));  // forward features first, as PyTorch
  }
}

void write_recurrent(Builder& b, const OnnxLayer& l) {
  const Attrs& a = l.attrs;
  const Cell c = cell_of(l.step.type);
  const int64_t H = a.i("hidden_size"), L = a.i("num_layers");
  const int64_t D = a.b("bidirectional") ? 2 : 1, G = int64_t(gate_order(c).size());
  const std::string& name = l.step.name;
  const char* op = c == Cell::Lstm ? "LSTM" : c == Cell::Gru ? "GRU" : "RNN";

  std::string x = transposed(b, l.inputs[0], {1, 0, 2}, name + "/time_first");  // [T, N, F]
  std::string y;
  for (int64_t layer = 0; layer < L; ++layer) {
    std::vector<const Tensor*> w, r, bias;
    for (int64_t d = 0; d < D; ++d) {
      const std::string sfx = "_l" + std::to_string(layer) + (d ? "_reverse" : "");
      w.push_back(&l.param("weight_ih" + sfx));
      r.push_back(&l.param("weight_hh" + sfx));
      if (l.has_param("bias_ih" + sfx)) {
        bias.push_back(&l.param("bias_ih" + sfx));
        bias.push_back(&l.param("bias_hh" + sfx));
      }
    }
    const std::string lx = "_l" + std::to_string(layer);
    const int64_t in = w.front()->shape()[1];
    std::vector<std::string> inputs = {x, stacked(b, l, "W" + lx, w, {D, G * H, in}, H, c),
                                       stacked(b, l, "R" + lx, r, {D, G * H, H}, H, c)};
    // ONNX's B is [Wb, Rb] per direction, which is the order bias_ih,
    // bias_hh were collected in.
    if (!bias.empty()) inputs.push_back(stacked(b, l, "B" + lx, bias, {D, 2 * G * H}, H, c));
    if (b.batch() > 0 && c != Cell::Rnn) {
      // A fixed batch: the zero initial state spelt out (OpenCV's GRU reads
      // only a model that has it), which needs B and sequence_lens before it.
      if (bias.empty()) inputs.push_back(b.weight(name + ".B" + lx, Tensor{Shape{D, 2 * G * H}}));
      inputs.push_back("");
      const std::string h0 = b.weight(name + ".initial_h" + lx, Tensor{Shape{D, b.batch(), H}});
      inputs.push_back(h0);
      if (c == Cell::Lstm)
        inputs.push_back(b.weight(name + ".initial_c" + lx, Tensor{Shape{D, b.batch(), H}}));
    }
    y = b.fresh(name + "/Y" + lx);
    auto& n = b.node(op, inputs, y, name + lx);
    set_attr(n, "hidden_size", H);
    set_attr(n, "direction", std::string(D == 2 ? "bidirectional" : "forward"));
    // PyTorch applies the reset gate after the recurrent product.
    if (c == Cell::Gru) set_attr(n, "linear_before_reset", int64_t(1));
    if (c == Cell::Rnn) {
      const std::string f = a.s("nonlinearity") == "relu" ? "Relu" : "Tanh";
      set_attr(n, "activations", std::vector<std::string>(size_t(D), f));
    }
    // Y is [T, D, N, H]; the next layer reads [T, N, D*H], the forward
    // direction's features first as in PyTorch.
    if (layer + 1 < L)
      x = reshaped(b, transposed(b, y, {0, 2, 1, 3}, name + "/Y_tnd" + lx), {0, 0, -1},
                   name + "/next" + lx);
  }
  if (a.b("return_sequences"))
    reshaped(b, transposed(b, y, {2, 0, 1, 3}, name + "/Y_ntd"), {0, 0, -1}, name, l.output);
  else
    final_states(b, y, l.in_shapes[0][0], D, H, name, l.output);
}

std::string recurrent_unsupported(const PlanStep& s, int) {
  if (s.attrs.s("initial_state") == "learned")
    return "a learned initial state has no ONNX form here (set initial_state to zero)";
  return "";
}

}  // namespace

void register_recurrent_writers(std::map<std::string, Writer>& w) {
  for (const char* type : {"SimpleRNN", "LSTM", "GRU"})
    add_writer(w, type, {recurrent_unsupported, write_recurrent});
}

}  // namespace dc::onnx_export
