// Window pooling (max, average) and global average pooling over pool.cu.
#include "kernels.h"
#include "op_registry.h"

namespace dc::cuda {

namespace {

class Pool : public Op {
 public:
  bool max = true;
  PoolDims d{};
  PoolDims at(int n) const {
    PoolDims r = d;
    r.N = n;
    return r;
  }
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    if (max)
      maxpool_forward(at(n), in[0], out, c.stream);
    else
      avgpool_forward(at(n), in[0], out, c.stream);
    DC_LAUNCHED(label + " on " + dims(n, in_shapes[0]));
  }
  void backward(OpContext& c, const std::vector<const float*>& in, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    if (!din[0]) return;
    if (max)
      maxpool_backward(at(n), in[0], dout, din[0], c.stream);
    else
      avgpool_backward(at(n), dout, din[0], c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, in_shapes[0]));
  }
};

class GlobalAvgPool : public Op {
 public:
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    global_avgpool_forward(in[0], out, n * in_shapes[0][0], in_shapes[0][1] * in_shapes[0][2],
                           c.stream);
    DC_LAUNCHED(label + " on " + dims(n, in_shapes[0]));
  }
  void backward(OpContext& c, const std::vector<const float*>&, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    if (!din[0]) return;
    global_avgpool_backward(dout, din[0], n * in_shapes[0][0], in_shapes[0][1] * in_shapes[0][2],
                            c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, in_shapes[0]));
  }
};

template <bool Max>
std::unique_ptr<Op> make_pool(const PlanStep& s) {
  const Attrs& a = s.attrs;
  const Shape& in = s.in_shapes[0];
  auto p = std::make_unique<Pool>();
  p->max = Max;
  p->d = PoolDims{0,
                  int(in[0]),
                  int(in[1]),
                  int(in[2]),
                  int(a.ints("kernel")[0]),
                  int(a.ints("kernel")[1]),
                  int(a.ints("stride")[0]),
                  int(a.ints("stride")[1]),
                  int(a.ints("padding")[0]),
                  int(a.ints("padding")[1]),
                  int(s.out_shape[1]),
                  int(s.out_shape[2])};
  return p;
}

}  // namespace

void register_pool_ops(OpRegistry& r) {
  r.add("MaxPool2D", make_pool<true>);
  r.add("AvgPool2D", make_pool<false>);
  r.add("GlobalAvgPool2D",
        [](const PlanStep&) -> std::unique_ptr<Op> { return std::make_unique<GlobalAvgPool>(); });
}

}  // namespace dc::cuda
