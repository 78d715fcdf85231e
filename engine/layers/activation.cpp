// Activations: ReLU, ReLU6, LeakyReLU, Sigmoid, Tanh, GELU, SiLU, HardSwish,
// HardSigmoid and Softmax.
//
// libm's expf/erff/tanhf are opaque calls that keep GCC from vectorising the
// loops (glibc only exposes its vector variants under -ffast-math), so exp is
// written out here as branch-free float code the compiler turns into AVX2.
// Sigmoid, Tanh and GELU are built on it with formulas that keep a small
// RELATIVE error everywhere, tails included (see each one).
#include <deepcanvas/errors.h>
#include <deepcanvas/parallel.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "builtin.h"

namespace dc {
namespace {

// Elements per parallel chunk: below this, thread start-up costs more than
// the loop.
constexpr int64_t kGrain = 1 << 14;

// Cephes' expf: e^x = 2^n e^r with |r| <= ln2/2, a degree-6 polynomial for
// e^r (about 1 ulp) and 2^n built in the exponent bits. The clamp keeps 2^n a
// normal float; NaN passes the clamp and poisons the polynomial, so it
// propagates.
inline float fast_exp(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  float n = std::floor(x * 1.44269504088896341f + 0.5f);
  float r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  // Converting NaN to an integer is undefined (UBSan reports it); any
  // exponent will do then, since p is already NaN.
  const int32_t e = n == n ? static_cast<int32_t>(n) : 0;
  uint32_t bits = static_cast<uint32_t>(e + 127) << 23;
  return p * std::bit_cast<float>(bits);
}

inline float sigmoid(float x) {
  return 1.0f / (1.0f + fast_exp(-x));
}

// 1 - 2/(e^{2|x|} + 1) loses relative accuracy near 0 (it subtracts nearly
// equal numbers), so below 0.5 the odd Taylor series is used instead; its
// first omitted term is under 1e-8 there.
inline float tanh_f(float x) {
  float a = std::fabs(x);
  float big = 1.0f - 2.0f / (fast_exp(2.0f * a) + 1.0f);
  float z = x * x;
  float p = -929569.0f / 638512875.0f;
  p = p * z + 21844.0f / 6081075.0f;
  p = p * z - 1382.0f / 155925.0f;
  p = p * z + 62.0f / 2835.0f;
  p = p * z - 17.0f / 315.0f;
  p = p * z + 2.0f / 15.0f;
  p = p * z - 1.0f / 3.0f;
  float small = a + a * z * p;
  return std::copysign(a < 0.5f ? small : big, x);
}

// Phi(x), the standard normal CDF, as 0.5*erfc(-x/sqrt2) with Numerical
// Recipes' erfc (relative error < 1.2e-7 for all arguments). Going through
// erfc rather than 1 + erf keeps GELU accurate for negative x, where Phi is
// tiny and 1 + erf(x) would cancel.
inline float normal_cdf(float x) {
  float z = std::fabs(x) * 0.70710678118654752f;
  float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  float half_erfc = 0.5f * t * fast_exp(p - z * z);
  return x > 0.0f ? 1.0f - half_erfc : half_erfc;
}

inline float normal_pdf(float x) {
  return 0.398942280401432678f * fast_exp(-0.5f * x * x);
}

// Each op gives f(x) and f'(x) from the input x and/or the output y; the
// loops below are instantiated per op so everything inlines and vectorises.
struct ReluOp {
  static constexpr bool kNeedsOutput = true;
  // std::max(x, 0) rather than x > 0 ? x : 0 so NaN stays NaN (as in PyTorch).
  float f(float x) const { return std::max(x, 0.0f); }
  // y > 0 exactly when x > 0, so the output is enough.
  float df(float, float y) const { return y > 0.0f ? 1.0f : 0.0f; }
};

// min(max(x, 0), 6), torch.nn.ReLU6: MobileNet's and EfficientNet-Lite's
// activation (ONNX Clip(0, 6)), bounded so it quantises well.
struct Relu6Op {
  static constexpr bool kNeedsOutput = true;
  // NaN stays NaN, as in PyTorch's hardtanh.
  float f(float x) const { return x != x ? x : std::min(std::max(x, 0.0f), 6.0f); }
  // Gradient 1 strictly inside (0, 6), as PyTorch's hardtanh_backward.
  float df(float, float y) const { return y > 0.0f && y < 6.0f ? 1.0f : 0.0f; }
};

struct LeakyReluOp {
  static constexpr bool kNeedsOutput = true;
  float slope = 0.01f;
  float f(float x) const { return x > 0.0f ? x : x * slope; }
  float df(float, float y) const { return y > 0.0f ? 1.0f : slope; }
};

struct SigmoidOp {
  static constexpr bool kNeedsOutput = true;
  float f(float x) const { return sigmoid(x); }
  float df(float, float y) const { return y * (1.0f - y); }
};

struct TanhOp {
  static constexpr bool kNeedsOutput = true;
  float f(float x) const { return tanh_f(x); }
  float df(float, float y) const { return 1.0f - y * y; }
};

// The exact (erf) GELU, PyTorch's default approximate='none'.
struct GeluOp {
  static constexpr bool kNeedsOutput = false;
  float f(float x) const { return x * normal_cdf(x); }
  float df(float x, float) const { return normal_cdf(x) + x * normal_pdf(x); }
};

// x·sigmoid(x), torch.nn.SiLU (Swish): EfficientNet's activation.
struct SiluOp {
  static constexpr bool kNeedsOutput = false;
  float f(float x) const { return x * sigmoid(x); }
  float df(float x, float) const {
    const float s = sigmoid(x);
    return s * (1.0f + x * (1.0f - s));
  }
};

// min(max(x + 3, 0), 6) / 6, torch.nn.Hardsigmoid: MobileNetV3's gate (ONNX
// HardSigmoid with alpha 1/6, beta 0.5).
struct HardSigmoidOp {
  static constexpr bool kNeedsOutput = false;
  // NaN stays NaN, as in PyTorch.
  float f(float x) const {
    return x != x ? x : std::min(std::max(x + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
  }
  // 1/6 strictly inside (-3, 3), as PyTorch's hardsigmoid_backward.
  float df(float x, float) const { return x > -3.0f && x < 3.0f ? 1.0f / 6.0f : 0.0f; }
};

// x·min(max(x + 3, 0), 6) / 6, torch.nn.Hardswish: MobileNetV3's activation.
struct HardSwishOp {
  static constexpr bool kNeedsOutput = false;
  float f(float x) const {
    return x != x ? x : x * std::min(std::max(x + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
  }
  // PyTorch's hardswish_backward: 0 below -3, x/3 + 1/2 on [-3, 3], 1 above.
  float df(float x, float) const {
    return x < -3.0f ? 0.0f : x <= 3.0f ? x * (1.0f / 3.0f) + 0.5f : 1.0f;
  }
};

template <class Op>
class Pointwise : public Layer {
 public:
  explicit Pointwise(Op op = {}) : op_(op) {}

  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const float* x = in[0]->f32();
    float* y = out.f32();
    const Op op = op_;
    parallel_for(out.numel(), kGrain, [x, y, op](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = op.f(x[i]);
    });
  }

  void backward(const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext& ctx) override {
    if (!din[0]) return;
    const float* x = in[0]->f32();
    const float* y = out.f32();
    const float* dy = dout.f32();
    float* dx = din[0]->f32();
    const Op op = op_;
    if (ctx.fresh(0)) {
      parallel_for(dout.numel(), kGrain, [x, y, dy, dx, op](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) dx[i] = dy[i] * op.df(x[i], y[i]);
      });
      return;
    }
    parallel_for(dout.numel(), kGrain, [x, y, dy, dx, op](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dx[i] += dy[i] * op.df(x[i], y[i]);
    });
  }

  bool overwrites_din() const override { return true; }

  bool backward_needs_output() const override { return Op::kNeedsOutput; }

 private:
  Op op_;
};

// Softmax over the last per-sample dimension: each run of `len` contiguous
// values is one distribution.
class Softmax : public Layer {
 public:
  explicit Softmax(int64_t len) : len_(len) {}

  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const int64_t L = len_, rows = out.numel() / L;
    const float* x = in[0]->f32();
    float* y = out.f32();
    parallel_for(rows, std::max<int64_t>(1, kGrain / L), [=](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const float* xr = x + r * L;
        float* yr = y + r * L;
        // Subtracting the maximum keeps every exponent <= 0: no overflow.
        float m = xr[0];
        for (int64_t i = 1; i < L; ++i) m = std::max(m, xr[i]);
        for (int64_t i = 0; i < L; ++i) yr[i] = fast_exp(xr[i] - m);
        double s = 0;
        for (int64_t i = 0; i < L; ++i) s += yr[i];
        const float inv = float(1.0 / s);
        for (int64_t i = 0; i < L; ++i) yr[i] *= inv;
      }
    });
  }

