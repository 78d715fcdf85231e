// What a Transformer needs around attention (issue 33): ImageToTokens (a
// [C, H, W] feature map, e.g. a patch Conv2D's, as H·W tokens of C
// features), PositionalEmbedding (a learned or sinusoidal position signal
// added to every token), ClassToken (prepends one learned token) and
// TokenPooling (a sequence to one vector: the mean of its tokens, or its
// first). Sequences are [N, T, E], batch first, as everywhere here.
#include <deepcanvas/errors.h>
#include <deepcanvas/memstats.h>
#include <deepcanvas/rng.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "builtin.h"

namespace dc {
namespace {

const LayerDescriptor& tdesc(const char* type) {
  return LayerRegistry::instance().get(type);
}

Shape one_sequence(const std::vector<Shape>& in, const char* hint) {
  if (in.size() != 1) throw ShapeError("expects exactly one input");
  if (in[0].rank() != 2)
    throw ShapeError("expects a sequence of tokens (steps×features) but got " + in[0].str() + "; " +
                     hint);
  return in[0];
}

// The same tokens, position p of channel c at [p, c]: torch's
// x.flatten(2).transpose(1, 2).
class ImageToTokens : public Layer {
 public:
  ImageToTokens(int64_t C, int64_t P) : C_(C), P_(P) {}
  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const int64_t N = in[0]->dim(0);
    const float* x = in[0]->f32();
    float* y = out.f32();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C_; ++c)
        for (int64_t p = 0; p < P_; ++p) y[(n * P_ + p) * C_ + c] = x[(n * C_ + c) * P_ + p];
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext&) override {
    if (!din[0]) return;
    const int64_t N = dout.dim(0);
    const float* dy = dout.f32();
    float* dx = din[0]->f32();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C_; ++c)
        for (int64_t p = 0; p < P_; ++p) dx[(n * C_ + c) * P_ + p] += dy[(n * P_ + p) * C_ + c];
  }

 private:
  int64_t C_, P_;
};

// x + pos, pos [T, E]: learned (trained, starting from N(0, 0.02) as ViT's)
// or the fixed sinusoids of "Attention Is All You Need" (a buffer, not
// trained: sin at even features, cos at odd ones).
class PositionalEmbedding : public Layer {
 public:
  PositionalEmbedding(int64_t T, int64_t E, bool learned) : T_(T), E_(E), learned_(learned) {
    table_.name = learned ? "weight" : "table";
    table_.value = Tensor(Shape{T, E});
    table_.trainable = learned;
    table_.decay = false;
    if (learned) table_.grad = Tensor(Shape{T, E});
    if (!learned) fill_sinusoids();
  }
  std::vector<Param*> params() override { return {&table_}; }
  void init(Rng& rng) override {
    if (!learned_) return fill_sinusoids();
    // Box–Muller from the layer's generator: N(0, 0.02²).
    float* w = table_.value.f32();
    for (int64_t i = 0; i < table_.value.numel(); ++i) {
      const float u1 = std::max(rng.uniform(), 1e-7f), u2 = rng.uniform();
      w[i] = 0.02f * std::sqrt(-2.f * std::log(u1)) * std::cos(6.2831853f * u2);
    }
  }
  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const int64_t N = in[0]->dim(0), TE = T_ * E_;
    const float* x = in[0]->f32();
    const float* p = table_.value.f32();
    float* y = out.f32();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < TE; ++i) y[n * TE + i] = x[n * TE + i] + p[i];
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext&) override {
    const int64_t N = dout.dim(0), TE = T_ * E_;
    const float* dy = dout.f32();
    if (din[0])
      for (int64_t i = 0; i < N * TE; ++i) din[0]->f32()[i] += dy[i];
    if (!learned_ || !table_.grad.defined()) return;
    add_column_sums(dy, N, TE, TE, table_.grad.f32());
  }

 private:
  void fill_sinusoids() {
    float* w = table_.value.f32();
    for (int64_t t = 0; t < T_; ++t)
      for (int64_t e = 0; e < E_; ++e) {
        const double angle = double(t) / std::pow(10000.0, double(e - e % 2) / double(E_));
        w[t * E_ + e] = float(e % 2 == 0 ? std::sin(angle) : std::cos(angle));
      }
  }
  int64_t T_, E_;
  bool learned_;
  Param table_;
};

