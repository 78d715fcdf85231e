// MultiHeadAttention, matching torch.nn.MultiheadAttention(E, heads,
// batch_first=True) weight for weight: self-attention over one sequence
// [T, E], or cross-attention with queries from input 0 and keys and values
// from input 1 [S, E]. The parameters are PyTorch's, named without the dot
// of "out_proj.weight" (a dot separates a layer from its parameter in every
// checkpoint name here): in_proj_weight [3E, E] (query, key and value rows),
// in_proj_bias [3E], out_proj_weight [E, E], out_proj_bias [E].
//
// The projections are one GEMM each over the whole batch; the per-head
// products are GEMMs on strided views of them, run one (sample, head) after
// another so that the library's own threads do the work and results do not
// depend on the thread count. The attention weights P [N, heads, T, S]
// are kept for backward: the T² memory term the advisor counts.
#include <deepcanvas/errors.h>
#include <deepcanvas/memstats.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/rng.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "builtin.h"

namespace dc {
namespace {

struct AttnGeom {
  int64_t T = 0, S = 0, E = 0, H = 1, D = 0;  // queries, keys, embedding, heads, head size
  bool cross = false, causal = false, bias = true;
  double dropout = 0;
};

class MultiHeadAttention : public Layer {
 public:
  explicit MultiHeadAttention(const AttnGeom& g) : g_(g) {
    auto make = [&](Param& p, const char* name, Shape s, bool decay) {
      p.name = name;
      p.value = Tensor(s);
      p.grad = Tensor(s);
      p.trainable = true;
      p.decay = decay;
    };
    make(in_w_, "in_proj_weight", Shape{3 * g.E, g.E}, true);
    make(out_w_, "out_proj_weight", Shape{g.E, g.E}, true);
    if (g.bias) {
      make(in_b_, "in_proj_bias", Shape{3 * g.E}, false);
      make(out_b_, "out_proj_bias", Shape{g.E}, false);
    }
  }

  std::vector<Param*> params() override {
    if (g_.bias) return {&in_w_, &in_b_, &out_w_, &out_b_};
    return {&in_w_, &out_w_};
  }

  // PyTorch's: Xavier-uniform in_proj_weight, out_proj's Linear default
  // U(-1/sqrt(E), 1/sqrt(E)), both biases zero.
  void init(Rng& rng) override {
    const float a = std::sqrt(6.f / float(g_.E + 3 * g_.E));
    for (int64_t i = 0; i < in_w_.value.numel(); ++i) in_w_.value.f32()[i] = rng.uniform(-a, a);
    const float b = 1.f / std::sqrt(float(g_.E));
    for (int64_t i = 0; i < out_w_.value.numel(); ++i) out_w_.value.f32()[i] = rng.uniform(-b, b);
    if (g_.bias) {
      in_b_.value.zero();
      out_b_.value.zero();
    }
  }

  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext& ctx) override {
    const AttnGeom& g = g_;
    const int64_t N = in[0]->dim(0), E = g.E, T = g.T, S = g.S, H = g.H, D = g.D;
    const float* xq = in[0]->f32();
    const float* xk = g.cross ? in[1]->f32() : xq;
    q_.resize(size_t(N * T * E));
    k_.resize(size_t(N * S * E));
    v_.resize(size_t(N * S * E));
    o_.resize(size_t(N * T * E));
    p_.resize(size_t(N * H * T * S));
    project(xq, N * T, 0, q_.data());
    project(xk, N * S, 1, k_.data());
    project(xk, N * S, 2, v_.data());
    const bool drop = ctx.training && g.dropout > 0;
    if (drop) mask_.resize(p_.size());
    const float keep_scale = drop ? float(1.0 / (1.0 - g.dropout)) : 1.f;
    const float scale = 1.f / std::sqrt(float(D));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t h = 0; h < H; ++h) {
        float* P = p_.data() + (n * H + h) * T * S;
        const float* Q = q_.data() + n * T * E + h * D;
        const float* K = k_.data() + n * S * E + h * D;
        const float* V = v_.data() + n * S * E + h * D;
        sgemm(false, true, T, S, D, scale, Q, E, K, E, 0.f, P, S);
        for (int64_t t = 0; t < T; ++t) softmax_row(P + t * S, g.causal ? std::min(S, t + 1) : S);
        // The weights that multiply V: P itself, or P with dropout (mask
        // kept for backward; P stays the softmax, which backward needs).
        const float* W = P;
        if (drop) {
          float* M = mask_.data() + (n * H + h) * T * S;
          drop_buf_.resize(size_t(T * S));
          for (int64_t i = 0; i < T * S; ++i) {
            M[i] = ctx.rng->uniform() >= float(g.dropout) ? keep_scale : 0.f;
            drop_buf_[size_t(i)] = P[i] * M[i];
          }
          W = drop_buf_.data();
        }
        sgemm(false, false, T, D, S, 1.f, W, S, V, E, 0.f, o_.data() + n * T * E + h * D, E);
      }
    float* y = out.f32();
    float beta = 0.f;
    if (g.bias) {
      const float* b = out_b_.value.f32();
      for (int64_t r = 0; r < N * T; ++r) std::copy(b, b + E, y + r * E);
      beta = 1.f;
    }
    sgemm(false, true, N * T, E, E, 1.f, o_.data(), E, out_w_.value.f32(), E, beta, y, E);
    dropped_ = drop;
  }

