// Dropout as in torch.nn.Dropout: in training each value is zeroed with
// probability `rate` and the survivors are scaled by 1/(1-rate) ("inverted"
// dropout), so evaluation is the identity and needs no rescaling.
#include <deepcanvas/errors.h>
#include <deepcanvas/memstats.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/rng.h>

#include <cmath>
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
    // One draw from the step's generator seeds a counter-based one
    // (splitmix64 of seed and index, as the CUDA kernel): element i's mask
    // depends on i alone, so the same seed gives the same mask whatever the
    // thread count, and the loop runs in parallel. (Drawing every element
    // from the sequential generator made Dropout cost ten times its memory
    // traffic.)
    Rng& rng = ctx.rng ? *ctx.rng : fallback_;
    const uint64_t seed = rng.next_u64();
    const float keep_scale = float(1.0 / (1.0 - rate_));
    // uniform >= rate, in the generator's 24-bit integers.
    const uint64_t threshold = uint64_t(std::ceil(rate_ * 16777216.0));
    mask_.resize(static_cast<size_t>(n));
    float* mask = mask_.data();
    parallel_for(n, int64_t(1) << 14, [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const float m = (splitmix64_at(seed, uint64_t(i)) >> 40) >= threshold ? keep_scale : 0.f;
        mask[i] = m;
        y[i] = x[i] * m;
      }
    });
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
    parallel_for(n, int64_t(1) << 14, [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dx[i] += dy[i] * m[i];
    });
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