// [T, E] -> [T + 1, E]: a learned token (ViT's "class token") first.
class ClassToken : public Layer {
 public:
  ClassToken(int64_t T, int64_t E) : T_(T), E_(E) {
    token_.name = "token";
    token_.value = Tensor(Shape{E});
    token_.grad = Tensor(Shape{E});
    token_.trainable = true;
    token_.decay = false;
  }
  std::vector<Param*> params() override { return {&token_}; }
  void init(Rng& rng) override {
    for (int64_t i = 0; i < E_; ++i) token_.value.f32()[i] = rng.uniform(-0.02f, 0.02f);
  }
  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const int64_t N = in[0]->dim(0), TE = T_ * E_, OE = TE + E_;
    const float* x = in[0]->f32();
    float* y = out.f32();
    for (int64_t n = 0; n < N; ++n) {
      std::copy(token_.value.f32(), token_.value.f32() + E_, y + n * OE);
      std::copy(x + n * TE, x + (n + 1) * TE, y + n * OE + E_);
    }
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext&) override {
    const int64_t N = dout.dim(0), TE = T_ * E_, OE = TE + E_;
    const float* dy = dout.f32();
    if (din[0])
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < TE; ++i) din[0]->f32()[n * TE + i] += dy[n * OE + E_ + i];
    if (!token_.grad.defined()) return;
    add_column_sums(dy, N, E_, OE, token_.grad.f32());  // each sample's first row
  }

 private:
  int64_t T_, E_;
  Param token_;
};

// [T, E] -> [E]: the mean over the tokens, or the first token (where a
// ClassToken put its summary).
class TokenPooling : public Layer {
 public:
  TokenPooling(int64_t T, int64_t E, bool first) : T_(T), E_(E), first_(first) {}
  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const int64_t N = in[0]->dim(0);
    const float* x = in[0]->f32();
    float* y = out.f32();
    for (int64_t n = 0; n < N; ++n) {
      const float* xs = x + n * T_ * E_;
      if (first_) {
        std::copy(xs, xs + E_, y + n * E_);
        continue;
      }
      for (int64_t e = 0; e < E_; ++e) {
        double s = 0;
        for (int64_t t = 0; t < T_; ++t) s += xs[t * E_ + e];
        y[n * E_ + e] = float(s / double(T_));
      }
    }
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext&) override {
    if (!din[0]) return;
    const int64_t N = dout.dim(0);
    const float* dy = dout.f32();
    float* dx = din[0]->f32();
    const float k = first_ ? 1.f : 1.f / float(T_);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t t = 0; t < (first_ ? 1 : T_); ++t)
        for (int64_t e = 0; e < E_; ++e) dx[(n * T_ + t) * E_ + e] += dy[n * E_ + e] * k;
  }

 private:
  int64_t T_, E_;
  bool first_;
};

LayerDescriptor image_to_tokens() {
  LayerDescriptor d;
  d.type = "ImageToTokens";
  d.category = "Attention";
  d.help =
      "Turns a feature map (channels×height×width) into a sequence of height·width tokens of "
      "'channels' features; after a Conv2D with kernel = stride = patch size, the patches of a "
      "Vision Transformer";
  d.num_inputs = [](const Attrs&) { return 1; };
  d.infer = [](const std::vector<Shape>& in, const Attrs&) {
    if (in.size() != 1) throw ShapeError("expects exactly one input");
    if (in[0].rank() != 3)
      throw ShapeError("expects a feature map (channels×height×width) but got " + in[0].str());
    return Shape{in[0][1] * in[0][2], in[0][0]};
  };
  d.cost = [](const std::vector<Shape>&, const Shape&, const Attrs&) { return Cost{}; };
  d.create = [](const Attrs&, const std::vector<Shape>& in, const Shape&) {
    return std::unique_ptr<Layer>(new ImageToTokens(in[0][0], in[0][1] * in[0][2]));
  };
  return d;
}

