// Pointwise activations and Softmax: thin wrappers over elementwise.cu and
// softmax.cu.
#include <deepcanvas/errors.h>

#include "kernels.h"
#include "op_registry.h"

namespace dc::cuda {

namespace {

class Activation : public Op {
 public:
  Act act;
  float slope = 0.f;
  // Folded into the op before it (CudaPlan::lower): shares that op's
  // buffers, which already hold the clamped values, and launches nothing.
  bool folded = false;
  bool is_view() const override { return folded; }
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    if (folded) return;
    act_forward(act, slope, in[0], out, n * out_shape.numel(), c.stream);
    DC_LAUNCHED(label + " on " + dims(n, out_shape));
  }
  void backward(OpContext& c, const std::vector<const float*>& in, const float* out,
                const float* dout, const std::vector<float*>& din, int n) override {
    if (!din[0] || folded) return;
    act_backward(act, slope, in[0], out, dout, din[0], n * out_shape.numel(), c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, out_shape));
  }
};

class Softmax : public Op {
 public:
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    int L = int(out_shape[out_shape.rank() - 1]);
    softmax_forward(in[0], out, n * out_shape.numel() / L, L, c.stream);
    DC_LAUNCHED(label + " on " + dims(n, out_shape));
  }
  void backward(OpContext& c, const std::vector<const float*>&, const float* out, const float* dout,
                const std::vector<float*>& din, int n) override {
    if (!din[0]) return;
    int L = int(out_shape[out_shape.rank() - 1]);
    softmax_backward(out, dout, din[0], n * out_shape.numel() / L, L, c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, out_shape));
  }
};

}  // namespace

bool fold_into(Op& relu, Op& producer) {
  auto* a = dynamic_cast<Activation*>(&relu);
  if (!a || (a->act != Act::Relu && a->act != Act::Relu6)) return false;
  FusedRelu r;
  r.on = true;
  if (a->act == Act::Relu6) r.hi = 6.f;
  if (!producer.fold_relu(r)) return false;
  a->folded = true;
  return true;
}

namespace {

template <Act K>
std::unique_ptr<Op> make_activation(const PlanStep& s) {
  auto p = std::make_unique<Activation>();
  p->act = K;
  if constexpr (K == Act::LeakyRelu) p->slope = float(s.attrs.f("slope"));
  return p;
}

}  // namespace

void register_activation_ops(OpRegistry& r) {
  r.add("ReLU", make_activation<Act::Relu>);
  r.add("ReLU6", make_activation<Act::Relu6>);
  r.add("LeakyReLU", make_activation<Act::LeakyRelu>);
  r.add("Sigmoid", make_activation<Act::Sigmoid>);
  r.add("Tanh", make_activation<Act::Tanh>);
  r.add("GELU", make_activation<Act::Gelu>);
  r.add("SiLU", make_activation<Act::Silu>);
  r.add("HardSwish", make_activation<Act::HardSwish>);
  r.add("HardSigmoid", make_activation<Act::HardSigmoid>);
  r.add("Softmax",
        [](const PlanStep&) -> std::unique_ptr<Op> { return std::make_unique<Softmax>(); });
}

}  // namespace dc::cuda
