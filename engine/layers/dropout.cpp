// Dropout as in torch.nn.Dropout: in training each value is zeroed with
// probability `rate` and the survivors are scaled by 1/(1-rate) ("inverted"
// dropout), so evaluation is the identity and needs no rescaling.
#include <deepcanvas/errors.h>
#include <deepcanvas/memstats.h>
#include <deepcanvas/rng.h>

#include <string>
#include <vector>

#include "builtin.h"

namespace dc {
namespace {

class Dropout : public Layer {
 public:
  explicit Dropout(double rate) : rate_(rate) {}

  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext& ctx) override {
    const int64_t n = out.numel();
    const float* x = in[0]->f32();
    float* y = out.f32();
    masked_ = ctx.training && rate_ > 0.0;
    if (!masked_) {
      for (int64_t i = 0; i < n; ++i) y[i] = x[i];
      return;
    }
    // The mask is drawn sequentially from the step's generator: the same
    // seed gives the same mask whatever the thread count.
    Rng& rng = ctx.rng ? *ctx.rng : fallback_;
    const float keep_scale = float(1.0 / (1.0 - rate_));
    const float rate = float(rate_);
    mask_.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      float m = rng.uniform() >= rate ? keep_scale : 0.f;
      mask_[i] = m;
      y[i] = x[i] * m;
    }
  }

  void backward(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext&) override {
    if (!din[0]) return;
    const int64_t n = dout.numel();
    const float* dy = dout.f32();
    float* dx = din[0]->f32();
    if (!masked_) {
      for (int64_t i = 0; i < n; ++i) dx[i] += dy[i];
      return;
    }
    const float* m = mask_.data();
    for (int64_t i = 0; i < n; ++i) dx[i] += dy[i] * m[i];
  }

 private:
  double rate_;
  bool masked_ = false;
  ScratchVec<float> mask_;  // 0 or 1/(1-rate) per value, from the last forward
  Rng fallback_;            // only when a caller runs training without ctx.rng
};

}  // namespace

void register_dropout_layers(LayerRegistry& r) {
  LayerDescriptor d;
  d.type = "Dropout";
  d.category = "Regularization";
  d.help = "Randomly zeroes values while training to reduce overfitting (like torch.nn.Dropout)";
  d.attrs = {
      {"rate", AttrType::Float, 0.5, 0, 0.99, {}, "Probability of zeroing each value in training"},
  };
  d.num_inputs = [](const Attrs&) { return 1; };
  d.infer = [](const std::vector<Shape>& in, const Attrs&) {
    if (in.size() != 1) throw ShapeError("expects exactly one input");
    return in[0];
  };
  d.cost = [](const std::vector<Shape>&, const Shape&, const Attrs&) { return Cost{}; };
  d.create = [](const Attrs& attrs, const std::vector<Shape>&, const Shape&) {
    Attrs a = LayerRegistry::instance().get("Dropout").with_defaults(attrs);
    return std::unique_ptr<Layer>(new Dropout(a.f("rate")));
  };
  r.add(std::move(d));
}

}  // namespace dc