LayerDescriptor positional_embedding() {
  LayerDescriptor d;
  d.type = "PositionalEmbedding";
  d.category = "Attention";
  d.help =
      "Adds a position signal to every token, so attention can tell the order: learned (one "
      "vector per position) or sinusoidal (fixed)";
  d.attrs = {{"kind",
              AttrType::Enum,
              std::string("learned"),
              -1e18,
              1e18,
              {"learned", "sinusoidal"},
              "learned: trained with the network; sinusoidal: the fixed sines and cosines of the "
              "original Transformer"}};
  d.num_inputs = [](const Attrs&) { return 1; };
  d.infer = [](const std::vector<Shape>& in, const Attrs&) {
    return one_sequence(in, "put ImageToTokens or an Embedding before it");
  };
  d.cost = [](const std::vector<Shape>& in, const Shape&, const Attrs& a) {
    const bool learned = tdesc("PositionalEmbedding").with_defaults(a).s("kind") == "learned";
    return Cost{learned ? in[0].numel() : 0, 0};
  };
  d.create = [](const Attrs& attrs, const std::vector<Shape>& in, const Shape&) {
    const Attrs a = tdesc("PositionalEmbedding").with_defaults(attrs);
    return std::unique_ptr<Layer>(
        new PositionalEmbedding(in[0][0], in[0][1], a.s("kind") == "learned"));
  };
  return d;
}

LayerDescriptor class_token() {
  LayerDescriptor d;
  d.type = "ClassToken";
  d.category = "Attention";
  d.help =
      "Puts one learned token before the sequence (a Vision Transformer's class token); "
      "TokenPooling 'first' reads it out at the end";
  d.num_inputs = [](const Attrs&) { return 1; };
  d.infer = [](const std::vector<Shape>& in, const Attrs&) {
    const Shape s = one_sequence(in, "put ImageToTokens or an Embedding before it");
    return Shape{s[0] + 1, s[1]};
  };
  d.cost = [](const std::vector<Shape>& in, const Shape&, const Attrs&) {
    return Cost{in[0][1], 0};
  };
  d.create = [](const Attrs&, const std::vector<Shape>& in, const Shape&) {
    return std::unique_ptr<Layer>(new ClassToken(in[0][0], in[0][1]));
  };
  return d;
}

LayerDescriptor token_pooling() {
  LayerDescriptor d;
  d.type = "TokenPooling";
  d.category = "Attention";
  d.help = "One vector from a sequence of tokens: their mean, or the first token";
  d.attrs = {{"mode",
              AttrType::Enum,
              std::string("mean"),
              -1e18,
              1e18,
              {"mean", "first"},
              "mean: average every token; first: the first token (after a ClassToken)"}};
  d.num_inputs = [](const Attrs&) { return 1; };
  d.infer = [](const std::vector<Shape>& in, const Attrs&) {
    return Shape{one_sequence(in, "it pools the tokens of a sequence")[1]};
  };
  d.cost = [](const std::vector<Shape>&, const Shape&, const Attrs&) { return Cost{}; };
  d.create = [](const Attrs& attrs, const std::vector<Shape>& in, const Shape&) {
    const Attrs a = tdesc("TokenPooling").with_defaults(attrs);
    return std::unique_ptr<Layer>(new TokenPooling(in[0][0], in[0][1], a.s("mode") == "first"));
  };
  return d;
}

}  // namespace

void register_token_layers(LayerRegistry& r) {
  r.add(image_to_tokens());
  r.add(positional_embedding());
  r.add(class_token());
  r.add(token_pooling());
}

}  // namespace dc
