// BatchNorm1D, BatchNorm2D and LayerNorm (below). BatchNorm matches torch.nn.BatchNorm*d: training
// normalises with the batch's biased variance and moves the running variance
// towards the unbiased one; evaluation uses the running statistics. The input
// is viewed as [N, C, S] (S = H*W, L or 1) and each channel is reduced on its
// own thread in a fixed order, in double, so results do not depend on the
// thread count.
#include <deepcanvas/errors.h>
#include <deepcanvas/memstats.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/rng.h>

#include <cmath>
#include <string>
#include <vector>

#include "builtin.h"
#include "fused_relu.h"
#include "lanes.h"

namespace dc {
namespace {

class BatchNorm : public Layer {
 public:
  BatchNorm(int64_t channels, int64_t spatial, double momentum, double eps)
      : C_(channels), S_(spatial), momentum_(momentum), eps_(eps) {
    Shape s{channels};
    auto make = [&](Param& p, const char* name, bool trainable) {
      p.name = name;
      p.value = Tensor(s);
      p.trainable = trainable;
      p.decay = false;  // norm scales and shifts are not weight-decayed
      if (trainable) p.grad = Tensor(s);
    };
    make(gamma_, "weight", true);
    make(beta_, "bias", true);
    make(running_mean_, "running_mean", false);
    make(running_var_, "running_var", false);
    reset();
  }

  std::vector<Param*> params() override { return {&gamma_, &beta_, &running_mean_, &running_var_}; }

