// Embedding and LastStep on the device (kernels in sequence.cu). Sequences
// are [N, T, F], batch first, as in the CPU layers.
#include <deepcanvas/errors.h>

#include <cmath>

#include "kernels.h"
#include "op_registry.h"

namespace dc::cuda {
namespace {

class Embedding : public Op {
 public:
  int64_t T = 0, V = 0, D = 0, pad = -1;

  // The same rule and message as the CPU layer, checked once on the host.
  bool validates_input() const override { return true; }
  void check_input(const float* x, int64_t count) const override {
    for (int64_t i = 0; i < count; ++i) {
      float v = x[i];
      int64_t id = std::isfinite(v) ? int64_t(std::lround(v)) : -1;
      if (id < 0 || id >= V || std::fabs(v - float(id)) > 1e-3f)
        throw DataError(label + ": token id " + std::to_string(v) + " is not an integer in 0.." +
                        std::to_string(V - 1) +
                        "; set vocab_size to the data's vocabulary size and turn input "
                        "normalisation off for token data");
    }
  }
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    embedding_forward(in[0], params[0].value, out, n * T, D, V, c.stream);
    DC_LAUNCHED(label + " on " + dims(n, in_shapes[0]) + " ids, table " + std::to_string(V) + "x" +
                std::to_string(D));
  }
  // Ids carry no gradient; only the table does.
  void backward(OpContext& c, const std::vector<const float*>& in, const float*, const float* dout,
                const std::vector<float*>&, int n) override {
    if (!params[0].grad) return;  // frozen
    embedding_backward(in[0], dout, params[0].grad, n * T, D, V, pad, c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, in_shapes[0]) + " ids");
  }
};

class LastStep : public Op {
 public:
  int64_t T = 0, F = 0, k = 0;
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    step_select(in[0], out, n, T, k, F, F, F, c.stream);
    DC_LAUNCHED(label + " on " + dims(n, in_shapes[0]));
  }
  void backward(OpContext& c, const std::vector<const float*>&, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    if (!din[0]) return;
    step_select_backward(dout, din[0], n, T, k, F, F, F, c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, in_shapes[0]));
  }
};

std::unique_ptr<Op> make_embedding(const PlanStep& s) {
  const Attrs& a = s.attrs;
  const std::vector<Shape>& in = s.in_shapes;
  auto op = std::make_unique<Embedding>();
  op->T = in[0][0];
  op->V = a.i("vocab_size");
  op->D = s.out_shape[1];
  op->pad = a.i("padding_idx");
  op->params.push_back({"weight", Shape{op->V, op->D}, true});
  return op;
}

std::unique_ptr<Op> make_last_step(const PlanStep& s) {
  const std::vector<Shape>& in = s.in_shapes;
  auto op = std::make_unique<LastStep>();
  op->T = in[0][0];
  op->F = in[0][1];
  int64_t i = s.attrs.i("index");
  op->k = i < 0 ? op->T + i : i;  // the shape rule has already checked the range
  return op;
}

}  // namespace

void register_sequence_ops(OpRegistry& r) {
  r.add("Embedding", make_embedding);
  r.add("LastStep", make_last_step);
}

}  // namespace dc::cuda
