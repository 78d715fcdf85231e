// BatchNorm1D and BatchNorm2D over norm.cu (training and running statistics).
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

}  // namespace

void register_norm_ops(OpRegistry& r) {
  r.add("BatchNorm1D", make_batch_norm);
  r.add("BatchNorm2D", make_batch_norm);
}

}  // namespace dc::cuda
