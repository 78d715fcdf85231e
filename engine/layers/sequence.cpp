// Sequence plumbing: SequenceInput (where sequences enter the network),
// TimeDistributedDense (one dense layer applied at every step) and LastStep
// (one step of a sequence). Sequences are [N, T, F], batch first.
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

const LayerDescriptor& sdesc(const char* type) {
  return LayerRegistry::instance().get(type);
}

// Like Input, it has no kernels: the plan hands the batch to its consumers.
class SequenceInput : public Layer {
 public:
  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    if (!in.empty() && in[0]) out.copy_from(*in[0]);
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, const Tensor&,
                const std::vector<Tensor*>&, RunContext&) override {}
};

Shape sequence_input_shape(const std::vector<Shape>& in, const Attrs& attrs) {
  if (!in.empty()) throw ShapeError("takes no inputs; it is where the data enters the network");
  Attrs a = sdesc("SequenceInput").with_defaults(attrs);
  int64_t T = a.i("steps"), F = a.i("features");
  if (T < 1) throw ShapeError("steps must be at least 1");
  if (a.s("kind") == "tokens") return Shape{T};
  if (F < 1) throw ShapeError("features must be at least 1");
  return Shape{T, F};
}

Shape expect_sequence(const std::vector<Shape>& in, const char* hint) {
  if (in.size() != 1) throw ShapeError("expects exactly one input");
  if (in[0].rank() != 2)
    throw ShapeError("expects a sequence (time×features) but got " + in[0].str() + "; " + hint);
  return in[0];
}

// Dense over N*T rows: the weight is shared by every step, so one GEMM does
// the whole batch and sequence.
class TimeDistributedDense : public Layer {
 public:
  TimeDistributedDense(int64_t T, int64_t F, int64_t U, bool bias)
      : T_(T), F_(F), U_(U), bias_on_(bias) {
    weight_.name = "weight";
    weight_.value = Tensor(Shape{U, F});
    weight_.grad = Tensor(Shape{U, F});
    if (bias) {
      bias_.name = "bias";
      bias_.value = Tensor(Shape{U});
      bias_.grad = Tensor(Shape{U});
      bias_.decay = false;
    }
  }
  std::vector<Param*> params() override {
    if (bias_on_) return {&weight_, &bias_};
    return {&weight_};
  }
  // As torch.nn.Linear: U(-1/sqrt(F), 1/sqrt(F)) for weight and bias.
  void init(Rng& rng) override {
    float b = 1.0f / std::sqrt(float(F_));
    for (int64_t i = 0; i < weight_.value.numel(); ++i) weight_.value.f32()[i] = rng.uniform(-b, b);
    if (bias_on_)
      for (int64_t i = 0; i < U_; ++i) bias_.value.f32()[i] = rng.uniform(-b, b);
  }
  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const int64_t R = in[0]->dim(0) * T_;
    float* y = out.f32();
    float beta = 0.f;
    if (bias_on_) {
      const float* b = bias_.value.f32();
      for (int64_t r = 0; r < R; ++r) std::copy(b, b + U_, y + r * U_);
      beta = 1.f;
    }
    sgemm(false, true, R, U_, F_, 1.f, in[0]->f32(), F_, weight_.value.f32(), F_, beta, y, U_);
  }
  void backward(const std::vector<const Tensor*>& in, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext&) override {
    const int64_t R = in[0]->dim(0) * T_;
    const float* dy = dout.f32();
    // A frozen layer's gradients are released by its plan.
    if (weight_.grad.defined())
      sgemm(true, false, U_, F_, R, 1.f, dy, U_, in[0]->f32(), F_, 1.f, weight_.grad.f32(), F_);
    if (bias_on_ && bias_.grad.defined()) {
      std::vector<double> s(size_t(U_), 0.0);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t u = 0; u < U_; ++u) s[size_t(u)] += dy[r * U_ + u];
      for (int64_t u = 0; u < U_; ++u) bias_.grad.f32()[u] += float(s[size_t(u)]);
    }
    if (din[0])
      sgemm(false, false, R, F_, U_, 1.f, dy, U_, weight_.value.f32(), F_, 1.f, din[0]->f32(), F_);
  }

 private:
  int64_t T_, F_, U_;
  bool bias_on_;
  Param weight_, bias_;
};

int64_t last_step_index(const Shape& s, const Attrs& attrs) {
  int64_t T = s[0];
  int64_t i = sdesc("LastStep").with_defaults(attrs).i("index");
  int64_t k = i < 0 ? T + i : i;
  if (k < 0 || k >= T)
    throw ShapeError("index " + std::to_string(i) + " is outside the sequence's " +
                     std::to_string(T) + " steps (use 0 to " + std::to_string(T - 1) +
                     ", or -1 for the last)");
  return k;
}

