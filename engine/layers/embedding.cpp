// Embedding (torch.nn.Embedding): token ids [N, T] (stored as floats, as
// every activation is) to vectors [N, T, dim]. weight is [vocab, dim], drawn
// from N(0, 1) as PyTorch does; the padding row starts at zero and never
// receives a gradient.
#include <deepcanvas/checked.h>
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

struct EmbGeom {
  int64_t T = 0, V = 0, D = 0, pad = -1;
};

EmbGeom emb_geom(const std::vector<Shape>& in, const Attrs& attrs) {
  if (in.size() != 1) throw ShapeError("expects exactly one input");
  if (in[0].rank() != 1)
    throw ShapeError("expects one token id per step (a 1-D input of steps) but got " + in[0].str() +
                     "; feed it from a SequenceInput whose kind is tokens");
  Attrs a = LayerRegistry::instance().get("Embedding").with_defaults(attrs);
  EmbGeom g;
  g.T = in[0][0];
  g.V = a.i("vocab_size");
  g.D = a.i("dim");
  g.pad = a.i("padding_idx");
  if (g.V < 1) throw ShapeError("vocab_size must be at least 1");
  if (g.D < 1) throw ShapeError("dim must be at least 1");
  if (g.pad >= g.V)
    throw ShapeError("padding_idx " + std::to_string(g.pad) + " is outside the vocabulary of " +
                     std::to_string(g.V) + " (use -1 for none)");
  checked_product(std::vector<int64_t>{g.V, g.D}, "the embedding table (vocab_size×dim)");
  return g;
}

class Embedding : public Layer {
 public:
  explicit Embedding(const EmbGeom& g) : g_(g) {
    weight_.name = "weight";
    weight_.value = Tensor(Shape{g.V, g.D});
    weight_.grad = Tensor(Shape{g.V, g.D});
  }
  std::vector<Param*> params() override { return {&weight_}; }
  void init(Rng& rng) override {
    float* w = weight_.value.f32();
    for (int64_t i = 0; i < weight_.value.numel(); ++i) w[i] = rng.normal();
    if (g_.pad >= 0) std::fill(w + g_.pad * g_.D, w + (g_.pad + 1) * g_.D, 0.f);
  }
  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const int64_t R = in[0]->numel();
    const float* ids = in[0]->f32();
    ids_.resize(size_t(R));
    for (int64_t r = 0; r < R; ++r) {
      float v = ids[r];
      int64_t id = std::isfinite(v) ? int64_t(std::lround(v)) : -1;
      if (id < 0 || id >= g_.V || std::fabs(v - float(id)) > 1e-3f)
        throw DataError("Embedding: token id " + std::to_string(v) + " is not an integer in 0.." +
                        std::to_string(g_.V - 1) +
                        "; set vocab_size to the data's vocabulary size and turn input "
                        "normalisation off for token data");
      ids_[size_t(r)] = id;
      const float* src = weight_.value.f32() + id * g_.D;
      std::copy(src, src + g_.D, out.f32() + r * g_.D);
    }
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>&, RunContext&) override {
    if (!weight_.grad.defined()) return;  // frozen: its plan released the gradient
    float* gw = weight_.grad.f32();
    for (size_t r = 0; r < ids_.size(); ++r) {
      if (ids_[r] == g_.pad) continue;
      const float* g = dout.f32() + int64_t(r) * g_.D;
      float* dst = gw + ids_[r] * g_.D;
      for (int64_t k = 0; k < g_.D; ++k) dst[k] += g[k];
    }
  }

 private:
  EmbGeom g_;
  Param weight_;
  ScratchVec<int64_t> ids_;
};

}  // namespace

void register_embedding_layers(LayerRegistry& r) {
  LayerDescriptor d;
  d.type = "Embedding";
  d.category = "Recurrent";
  d.help = "Turns token ids into learned vectors (like torch.nn.Embedding)";
  d.attrs = {
      {"vocab_size",
       AttrType::Int,
       int64_t{64},
       1,
       100000000,
       {},
       "Number of distinct tokens (ids 0 to vocab_size-1)"},
      {"dim", AttrType::Int, int64_t{32}, 1, 65536, {}, "Length of each token's vector"},
      {"padding_idx",
       AttrType::Int,
       int64_t{-1},
       -1,
       100000000,
       {},
       "Token id whose vector stays zero and is not trained (-1: none)"},
  };
  d.num_inputs = [](const Attrs&) { return 1; };
  d.infer = [](const std::vector<Shape>& in, const Attrs& a) {
    EmbGeom g = emb_geom(in, a);
    return Shape{g.T, g.D};
  };
  d.cost = [](const std::vector<Shape>& in, const Shape&, const Attrs& a) {
    EmbGeom g = emb_geom(in, a);
    return Cost{g.V * g.D, 0};
  };
  d.create = [](const Attrs& a, const std::vector<Shape>& in, const Shape&) {
    return std::unique_ptr<Layer>(new Embedding(emb_geom(in, a)));
  };
  r.add(std::move(d));
}

}  // namespace dc
