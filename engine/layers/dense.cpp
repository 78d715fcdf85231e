// Fully connected layer (torch.nn.Linear): out = x W^T + b with W stored
// [units, features] as PyTorch does, so weights move between the two as is.
// Every product is one GEMM over the whole batch; OpenBLAS threads it.
#include <deepcanvas/checked.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/rng.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "builtin.h"

namespace dc {
namespace {

struct DenseGeom {
  int64_t F = 0, U = 0;  // input features, output units
  bool bias = true;
};

const LayerDescriptor& dense_desc() {
  return LayerRegistry::instance().get("Dense");
}

DenseGeom dense_geom(const std::vector<Shape>& in, const Attrs& attrs) {
  if (in.size() != 1) throw ShapeError("expects exactly one input");
  const Shape& s = in[0];
  if (s.rank() != 1) {
    throw ShapeError("expects a 1-D input (features) but got " + s.str() +
                     "; add a Flatten before it");
  }
  Attrs a = dense_desc().with_defaults(attrs);
  DenseGeom g;
  g.F = s[0];
  g.U = a.i("units");
  g.bias = a.b("bias");
  if (g.U < 1) throw ShapeError("units must be at least 1");
  checked_product(std::vector<int64_t>{g.U, g.F}, "the weight (units×features)");
  return g;
}

class Dense : public Layer {
 public:
  explicit Dense(const DenseGeom& g) : g_(g) {
    weight_.name = "weight";
    weight_.value = Tensor(Shape{g.U, g.F});
    weight_.grad = Tensor(Shape{g.U, g.F});
    if (g.bias) {
      bias_.name = "bias";
      bias_.value = Tensor(Shape{g.U});
      bias_.grad = Tensor(Shape{g.U});
      bias_.decay = false;
    }
  }

  std::vector<Param*> params() override {
    if (g_.bias) return {&weight_, &bias_};
    return {&weight_};
  }

  // PyTorch's default: kaiming_uniform(a=sqrt(5)) reduces to U(-b, b) with
  // b = 1/sqrt(fan_in), and the bias uses the same bound.
  void init(Rng& rng) override {
    float b = 1.0f / std::sqrt(float(g_.F));
    float* w = weight_.value.f32();
    for (int64_t i = 0; i < weight_.value.numel(); ++i) w[i] = rng.uniform(-b, b);
    if (g_.bias)
      for (int64_t i = 0; i < g_.U; ++i) bias_.value.f32()[i] = rng.uniform(-b, b);
  }

  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const int64_t N = in[0]->dim(0), F = g_.F, U = g_.U;
    float* y = out.f32();
    float beta = 0.f;
    if (g_.bias) {
      // Seeding the output with the bias lets the GEMM add it for free.
      const float* b = bias_.value.f32();
      for (int64_t n = 0; n < N; ++n) std::copy(b, b + U, y + n * U);
      beta = 1.f;
    }
    sgemm(false, true, N, U, F, 1.f, in[0]->f32(), F, weight_.value.f32(), F, beta, y, U);
  }

  bool overwrites_din() const override { return true; }

  void backward(const std::vector<const Tensor*>& in, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext& ctx) override {
    const int64_t N = in[0]->dim(0), F = g_.F, U = g_.U;
    const float* dy = dout.f32();
    // A frozen layer's gradients are released by its plan: it only passes
    // the gradient on to its input.
    if (weight_.grad.defined())
      sgemm(true, false, U, F, N, 1.f, dy, U, in[0]->f32(), F, 1.f, weight_.grad.f32(), F);
    if (g_.bias && bias_.grad.defined()) {
      // Summed in double row by row: the order is fixed, so results repeat.
      sum_.assign(static_cast<size_t>(U), 0.0);
      double* s = sum_.data();
      for (int64_t n = 0; n < N; ++n) {
        const float* row = dy + n * U;
        for (int64_t u = 0; u < U; ++u) s[u] += row[u];
      }
      float* gb = bias_.grad.f32();
      for (int64_t u = 0; u < U; ++u) gb[u] += float(s[u]);
    }
    if (din[0])
      sgemm(false, false, N, F, U, 1.f, dy, U, weight_.value.f32(), F, ctx.fresh(0) ? 0.f : 1.f,
            din[0]->f32(), F);
  }

 private:
  DenseGeom g_;
  Param weight_, bias_;
  std::vector<double> sum_;
};

}  // namespace

void register_dense_layers(LayerRegistry& r) {
  LayerDescriptor d;
  d.type = "Dense";
  d.category = "Core";
  d.help =
      "Fully connected layer: every output is a weighted sum of all inputs (like "
      "torch.nn.Linear)";
  d.attrs = {
      {"units",
       AttrType::Int,
       int64_t{10},
       1,
       1048576,
       {},
       "Number of outputs (for the last layer: the number of classes)"},
      {"bias", AttrType::Bool, true, -1e18, 1e18, {}, "Add a learnable bias per output"},
  };
  d.num_inputs = [](const Attrs&) { return 1; };
  d.infer = [](const std::vector<Shape>& in, const Attrs& a) { return Shape{dense_geom(in, a).U}; };
  d.cost = [](const std::vector<Shape>& in, const Shape&, const Attrs& a) {
    DenseGeom g = dense_geom(in, a);
    return Cost{g.U * g.F + (g.bias ? g.U : 0), g.U * g.F};
  };
  d.create = [](const Attrs& a, const std::vector<Shape>& in, const Shape&) {
    return std::unique_ptr<Layer>(new Dense(dense_geom(in, a)));
  };
  r.add(std::move(d));
}

}  // namespace dc