class LastStep : public Layer {
 public:
  LastStep(int64_t T, int64_t F, int64_t k) : T_(T), F_(F), k_(k) {}
  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const int64_t N = in[0]->dim(0);
    for (int64_t n = 0; n < N; ++n) {
      const float* src = in[0]->f32() + (n * T_ + k_) * F_;
      std::copy(src, src + F_, out.f32() + n * F_);
    }
  }
  void backward(const std::vector<const Tensor*>& in, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext&) override {
    if (!din[0]) return;
    const int64_t N = in[0]->dim(0);
    for (int64_t n = 0; n < N; ++n) {
      float* dst = din[0]->f32() + (n * T_ + k_) * F_;
      const float* g = dout.f32() + n * F_;
      for (int64_t f = 0; f < F_; ++f) dst[f] += g[f];
    }
  }

 private:
  int64_t T_, F_, k_;
};

}  // namespace

void register_sequence_layers(LayerRegistry& r) {
  {
    LayerDescriptor d;
    d.type = "SequenceInput";
    d.category = "Input";
    d.help =
        "Where sequences enter the network: steps×features values, or steps token ids for an "
        "Embedding";
    d.attrs = {
        {"steps", AttrType::Int, int64_t{28}, 1, 1000000, {}, "Number of time steps"},
        {"features",
         AttrType::Int,
         int64_t{28},
         1,
         1000000,
         {},
         "Values per step (ignored for tokens)"},
        {"kind",
         AttrType::Enum,
         std::string("features"),
         -1e18,
         1e18,
         {"features", "tokens"},
         "features: steps×features numbers; tokens: one token id per step (feed an Embedding)"},
    };
    d.num_inputs = [](const Attrs&) { return 0; };
    d.infer = sequence_input_shape;
    d.cost = [](const std::vector<Shape>&, const Shape&, const Attrs&) { return Cost{}; };
    d.create = [](const Attrs&, const std::vector<Shape>&, const Shape&) {
      return std::unique_ptr<Layer>(new SequenceInput());
    };
    r.add(std::move(d));
  }
  {
    LayerDescriptor d;
    d.type = "TimeDistributedDense";
    d.category = "Recurrent";
    d.help = "The same fully connected layer applied at every step of a sequence";
    d.attrs = {
        {"units", AttrType::Int, int64_t{10}, 1, 1048576, {}, "Outputs per step"},
        {"bias", AttrType::Bool, true, -1e18, 1e18, {}, "Add a learnable bias per output"},
    };
    d.num_inputs = [](const Attrs&) { return 1; };
    d.infer = [](const std::vector<Shape>& in, const Attrs& attrs) {
      Shape s = expect_sequence(in, "use Dense for a single vector");
      const int64_t units = sdesc("TimeDistributedDense").with_defaults(attrs).i("units");
      checked_product(std::vector<int64_t>{units, s[1]}, "the weight (units×features)");
      return Shape{s[0], units};
    };
    d.cost = [](const std::vector<Shape>& in, const Shape& out, const Attrs& attrs) {
      bool b = sdesc("TimeDistributedDense").with_defaults(attrs).b("bias");
      int64_t F = in[0][1], U = out[1];
      return Cost{U * F + (b ? U : 0), checked_mul(in[0][0], U * F, "the multiply-accumulates")};
    };
    d.create = [](const Attrs& attrs, const std::vector<Shape>& in, const Shape& out) {
      bool b = sdesc("TimeDistributedDense").with_defaults(attrs).b("bias");
      return std::unique_ptr<Layer>(new TimeDistributedDense(in[0][0], in[0][1], out[1], b));
    };
    r.add(std::move(d));
  }
  {
    LayerDescriptor d;
    d.type = "LastStep";
    d.category = "Recurrent";
    d.help = "One step of a sequence (by default the last): time×features becomes features";
    d.attrs = {
        {"index",
         AttrType::Int,
         int64_t{-1},
         -1000000,
         1000000,
         {},
         "Which step: 0 is the first, -1 the last, -2 the one before it"},
    };
    d.num_inputs = [](const Attrs&) { return 1; };
    d.infer = [](const std::vector<Shape>& in, const Attrs& a) {
      Shape s = expect_sequence(in, "it picks one step of a sequence");
      last_step_index(s, a);
      return Shape{s[1]};
    };
    d.cost = [](const std::vector<Shape>&, const Shape&, const Attrs&) { return Cost{}; };
    d.create = [](const Attrs& a, const std::vector<Shape>& in, const Shape&) {
      return std::unique_ptr<Layer>(new LastStep(in[0][0], in[0][1], last_step_index(in[0], a)));
    };
    r.add(std::move(d));
  }
}

}  // namespace dc