  // dx = y * (dy - sum(dy * y)), the Jacobian-vector product of softmax.
  void backward(const std::vector<const Tensor*>&, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext&) override {
    if (!din[0]) return;
    const int64_t L = len_, rows = out.numel() / L;
    const float* y = out.f32();
    const float* dy = dout.f32();
    float* dx = din[0]->f32();
    parallel_for(rows, std::max<int64_t>(1, kGrain / L), [=](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const float* yr = y + r * L;
        const float* dyr = dy + r * L;
        float* dxr = dx + r * L;
        double dot = 0;
        for (int64_t i = 0; i < L; ++i) dot += double(dyr[i]) * yr[i];
        const float d = float(dot);
        for (int64_t i = 0; i < L; ++i) dxr[i] += yr[i] * (dyr[i] - d);
      }
    });
  }

  bool backward_needs_output() const override { return true; }

 private:
  int64_t len_;
};

Shape same_shape(const std::vector<Shape>& in, const Attrs&) {
  if (in.size() != 1) throw ShapeError("expects exactly one input");
  if (in[0].rank() == 0) throw ShapeError("expects an input with at least one dimension");
  return in[0];
}

LayerDescriptor activation_desc(const std::string& type, const std::string& help) {
  LayerDescriptor d;
  d.type = type;
  d.category = "Activation";
  d.help = help;
  d.num_inputs = [](const Attrs&) { return 1; };
  d.infer = same_shape;
  d.cost = [](const std::vector<Shape>&, const Shape&, const Attrs&) { return Cost{}; };
  return d;
}

template <class Op>
LayerDescriptor pointwise_desc(const std::string& type, const std::string& help) {
  LayerDescriptor d = activation_desc(type, help);
  d.create = [](const Attrs&, const std::vector<Shape>&, const Shape&) {
    return std::unique_ptr<Layer>(new Pointwise<Op>());
  };
  return d;
}

}  // namespace