  void init(Rng&) override { reset(); }

  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext& ctx) override {
    const int64_t N = in[0]->dim(0), C = C_, S = S_, M = N * S;
    const float* x = in[0]->f32();
    float* y = out.f32();
    mean_.resize(static_cast<size_t>(C));
    invstd_.resize(static_cast<size_t>(C));
    // A frozen BatchNorm is in its inference form even while the network
    // trains (as Keras' trainable=False): running statistics normalise and
    // are not updated, so a pretrained base keeps what it learned.
    training_ = ctx.training && !ctx.frozen;
    const float* g = gamma_.value.f32();
    const float* b = beta_.value.f32();
    float* rm = running_mean_.value.f32();
    float* rv = running_var_.value.f32();
    parallel_for(C, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        double mean, var;
        if (training_) {
          Lanes s;
          for (int64_t n = 0; n < N; ++n) {
            const float* p = x + (n * C + c) * S;
            const float* next = n + 1 < N ? p + C * S : p;
            s.add(
                S, [p](auto at) { return widen(at(p)); },
                [next](int64_t i) { __builtin_prefetch(next + i); });
          }
          mean = s.total() / double(M);
          Lanes sq;
          for (int64_t n = 0; n < N; ++n) {
            const float* p = x + (n * C + c) * S;
            sq.add(S, [p, mean](auto at) {
              const auto d = widen(at(p)) - mean;
              return d * d;
            });
          }
          const double q = sq.total();
          var = q / double(M);
          // A single value per channel carries no variance estimate; PyTorch
          // refuses it, we leave the running statistics untouched instead so
          // a last batch of one sample does not abort training.
          if (M > 1) {
            rm[c] = float((1.0 - momentum_) * rm[c] + momentum_ * mean);
            rv[c] = float((1.0 - momentum_) * rv[c] + momentum_ * q / double(M - 1));
          }
        } else {
          mean = rm[c];
          var = rv[c];
        }
        double inv = 1.0 / std::sqrt(var + eps_);
        mean_[c] = float(mean);
        invstd_[c] = float(inv);
        // Subtracting the mean first (rather than folding it into the
        // shift) avoids cancellation when the mean is large.
        // A fused ReLU is applied here, while the values are in registers:
        // its own pass would read and write the whole tensor again.
        const float m = float(mean), scale = float(inv * g[c]), shift = b[c], cap = relu_.cap;
        relu_.dispatch([&](auto a) {
          constexpr Act A = decltype(a)::value;
          for (int64_t n = 0; n < N; ++n) {
            const float* p = x + (n * C + c) * S;
            float* q = y + (n * C + c) * S;
            for (int64_t i = 0; i < S; ++i) q[i] = act<A>((p[i] - m) * scale + shift, cap);
          }
        });
      }
    });
  }

  bool fuse_relu(float cap) override { return relu_.fuse(cap); }

  bool overwrites_din() const override { return true; }

  void backward(const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext& ctx) override {
    const int64_t N = in[0]->dim(0), C = C_, S = S_, M = N * S;
    const float* x = in[0]->f32();
    const float* dy = dout.f32();
    // With a fused ReLU, dy is the ReLU's output gradient: each use masks
    // it by the output, so no masked copy is written and read back.
    const float* y = out.f32();
    float* dx = din[0] ? din[0]->f32() : nullptr;
    const bool fresh = ctx.fresh(0);
    const float* g = gamma_.value.f32();
    // Null for a frozen layer, whose plan released its gradients.
    float* dg = gamma_.grad.defined() ? gamma_.grad.f32() : nullptr;
    float* db = beta_.grad.defined() ? beta_.grad.f32() : nullptr;
    const float cap = relu_.cap;
    relu_.dispatch([&](auto a) {
      constexpr Act A = decltype(a)::value;
      parallel_for(C, 1, [&](int64_t cb, int64_t ce) {
        for (int64_t c = cb; c < ce; ++c) {
          const double mean = mean_[c], inv = invstd_[c];
          Lanes ldy, ldyx;  // sum(dy), sum(dy * (x - mean))
          for (int64_t n = 0; n < N; ++n) {
            const int64_t o = (n * C + c) * S;
            const float *d = dy + o, *p = x + o, *q = y + o;
            const int64_t next = n + 1 < N ? C * S : 0;
            ldy.add(
                S, [=](auto at) { return widen(at(d) * act_grad<A>(at(q), cap)); },
                [=](int64_t i) {
                  __builtin_prefetch(d + next + i);
                  __builtin_prefetch(p + next + i);
                  if (A != Act::None) __builtin_prefetch(q + next + i);
                });
            ldyx.add(S, [=](auto at) {
              return widen(at(d) * act_grad<A>(at(q), cap)) * (widen(at(p)) - mean);
            });
          }
          const double sdy = ldy.total(), sdyx = ldyx.total() * inv;  // sum(dy * xhat)
          if (dg) dg[c] += float(sdyx);
          if (db) db[c] += float(sdy);
          if (!dx) continue;
          const double k = g[c] * inv;
          // In training the batch statistics depend on x too, which removes
          // the mean of dy and its projection on xhat; in evaluation they are
          // constants.
          const float ka = float(k);
          const float b0 = training_ ? float(-k * sdy / double(M)) : 0.f;
          const float b1 = training_ ? float(-k * sdyx / double(M) * inv) : 0.f;
          const float m = float(mean);
          for (int64_t n = 0; n < N; ++n) {
            const int64_t o = (n * C + c) * S;
            const float *p = x + o, *d = dy + o, *q = y + o;
            float* r = dx + o;
            // A fresh dx is written, not added to: the plan then skips
            // zeroing it, a pass over the whole tensor.
            if (fresh) {
              for (int64_t i = 0; i < S; ++i)
                r[i] = ka * (d[i] * act_grad<A>(q[i], cap)) + b0 + b1 * (p[i] - m);
            } else {
              for (int64_t i = 0; i < S; ++i)
                r[i] += ka * (d[i] * act_grad<A>(q[i], cap)) + b0 + b1 * (p[i] - m);
            }
          }
        }
      });
    });
  }

 private:
  void reset() {
    gamma_.value.fill(1.f);
    beta_.value.zero();
    running_mean_.value.zero();
    running_var_.value.fill(1.f);
  }

  int64_t C_, S_;
  double momentum_, eps_;
  Param gamma_, beta_, running_mean_, running_var_;
  ScratchVec<float> mean_, invstd_;  // from the last forward, for backward
  bool training_ = true;
  FusedRelu relu_;  // the ReLU the plan fused into this layer, if any
};

std::vector<AttrSpec> bn_attrs() {
  return {
      {"momentum",
       AttrType::Float,
       0.1,
       0,
       1,
       {},
       "Weight of the current batch in the running statistics (PyTorch's convention)"},
      {"eps", AttrType::Float, 1e-5, 0, 1, {}, "Added to the variance for numerical stability"},
  };
}

