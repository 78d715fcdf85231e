// Add and Concat over elementwise.cu and concat.cu.
#include <deepcanvas/errors.h>

#include "kernels.h"
#include "op_registry.h"

namespace dc::cuda {

namespace {

class AddOp : public Op {
 public:
  FusedRelu relu;
  bool fold_relu(FusedRelu r) override {
    relu = r;
    return true;
  }
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    add_forward(in.data(), int(in.size()), out, n * out_shape.numel(), relu, c.stream);
    DC_LAUNCHED(label + " on " + dims(n, out_shape));
  }
  void backward(OpContext& c, const std::vector<const float*>&, const float* out, const float* dout,
                const std::vector<float*>& din, int n) override {
    const int64_t total = n * out_shape.numel();
    if (relu.on) {
      // The clamp's mask comes from the output; two inputs' gradients a pass.
      std::vector<float*> d;
      for (float* p : din)
        if (p) d.push_back(p);
      for (size_t k = 0; k < d.size(); k += 2)
        relu_split_accumulate(out, dout, d[k], k + 1 < d.size() ? d[k + 1] : nullptr, total,
                              relu.hi, c.stream);
    } else {
      for (float* d : din)
        if (d) accumulate(dout, d, total, c.stream);
    }
    DC_LAUNCHED(label + " backward on " + dims(n, out_shape));
  }
};

class ConcatOp : public Op {
 public:
  int64_t outer_per_sample = 1, inner = 1;
  std::vector<int64_t> block;
  int64_t total = 0;
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    int64_t off = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      concat_forward(in[k], out, n * outer_per_sample, block[k], total, off, c.stream);
      off += block[k];
    }
    DC_LAUNCHED(label + " on " + dims(n, out_shape));
  }
  void backward(OpContext& c, const std::vector<const float*>&, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    int64_t off = 0;
    for (size_t k = 0; k < din.size(); ++k) {
      if (din[k])
        concat_backward(dout, din[k], n * outer_per_sample, block[k], total, off, c.stream);
      off += block[k];
    }
    DC_LAUNCHED(label + " backward on " + dims(n, out_shape));
  }
};

std::unique_ptr<Op> make_add(const PlanStep& s) {
  if (s.in_shapes.size() > 8)
    throw Error(s.label + ": more than 8 inputs are not supported on CUDA");
  return std::make_unique<AddOp>();
}

std::unique_ptr<Op> make_concat(const PlanStep& s) {
  const std::vector<Shape>& in = s.in_shapes;
  auto p = std::make_unique<ConcatOp>();
  int64_t axis = s.attrs.i("axis");
  for (size_t i = size_t(axis) + 1; i < in[0].rank(); ++i) p->inner *= in[0][i];
  for (int64_t i = 0; i < axis; ++i) p->outer_per_sample *= in[0][i];
  for (const Shape& x : in) p->block.push_back(x[axis] * p->inner);
  for (int64_t b : p->block) p->total += b;
  return p;
}

}  // namespace

void register_merge_ops(OpRegistry& r) {
  r.add("Add", make_add);
  r.add("Concat", make_concat);
}

}  // namespace dc::cuda