void register_activation_layers(LayerRegistry& r) {
  r.add(pointwise_desc<ReluOp>("ReLU", "max(x, 0): the usual choice after Conv2D and Dense"));
  r.add(pointwise_desc<Relu6Op>(
      "ReLU6", "min(max(x, 0), 6): ReLU capped at 6, as in MobileNet (like torch.nn.ReLU6)"));

  LayerDescriptor leaky = activation_desc(
      "LeakyReLU", "x for x > 0, slope·x otherwise: like ReLU but keeps a small gradient");
  leaky.attrs = {
      {"slope", AttrType::Float, 0.01, 0, 1, {}, "Multiplier for negative inputs"},
  };
  leaky.create = [](const Attrs& attrs, const std::vector<Shape>&, const Shape&) {
    Attrs a = LayerRegistry::instance().get("LeakyReLU").with_defaults(attrs);
    return std::unique_ptr<Layer>(new Pointwise<LeakyReluOp>(LeakyReluOp{float(a.f("slope"))}));
  };
  r.add(std::move(leaky));

  r.add(pointwise_desc<SigmoidOp>("Sigmoid", "1 / (1 + e^-x): squashes values into (0, 1)"));
  r.add(pointwise_desc<TanhOp>("Tanh", "Hyperbolic tangent: squashes values into (-1, 1)"));
  r.add(pointwise_desc<GeluOp>(
      "GELU", "x·Φ(x), a smooth ReLU used in transformers (exact form, like torch.nn.GELU)"));

  r.add(pointwise_desc<SiluOp>(
      "SiLU",
      "x·sigmoid(x) (Swish): a smooth ReLU, EfficientNet's activation (like torch.nn.SiLU)"));
  r.add(pointwise_desc<HardSwishOp>(
      "HardSwish",
      "x·ReLU6(x + 3)/6: a cheap SiLU, MobileNetV3's activation (like torch.nn.Hardswish)"));
  r.add(pointwise_desc<HardSigmoidOp>(
      "HardSigmoid",
      "ReLU6(x + 3)/6: a cheap sigmoid, as in MobileNetV3's squeeze-and-excitation gate (like "
      "torch.nn.Hardsigmoid)"));

  LayerDescriptor sm = activation_desc(
      "Softmax",
      "Turns scores into probabilities over the last dimension. Not needed before the "
      "softmax_cross_entropy loss, which applies it itself");
  sm.create = [](const Attrs&, const std::vector<Shape>& in, const Shape&) {
    return std::unique_ptr<Layer>(new Softmax(in.at(0)[in.at(0).rank() - 1]));
  };
  r.add(std::move(sm));
}

}  // namespace dc
