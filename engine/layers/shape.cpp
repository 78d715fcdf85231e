// Flatten and Reshape change only how the values are grouped; the data is
// the same row-major sequence, so both kernels are copies.
#include <deepcanvas/checked.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/parallel.h>

#include <algorithm>
#include <string>
#include <vector>

#include "builtin.h"

namespace dc {
namespace {

constexpr int64_t kGrain = 1 << 16;

std::string values_text(int64_t n) {
  return std::to_string(n) + (n == 1 ? " value" : " values");
}

// The plan gives every node its own output buffer, so a reshape is a copy
// forward and an accumulate backward.
class Regroup : public Layer {
 public:
  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const float* x = in[0]->f32();
    float* y = out.f32();
    parallel_for(out.numel(), kGrain,
                 [&](int64_t b, int64_t e) { std::copy(x + b, x + e, y + b); });
  }
  void backward(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext& ctx) override {
    if (!din[0]) return;
    const float* dy = dout.f32();
    float* dx = din[0]->f32();
    if (ctx.fresh(0)) {
      parallel_for(dout.numel(), kGrain,
                   [=](int64_t b, int64_t e) { std::copy(dy + b, dy + e, dx + b); });
      return;
    }
    parallel_for(dout.numel(), kGrain, [=](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dx[i] += dy[i];
    });
  }
  bool overwrites_din() const override { return true; }
};

Shape one_input(const std::vector<Shape>& in) {
  if (in.size() != 1) throw ShapeError("expects exactly one input");
  return in[0];
}

Shape reshape_rule(const std::vector<Shape>& in, const Attrs& attrs) {
  Shape s = one_input(in);
  Attrs a = LayerRegistry::instance().get("Reshape").with_defaults(attrs);
  std::vector<int64_t> dims = a.ints("shape");
  if (dims.empty()) throw ShapeError("shape is empty; give at least one dimension (e.g. 1×28×28)");
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (infer_at >= 0)
        throw ShapeError("shape has more than one -1; only one dimension can be inferred");
      infer_at = static_cast<int>(i);
    } else if (dims[i] < 1) {
      throw ShapeError(
          "shape dimensions must be at least 1 (or -1 for one inferred "
          "dimension), but shape is " +
          Shape(dims).str());
    } else {
      known = checked_mul(known, dims[i], "the product of shape's dimensions");
    }
  }
  const int64_t total = s.numel();
  if (infer_at >= 0) {
    if (total % known != 0)
      throw ShapeError("cannot reshape " + s.str() + " (" + values_text(total) + ") to " +
                       Shape(dims).str() + ": " + std::to_string(total) + " is not divisible by " +
                       std::to_string(known) + "; change shape so its dimensions multiply to " +
                       std::to_string(total));
    dims[infer_at] = total / known;
  } else if (known != total) {
    throw ShapeError("cannot reshape " + s.str() + " (" + values_text(total) + ") to " +
                     Shape(dims).str() + " (" + values_text(known) +
                     "); the dimensions must multiply to " + std::to_string(total) +
                     " (use -1 for one dimension to infer it)");
  }
  return Shape(dims);
}

LayerDescriptor regroup_desc(const std::string& type, const std::string& help) {
  LayerDescriptor d;
  d.type = type;
  d.category = "Shape";
  d.help = help;
  d.num_inputs = [](const Attrs&) { return 1; };
  d.cost = [](const std::vector<Shape>&, const Shape&, const Attrs&) { return Cost{}; };
  d.create = [](const Attrs&, const std::vector<Shape>&, const Shape&) {
    return std::unique_ptr<Layer>(new Regroup());
  };
  return d;
}

}  // namespace

void register_shape_layers(LayerRegistry& r) {
  LayerDescriptor f = regroup_desc(
      "Flatten", "Turns each sample into a vector (e.g. 64×7×7 into 3136), as Dense expects");
  f.infer = [](const std::vector<Shape>& in, const Attrs&) { return Shape{one_input(in).numel()}; };
  r.add(std::move(f));

  LayerDescriptor rs = regroup_desc(
      "Reshape", "Regroups each sample's values into a new shape with the same number of values");
  rs.attrs = {
      {"shape",
       AttrType::IntList,
       std::vector<int64_t>{-1},
       -1,
       1000000,
       {},
       "New shape of one sample, without the batch (e.g. 1×28×28); one dimension may be -1 to "
       "infer it from the others"},
  };
  rs.infer = reshape_rule;
  r.add(std::move(rs));
}

}  // namespace dc