// Channels and values per channel from the per-sample shape.
void bn_layout(const std::string& type, const Shape& s, int64_t& C, int64_t& S) {
  if (type == "BatchNorm2D") {
    if (s.rank() != 3)
      throw ShapeError("expects a 3-D input (channels×height×width) but got " + s.str() +
                       (s.rank() < 3 ? "; use BatchNorm1D for features or sequences" : ""));
    C = s[0];
    S = s[1] * s[2];
  } else {
    if (s.rank() != 1 && s.rank() != 2)
      throw ShapeError("expects features (F) or channels×length (C×L) but got " + s.str() +
                       (s.rank() == 3 ? "; use BatchNorm2D for images" : ""));
    C = s[0];
    S = s.rank() == 2 ? s[1] : 1;
  }
}

LayerDescriptor batch_norm(const std::string& type, const std::string& help) {
  LayerDescriptor d;
  d.type = type;
  d.category = "Normalization";
  d.help = help;
  d.attrs = bn_attrs();
  d.num_inputs = [](const Attrs&) { return 1; };
  d.infer = [type](const std::vector<Shape>& in, const Attrs&) {
    if (in.size() != 1) throw ShapeError("expects exactly one input");
    int64_t C, S;
    bn_layout(type, in[0], C, S);
    return in[0];
  };
  // After folding the statistics, one multiply-add per value.
  d.cost = [type](const std::vector<Shape>& in, const Shape&, const Attrs&) {
    int64_t C, S;
    bn_layout(type, in[0], C, S);
    return Cost{2 * C, C * S};
  };
  d.create = [type](const Attrs& attrs, const std::vector<Shape>& in, const Shape&) {
    Attrs a = LayerRegistry::instance().get(type).with_defaults(attrs);
    int64_t C, S;
    bn_layout(type, in[0], C, S);
    return std::unique_ptr<Layer>(new BatchNorm(C, S, a.f("momentum"), a.f("eps")));
  };
  return d;
}

// LayerNorm, matching torch.nn.LayerNorm(D) over the last dimension D of
// each sample (a feature vector, or each time step or token of a
// sequence): every row of D values is normalised by its own mean and biased
// variance, then scaled and shifted per position when affine. Rows are
// independent, so they run in parallel; each row's sums are in double over
// Lanes, so results do not depend on the thread count. The weight and bias
// gradients are sums over rows: they run in parallel over the D columns,
// each column's rows added in order, for the same reason.
class LayerNorm : public Layer {
 public:
  LayerNorm(int64_t D, double eps, bool affine) : D_(D), eps_(eps), affine_(affine) {
    if (!affine) return;
    auto make = [&](Param& p, const char* name, float v) {
      p.name = name;
      p.value = Tensor(Shape{D});
      p.value.fill(v);
      p.trainable = true;
      p.decay = false;  // norm scales and shifts are not weight-decayed
      p.grad = Tensor(Shape{D});
    };
    make(gamma_, "weight", 1.f);
    make(beta_, "bias", 0.f);
  }

  std::vector<Param*> params() override {
    if (!affine_) return {};
    return {&gamma_, &beta_};
  }