  void backward(const std::vector<const Tensor*>& in, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext&) override {
    const AttnGeom& g = g_;
    const int64_t N = in[0]->dim(0), E = g.E, T = g.T, S = g.S, H = g.H, D = g.D;
    const float* dy = dout.f32();
    const float* xq = in[0]->f32();
    const float* xk = g.cross ? in[1]->f32() : xq;
    const bool weights = in_w_.grad.defined();  // false for a frozen layer
    if (weights) {
      sgemm(true, false, E, E, N * T, 1.f, dy, E, o_.data(), E, 1.f, out_w_.grad.f32(), E);
      if (g.bias) add_column_sums(dy, N * T, E, E, out_b_.grad.f32());
    }
    // dO = dY·Wo, then per head dP = dO·Vᵀ, dV = Wᵀ·dO, dS = P ⊙ (dP − rowsum(dP ⊙ P)).
    // Tracked, as every buffer here, so a run's measured peak sees them.
    ScratchVec<float> dO(size_t(N * T * E)), dQ(size_t(N * T * E), 0.f), dK(size_t(N * S * E), 0.f),
        dV(size_t(N * S * E), 0.f), dP(size_t(T * S)), Wd(size_t(T * S));
    sgemm(false, false, N * T, E, E, 1.f, dy, E, out_w_.value.f32(), E, 0.f, dO.data(), E);
    const float scale = 1.f / std::sqrt(float(D));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t h = 0; h < H; ++h) {
        const float* P = p_.data() + (n * H + h) * T * S;
        const float* M = dropped_ ? mask_.data() + (n * H + h) * T * S : nullptr;
        const float* Q = q_.data() + n * T * E + h * D;
        const float* K = k_.data() + n * S * E + h * D;
        const float* V = v_.data() + n * S * E + h * D;
        const float* dOh = dO.data() + n * T * E + h * D;
        const float* W = P;
        if (M) {
          for (int64_t i = 0; i < T * S; ++i) Wd[size_t(i)] = P[i] * M[i];
          W = Wd.data();
        }
        sgemm(true, false, S, D, T, 1.f, W, S, dOh, E, 1.f, dV.data() + n * S * E + h * D, E);
        sgemm(false, true, T, S, D, 1.f, dOh, E, V, E, 0.f, dP.data(), S);
        for (int64_t t = 0; t < T; ++t) {
          float* dp = dP.data() + t * S;
          const float* p = P + t * S;
          if (M)
            for (int64_t s = 0; s < S; ++s) dp[s] *= M[t * S + s];
          double dot = 0;
          for (int64_t s = 0; s < S; ++s) dot += double(dp[s]) * p[s];
          for (int64_t s = 0; s < S; ++s) dp[s] = p[s] * (dp[s] - float(dot));
        }
        sgemm(false, false, T, D, S, scale, dP.data(), S, K, E, 1.f, dQ.data() + n * T * E + h * D,
              E);
        sgemm(true, false, S, D, T, scale, dP.data(), S, Q, E, 1.f, dK.data() + n * S * E + h * D,
              E);
      }
    // The projections' gradients: rows 0..E−1 of in_proj are the query's,
    // then the key's, then the value's.
    const float* w = in_w_.value.f32();
    const std::vector<const float*> dproj = {dQ.data(), dK.data(), dV.data()};
    for (int k = 0; k < 3; ++k) {
      const int64_t rows = k == 0 ? N * T : N * S;
      const float* x = k == 0 ? xq : xk;
      if (weights) {
        sgemm(true, false, E, E, rows, 1.f, dproj[size_t(k)], E, x, E, 1.f,
              in_w_.grad.f32() + k * E * E, E);
        if (g.bias) add_column_sums(dproj[size_t(k)], rows, E, E, in_b_.grad.f32() + k * E);
      }
      Tensor* dx = din[k == 0 || !g.cross ? 0 : 1];
      if (dx)
        sgemm(false, false, rows, E, E, 1.f, dproj[size_t(k)], E, w + k * E * E, E, 1.f, dx->f32(),
              E);
    }
  }

 private:
  // y[rows, E] = x·W_kᵀ + b_k for projection k (0 query, 1 key, 2 value).
  void project(const float* x, int64_t rows, int k, float* y) {
    const int64_t E = g_.E;
    float beta = 0.f;
    if (g_.bias) {
      const float* b = in_b_.value.f32() + k * E;
      for (int64_t r = 0; r < rows; ++r) std::copy(b, b + E, y + r * E);
      beta = 1.f;
    }
    sgemm(false, true, rows, E, E, 1.f, x, E, in_w_.value.f32() + k * E * E, E, beta, y, E);
  }

  // Softmax over the first `valid` entries of a row of S; the rest (keys a
  // causal mask hides) get weight 0.
  void softmax_row(float* p, int64_t valid) const {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t s = 0; s < valid; ++s) m = std::max(m, p[s]);
    double sum = 0;
    for (int64_t s = 0; s < valid; ++s) {
      p[s] = std::exp(p[s] - m);
      sum += p[s];
    }
    const float inv = float(1.0 / sum);
    for (int64_t s = 0; s < valid; ++s) p[s] *= inv;
    for (int64_t s = valid; s < g_.S; ++s) p[s] = 0.f;
  }

  AttnGeom g_;
  Param in_w_, in_b_, out_w_, out_b_;
  // From the last forward, for backward: projections, the heads' outputs,
  // the softmax weights and the dropout mask (scaled keep factors).
  ScratchVec<float> q_, k_, v_, o_, p_, mask_, drop_buf_;
  bool dropped_ = false;
};

