// Add and Concat: the layers that join branches (residual connections,
// Inception-style blocks). Both take a configurable number of inputs.
#include <deepcanvas/errors.h>
#include <deepcanvas/parallel.h>

#include <algorithm>
#include <string>
#include <vector>

#include "builtin.h"
#include "fused_relu.h"

namespace dc {
namespace {

constexpr int64_t kGrain = 1 << 14;

int64_t input_count(const std::string& type, const Attrs& attrs) {
  return LayerRegistry::instance().get(type).with_defaults(attrs).i("inputs");
}

void check_count(const std::vector<Shape>& in, int64_t want) {
  if (static_cast<int64_t>(in.size()) != want)
    throw ShapeError("expects " + std::to_string(want) + " inputs but has " +
                     std::to_string(in.size()));
}

class Add : public Layer {
 public:
  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    float* y = out.f32();
    const float cap = relu_.cap;
    relu_.dispatch([&](auto a) {
      constexpr Act A = decltype(a)::value;
      // Pointers by value: through a captured reference GCC does not vectorise.
      parallel_for(out.numel(), kGrain, [&in, y, cap](int64_t b, int64_t e) {
        const float* x0 = in[0]->f32();
        for (int64_t i = b; i < e; ++i) y[i] = x0[i];
        for (size_t k = 1; k < in.size(); ++k) {
          const float* xk = in[k]->f32();
          // A fused ReLU goes with the last input, while the sum is in
          // registers.
          if (A != Act::None && k + 1 == in.size())
            for (int64_t i = b; i < e; ++i) y[i] = act<A>(y[i] + xk[i], cap);
          else
            for (int64_t i = b; i < e; ++i) y[i] += xk[i];
        }
        if (A != Act::None && in.size() == 1)
          for (int64_t i = b; i < e; ++i) y[i] = act<A>(y[i], cap);
      });
    });
  }

  void backward(const std::vector<const Tensor*>&, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext& ctx) override {
    const float* dy = dout.f32();
    const float* y = out.f32();
    const float cap = relu_.cap;
    // Each input's gradient is the (masked) dy: written outright where it is
    // fresh, so the plan skips zeroing it.
    uint32_t fresh = 0;
    for (size_t k = 0; k < din.size(); ++k) fresh |= ctx.fresh(k) ? 1u << k : 0u;
    relu_.dispatch([&](auto a) {
      constexpr Act A = decltype(a)::value;
      parallel_for(dout.numel(), kGrain, [&din, dy, y, cap, fresh](int64_t b, int64_t e) {
        for (size_t k = 0; k < din.size(); ++k) {
          if (!din[k]) continue;
          float* dx = din[k]->f32();
          if (k < 32 && (fresh >> k) & 1u)
            for (int64_t i = b; i < e; ++i) dx[i] = dy[i] * act_grad<A>(y[i], cap);
          else
            for (int64_t i = b; i < e; ++i) dx[i] += dy[i] * act_grad<A>(y[i], cap);
        }
      });
    });
  }

  bool fuse_relu(float cap) override { return relu_.fuse(cap); }

  bool overwrites_din() const override { return true; }

