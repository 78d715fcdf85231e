// BatchNorm1D and BatchNorm2D over norm.cu (training and running statistics),
// LayerNorm over layer_norm.cu.
#include "kernels.h"
#include "op_registry.h"

namespace dc::cuda {

namespace {

class BatchNorm : public Op {
 public:
  int C = 0, S = 1;
  float momentum = 0.1f, eps = 1e-5f;
  DeviceBuffer stats;    // mean, invstd of the last forward
  DeviceBuffer scratch;  // the kernels' partial sums and coefficients
  bool training = true;
  FusedRelu relu;
  bool fold_relu(FusedRelu r) override {
    relu = r;
    return true;
  }
  void prepare(OpContext& c, int) override {
    if (!stats.bytes()) stats = DeviceBuffer(*c.alloc, 2 * C * sizeof(float), label);
    if (!scratch.bytes()) {
      scratch = DeviceBuffer(*c.alloc, batchnorm_scratch_bytes(C), label + " partial sums");
      // Its counters start at zero (and the kernels leave them so).
      DC_CUDA(cudaMemsetAsync(scratch.get<void>(), 0, scratch.bytes(), c.stream),
              label + " partial sums");
    }
  }
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    // A frozen BatchNorm is in its inference form in training steps too:
    // it normalises with, and keeps, its running statistics.
    training = c.training && !frozen;
    batchnorm_forward(in[0], out, params[0].value, params[1].value, params[2].value,
                      params[3].value, stats.get(), stats.get() + C, n, C, S, momentum, eps,
                      training, relu, scratch.get<void>(), c.stream);
    DC_LAUNCHED(label + " on " + dims(n, in_shapes[0]));
  }
  void backward(OpContext& c, const std::vector<const float*>& in, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    batchnorm_backward(in[0], dout, din[0], params[0].value, params[0].grad, params[1].grad,
                       stats.get(), stats.get() + C, n, C, S, training, relu, scratch.get<void>(),
                       c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, in_shapes[0]));
  }
};

std::unique_ptr<Op> make_batch_norm(const PlanStep& s) {
  const Shape& in = s.in_shapes[0];
  auto p = std::make_unique<BatchNorm>();
  p->C = int(in[0]);
  p->S = int(in.numel() / in[0]);
  p->momentum = float(s.attrs.f("momentum"));
  p->eps = float(s.attrs.f("eps"));
  Shape c{in[0]};
  p->params = {{"weight", c, true},
               {"bias", c, true},
               {"running_mean", c, false},
               {"running_var", c, false}};
  return p;
}

// LayerNorm over the last dimension D (layer_norm.cu): `rows` rows per
// sample, each with its own statistics.
class LayerNorm : public Op {
 public:
  int D = 0;
  int64_t rows = 1;
  float eps = 1e-5f;
  bool affine = true;
  int64_t cap = 0;       // the batch the buffers hold
  DeviceBuffer stats;    // mean and invstd per row of the last forward
  DeviceBuffer scratch;  // the weight and bias gradients' partial sums
  void prepare(OpContext& c, int n) override {
    if (n <= cap) return;
    cap = n;
    stats = DeviceBuffer(*c.alloc, size_t(2 * n * rows) * sizeof(float), label + " statistics");
    if (affine && needs_backward && !frozen)
      scratch =
          DeviceBuffer(*c.alloc, layernorm_scratch_bytes(n * rows, D), label + " partial sums");
  }
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    const int64_t R = n * rows;
    layernorm_forward(in[0], out, affine ? params[0].value : nullptr,
                      affine ? params[1].value : nullptr, stats.get(), stats.get() + R, R, D, eps,
                      c.stream);
    DC_LAUNCHED(label + " on " + dims(n, in_shapes[0]));
  }
  void backward(OpContext& c, const std::vector<const float*>& in, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    const int64_t R = n * rows;
    layernorm_backward(in[0], dout, din[0], affine ? params[0].value : nullptr,
                       affine ? params[0].grad : nullptr, affine ? params[1].grad : nullptr,
                       stats.get(), stats.get() + R, R, D, scratch.get<void>(), c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, in_shapes[0]));
  }
};

std::unique_ptr<Op> make_layer_norm(const PlanStep& s) {
  const Shape& in = s.in_shapes[0];
  auto p = std::make_unique<LayerNorm>();
  p->D = int(in[in.rank() - 1]);
  p->rows = in.numel() / p->D;
  p->eps = float(s.attrs.f("eps"));
  p->affine = s.attrs.b("affine");
  if (p->affine) p->params = {{"weight", Shape{p->D}, true}, {"bias", Shape{p->D}, true}};
  return p;
}

}  // namespace

void register_norm_ops(OpRegistry& r) {
  r.add("BatchNorm1D", make_batch_norm);
  r.add("BatchNorm2D", make_batch_norm);
  r.add("LayerNorm", make_layer_norm);
}

}  // namespace dc::cuda