  void init(Rng&) override {
    if (!affine_) return;
    gamma_.value.fill(1.f);
    beta_.value.zero();
  }

  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const int64_t D = D_, R = in[0]->numel() / D;
    const float* x = in[0]->f32();
    float* y = out.f32();
    mean_.resize(static_cast<size_t>(R));
    invstd_.resize(static_cast<size_t>(R));
    const float* g = affine_ ? gamma_.value.f32() : nullptr;
    const float* b = affine_ ? beta_.value.f32() : nullptr;
    parallel_for(R, 16, [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        const float* p = x + r * D;
        Lanes s;
        s.add(D, [p](auto at) { return widen(at(p)); });
        const double mean = s.total() / double(D);
        Lanes sq;
        sq.add(D, [p, mean](auto at) {
          const auto d = widen(at(p)) - mean;
          return d * d;
        });
        const double inv = 1.0 / std::sqrt(sq.total() / double(D) + eps_);
        mean_[size_t(r)] = float(mean);
        invstd_[size_t(r)] = float(inv);
        const float m = float(mean), k = float(inv);
        float* q = y + r * D;
        if (g)
          for (int64_t i = 0; i < D; ++i) q[i] = (p[i] - m) * k * g[i] + b[i];
        else
          for (int64_t i = 0; i < D; ++i) q[i] = (p[i] - m) * k;
      }
    });
  }

  // With x̂ = (x − mean)·inv and g = dy·γ: dx = inv·(g − mean(g) − x̂·mean(g·x̂)).
  void backward(const std::vector<const Tensor*>& in, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext&) override {
    const int64_t D = D_, R = in[0]->numel() / D;
    const float* x = in[0]->f32();
    const float* dy = dout.f32();
    float* dx = din[0] ? din[0]->f32() : nullptr;
    const float* gam = affine_ ? gamma_.value.f32() : nullptr;
    // Null for a frozen layer, whose plan released its gradients.
    float* dg = affine_ && gamma_.grad.defined() ? gamma_.grad.f32() : nullptr;
    float* db = affine_ && beta_.grad.defined() ? beta_.grad.f32() : nullptr;
    if (dg || db)
      parallel_for(D, 16, [&](int64_t ib, int64_t ie) {
        for (int64_t i = ib; i < ie; ++i) {
          double sg = 0, sb = 0;
          for (int64_t r = 0; r < R; ++r) {
            const double d = dy[r * D + i];
            sg += d * (double(x[r * D + i]) - mean_[size_t(r)]) * invstd_[size_t(r)];
            sb += d;
          }
          if (dg) dg[i] += float(sg);
          if (db) db[i] += float(sb);
        }
      });
    if (!dx) return;
    parallel_for(R, 16, [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        const float* p = x + r * D;
        const float* d = dy + r * D;
        const double m = mean_[size_t(r)], inv = invstd_[size_t(r)];
        Lanes sg, sgx;  // sum(g), sum(g * x̂)
        auto g = [d, gam](auto at) { return gam ? widen(at(d)) * widen(at(gam)) : widen(at(d)); };
        sg.add(D, g);
        sgx.add(D, [g, p, m, inv](auto at) { return g(at) * (widen(at(p)) - m) * inv; });
        const float a = float(sg.total() / double(D)), c = float(sgx.total() / double(D));
        const float fm = float(m), fi = float(inv);
        float* o = dx + r * D;
        for (int64_t i = 0; i < D; ++i) {
          const float xh = (p[i] - fm) * fi;
          o[i] += fi * (d[i] * (gam ? gam[i] : 1.f) - a - xh * c);
        }
      }
    });
  }

 private:
  int64_t D_;
  double eps_;
  bool affine_;
  Param gamma_, beta_;
  ScratchVec<float> mean_, invstd_;  // per row, from the last forward
};

LayerDescriptor layer_norm() {
  LayerDescriptor d;
  d.type = "LayerNorm";
  d.category = "Normalization";
  d.help =
      "Normalises each sample's last dimension (each feature vector, or each step of a "
      "sequence) by its own mean and variance (like torch.nn.LayerNorm)";
  d.attrs = {
      {"eps", AttrType::Float, 1e-5, 0, 1, {}, "Added to the variance for numerical stability"},
      {"affine",
       AttrType::Bool,
       true,
       -1e18,
       1e18,
       {},
       "Learn a scale and a shift per position of the last dimension"},
  };
  d.num_inputs = [](const Attrs&) { return 1; };
  d.infer = [](const std::vector<Shape>& in, const Attrs&) {
    if (in.size() != 1) throw ShapeError("expects exactly one input");
    if (in[0].rank() < 1) throw ShapeError("expects at least one dimension to normalise");
    return in[0];
  };
  // Per value: the subtraction, the scale and, with affine, γ and β.
  d.cost = [](const std::vector<Shape>& in, const Shape&, const Attrs& a) {
    const bool affine = LayerRegistry::instance().get("LayerNorm").with_defaults(a).b("affine");
    const int64_t D = in[0][in[0].rank() - 1];
    return Cost{affine ? 2 * D : 0, in[0].numel() * (affine ? 2 : 1)};
  };
  d.create = [](const Attrs& attrs, const std::vector<Shape>& in, const Shape&) {
    Attrs a = LayerRegistry::instance().get("LayerNorm").with_defaults(attrs);
    return std::unique_ptr<Layer>(
        new LayerNorm(in[0][in[0].rank() - 1], a.f("eps"), a.b("affine")));
  };
  return d;
}

}  // namespace

void register_norm_layers(LayerRegistry& r) {
  r.add(batch_norm("BatchNorm2D",
                   "Normalises each channel over the batch and image (like torch.nn.BatchNorm2d)"));
  r.add(batch_norm("BatchNorm1D",
                   "Normalises each feature (F) or channel (C×L) over the batch (like "
                   "torch.nn.BatchNorm1d)"));
  r.add(layer_norm());
}

}  // namespace dc