 private:
  FusedRelu relu_;  // the ReLU the plan fused into this layer, if any
};

Shape add_rule(const std::vector<Shape>& in, const Attrs& a) {
  check_count(in, input_count("Add", a));
  for (size_t k = 1; k < in.size(); ++k)
    if (in[k] != in[0])
      throw ShapeError("input " + std::to_string(k) + " has shape " + in[k].str() +
                       " but input 0 has " + in[0].str() +
                       "; all inputs of Add must have the same shape");
  return in[0];
}

// Concat sees each tensor (batch included) as [outer, dim(axis) * inner]:
// outer counts everything before the axis, so every input contributes one
// contiguous block per outer index.
struct ConcatGeom {
  int64_t inner = 1;             // product of the dimensions after the axis
  std::vector<int64_t> block;    // per input: dim(axis) * inner
  int64_t out_block = 0;         // sum of blocks
  int64_t outer_per_sample = 1;  // product of per-sample dimensions before the axis
};

ConcatGeom concat_geom(const std::vector<Shape>& in, const Attrs& attrs) {
  Attrs a = LayerRegistry::instance().get("Concat").with_defaults(attrs);
  check_count(in, a.i("inputs"));
  const int64_t axis = a.i("axis");
  const size_t rank = in[0].rank();
  if (axis < 0 || axis >= static_cast<int64_t>(rank))
    throw ShapeError("axis " + std::to_string(axis) + " does not exist for " + in[0].str() +
                     " inputs; use an axis from 0 to " + std::to_string(int64_t(rank) - 1) +
                     " (0 is channels for channels×height×width)");
  for (size_t k = 1; k < in.size(); ++k) {
    bool ok = in[k].rank() == rank;
    for (size_t i = 0; ok && i < rank; ++i)
      ok = static_cast<int64_t>(i) == axis || in[k][i] == in[0][i];
    if (!ok)
      throw ShapeError("input " + std::to_string(k) + " has shape " + in[k].str() +
                       " but input 0 has " + in[0].str() + "; Concat along axis " +
                       std::to_string(axis) + " needs every other dimension to match");
  }
  ConcatGeom g;
  for (size_t i = axis + 1; i < rank; ++i) g.inner *= in[0][i];
  for (int64_t i = 0; i < axis; ++i) g.outer_per_sample *= in[0][i];
  for (const Shape& s : in) {
    g.block.push_back(s[axis] * g.inner);
    g.out_block += g.block.back();
  }
  return g;
}

Shape concat_rule(const std::vector<Shape>& in, const Attrs& attrs) {
  ConcatGeom g = concat_geom(in, attrs);
  int64_t axis = LayerRegistry::instance().get("Concat").with_defaults(attrs).i("axis");
  std::vector<int64_t> dims = in[0].dims();
  dims[axis] = g.out_block / g.inner;
  return Shape(dims);
}

class Concat : public Layer {
 public:
  explicit Concat(ConcatGeom g) : g_(std::move(g)) {}

  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    float* y = out.f32();
    const int64_t outer = in[0]->dim(0) * g_.outer_per_sample;
    parallel_for(outer, grain(), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        float* dst = y + o * g_.out_block;
        for (size_t k = 0; k < in.size(); ++k) {
          const float* src = in[k]->f32() + o * g_.block[k];
          dst = std::copy(src, src + g_.block[k], dst);
        }
      }
    });
  }

  void backward(const std::vector<const Tensor*>& in, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext&) override {
    const float* dy = dout.f32();
    const int64_t outer = in[0]->dim(0) * g_.outer_per_sample;
    parallel_for(outer, grain(), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const float* src = dy + o * g_.out_block;
        for (size_t k = 0; k < din.size(); ++k) {
          const int64_t n = g_.block[k];
          if (din[k]) {
            float* dx = din[k]->f32() + o * n;
            for (int64_t i = 0; i < n; ++i) dx[i] += src[i];
          }
          src += n;
        }
      }
    });
  }

 private:
  int64_t grain() const { return std::max<int64_t>(1, kGrain / g_.out_block); }
  ConcatGeom g_;
};

LayerDescriptor merge_desc(const std::string& type, const std::string& help) {
  LayerDescriptor d;
  d.type = type;
  d.category = "Merge";
  d.help = help;
  d.attrs = {
      {"inputs", AttrType::Int, int64_t{2}, 2, 8, {}, "Number of input ports"},
  };
  d.num_inputs = [type](const Attrs& a) { return static_cast<int>(input_count(type, a)); };
  d.cost = [](const std::vector<Shape>&, const Shape&, const Attrs&) { return Cost{}; };
  return d;
}

}  // namespace

void register_merge_layers(LayerRegistry& r) {
  LayerDescriptor add = merge_desc(
      "Add", "Sums inputs of the same shape element by element (e.g. a residual connection)");
  add.infer = add_rule;
  add.create = [](const Attrs&, const std::vector<Shape>&, const Shape&) {
    return std::unique_ptr<Layer>(new Add());
  };
  r.add(std::move(add));

  LayerDescriptor cat = merge_desc(
      "Concat", "Joins inputs along one dimension (by default channels); the others must match");
  cat.attrs.push_back({"axis",
                       AttrType::Int,
                       int64_t{0},
                       0,
                       3,
                       {},
                       "Dimension to join along, counted without the batch: 0 is channels for "
                       "channels×height×width, or features for vectors"});
  cat.infer = concat_rule;
  cat.create = [](const Attrs& a, const std::vector<Shape>& in, const Shape&) {
    return std::unique_ptr<Layer>(new Concat(concat_geom(in, a)));
  };
  r.add(std::move(cat));
}

}  // namespace dc