AttnGeom geometry(const std::vector<Shape>& in, const Attrs& a) {
  const bool cross = a.s("mode") == "cross";
  if (in.size() != (cross ? 2u : 1u))
    throw ShapeError(cross ? "cross-attention takes two inputs: queries, then keys and values"
                           : "self-attention takes one input");
  for (const Shape& s : in)
    if (s.rank() != 2)
      throw ShapeError("expects a sequence (steps×features) but got " + s.str() +
                       "; put a Reshape or an embedding before it");
  AttnGeom g;
  g.cross = cross;
  g.T = in[0][0];
  g.E = in[0][1];
  g.S = cross ? in[1][0] : g.T;
  if (cross && in[1][1] != g.E)
    throw ShapeError("queries have " + std::to_string(g.E) + " features but keys and values " +
                     std::to_string(in[1][1]) + "; they must match");
  g.H = a.i("heads");
  if (g.E % g.H != 0)
    throw ShapeError(std::to_string(g.E) + " features do not split into " + std::to_string(g.H) +
                     " heads; use a number of heads that divides " + std::to_string(g.E));
  g.D = g.E / g.H;
  g.causal = a.b("causal");
  g.bias = a.b("bias");
  g.dropout = a.f("dropout");
  return g;
}

}  // namespace

void register_attention_layers(LayerRegistry& r) {
  LayerDescriptor d;
  d.type = "MultiHeadAttention";
  d.category = "Attention";
  d.help =
      "Each step attends to every step (self) or to a second sequence (cross) through several "
      "heads (like torch.nn.MultiheadAttention with batch_first=True)";
  d.attrs = {
      {"heads",
       AttrType::Int,
       int64_t(4),
       1,
       1024,
       {},
       "Attention heads; must divide the features"},
      {"mode",
       AttrType::Enum,
       std::string("self"),
       -1e18,
       1e18,
       {"self", "cross"},
       "self: one input; cross: queries from input 1, keys and values from input 2"},
      {"causal",
       AttrType::Bool,
       false,
       -1e18,
       1e18,
       {},
       "Each step sees only itself and earlier steps (for generating text)"},
      {"dropout",
       AttrType::Float,
       0.0,
       0,
       0.99,
       {},
       "Dropout on the attention weights in training"},
      {"bias", AttrType::Bool, true, -1e18, 1e18, {}, "Learn biases in the projections"},
  };
  d.num_inputs = [](const Attrs& a) { return a.s("mode") == "cross" ? 2 : 1; };
  d.infer = [](const std::vector<Shape>& in, const Attrs& a) {
    const AttnGeom g =
        geometry(in, LayerRegistry::instance().get("MultiHeadAttention").with_defaults(a));
    return Shape{g.T, g.E};
  };
  // Four E×E projections of T (queries) or S (keys, values) rows, and the
  // two T×S×E products of the heads.
  d.cost = [](const std::vector<Shape>& in, const Shape&, const Attrs& a) {
    const AttnGeom g =
        geometry(in, LayerRegistry::instance().get("MultiHeadAttention").with_defaults(a));
    const int64_t params = 4 * g.E * g.E + (g.bias ? 4 * g.E : 0);
    return Cost{params, 2 * g.T * g.E * g.E + 2 * g.S * g.E * g.E + 2 * g.T * g.S * g.E};
  };
  d.create = [](const Attrs& attrs, const std::vector<Shape>& in, const Shape&) {
    const Attrs a = LayerRegistry::instance().get("MultiHeadAttention").with_defaults(attrs);
    return std::unique_ptr<Layer>(new MultiHeadAttention(geometry(in, a)));
  };
  r.add(d);
}

}  // namespace dc
