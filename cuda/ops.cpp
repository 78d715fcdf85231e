// The plugin's layers other than Conv2D (conv.cpp) and Dense (dense.cpp):
// thin wrappers that resolve shapes once and call the kernels in the .cu
// files.
#include <deepcanvas/layer.h>

#include <functional>

#include "kernels.h"
#include "ops.h"

namespace dc::cuda {

float* OpContext::ws(size_t bytes, const std::string& what) {
  if (workspace->bytes() < bytes) {
    workspace->reset();
    *workspace = DeviceBuffer(*alloc, bytes, "cuDNN workspace of " + what);
  }
  return workspace->get();
}

namespace {

std::string dims(int n, const Shape& s) {
  return std::to_string(n) + "x" + s.str(true);
}

class Activation : public Op {
 public:
  Act act;
  float slope = 0.f;
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    act_forward(act, slope, in[0], out, n * out_shape.numel(), c.stream);
    DC_LAUNCHED(label + " on " + dims(n, out_shape));
  }
  void backward(OpContext& c, const std::vector<const float*>& in, const float* out,
                const float* dout, const std::vector<float*>& din, int n) override {
    if (!din[0]) return;
    act_backward(act, slope, in[0], out, dout, din[0], n * out_shape.numel(), c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, out_shape));
  }
};

class Softmax : public Op {
 public:
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    int L = int(out_shape[out_shape.rank() - 1]);
    softmax_forward(in[0], out, n * out_shape.numel() / L, L, c.stream);
    DC_LAUNCHED(label + " on " + dims(n, out_shape));
  }
  void backward(OpContext& c, const std::vector<const float*>&, const float* out, const float* dout,
                const std::vector<float*>& din, int n) override {
    if (!din[0]) return;
    int L = int(out_shape[out_shape.rank() - 1]);
    softmax_backward(out, dout, din[0], n * out_shape.numel() / L, L, c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, out_shape));
  }
};

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

class BatchNorm : public Op {
 public:
  int C = 0, S = 1;
  float momentum = 0.1f, eps = 1e-5f;
  DeviceBuffer stats;  // mean, invstd of the last forward
  bool training = true;
  void prepare(OpContext& c, int) override {
    if (!stats.bytes()) stats = DeviceBuffer(*c.alloc, 2 * C * sizeof(float), label);
  }
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    training = c.training;
    batchnorm_forward(in[0], out, params[0].value, params[1].value, params[2].value,
                      params[3].value, stats.get(), stats.get() + C, n, C, S, momentum, eps,
                      training, c.stream);
    DC_LAUNCHED(label + " on " + dims(n, in_shapes[0]));
  }
  void backward(OpContext& c, const std::vector<const float*>& in, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    batchnorm_backward(in[0], dout, din[0], params[0].value, params[0].grad, params[1].grad,
                       stats.get(), stats.get() + C, n, C, S, training, c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, in_shapes[0]));
  }
};

class Dropout : public Op {
 public:
  bool graph_safe() const override { return false; }  // the seed is a launch argument
  float rate = 0.5f;
  bool masked = false;
  uint64_t seed = 0;
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    masked = c.training && rate > 0.f;
    seed = c.seed ^ (0xD1B54A32D192ED03ull * (std::hash<std::string>{}(label) | 1));
    int64_t cnt = n * out_shape.numel();
    if (masked)
      dropout_forward(in[0], out, cnt, rate, seed, c.stream);
    else
      copy(in[0], out, cnt, c.stream);
    DC_LAUNCHED(label + " on " + dims(n, out_shape));
  }
  void backward(OpContext& c, const std::vector<const float*>&, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    if (!din[0]) return;
    int64_t cnt = n * out_shape.numel();
    if (masked)
      dropout_backward(dout, din[0], cnt, rate, seed, c.stream);
    else
      accumulate(dout, din[0], cnt, c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, out_shape));
  }
};

// Flatten and Reshape: the plan aliases their buffers to the input's, so
// there is nothing to run.
class View : public Op {
 public:
  bool is_view() const override { return true; }
  void forward(OpContext&, const std::vector<const float*>&, float*, int) override {}
  void backward(OpContext&, const std::vector<const float*>&, const float*, const float*,
                const std::vector<float*>&, int) override {}
};

class AddOp : public Op {
 public:
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    add_forward(in.data(), int(in.size()), out, n * out_shape.numel(), c.stream);
    DC_LAUNCHED(label + " on " + dims(n, out_shape));
  }
  void backward(OpContext& c, const std::vector<const float*>&, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    for (float* d : din)
      if (d) accumulate(dout, d, n * out_shape.numel(), c.stream);
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

}  // namespace

std::unique_ptr<Op> make_op(const std::string& type, const Attrs& attrs,
                            const std::vector<Shape>& in, const Shape& out,
                            const std::string& label) {
  Attrs a = LayerRegistry::instance().get(type).with_defaults(attrs);
  std::unique_ptr<Op> op;
  auto act = [&](Act k, float slope = 0.f) {
    auto p = std::make_unique<Activation>();
    p->act = k;
    p->slope = slope;
    return p;
  };
  if (type == "Conv2D")
    op = make_conv(a, in, out);
  else if (type == "Dense")
    op = make_dense(a, in, out);
  else if (type == "TimeDistributedDense")
    op = make_time_distributed_dense(a, in, out);
  else if (type == "LSTM" || type == "GRU" || type == "SimpleRNN")
    op = make_rnn(type, a, in, out, label);
  else if (type == "Embedding")
    op = make_embedding(a, in, out);
  else if (type == "LastStep")
    op = make_last_step(a, in, out);
  else if (type == "ReLU")
    op = act(Act::Relu);
  else if (type == "LeakyReLU")
    op = act(Act::LeakyRelu, float(a.f("slope")));
  else if (type == "Sigmoid")
    op = act(Act::Sigmoid);
  else if (type == "Tanh")
    op = act(Act::Tanh);
  else if (type == "GELU")
    op = act(Act::Gelu);
  else if (type == "Softmax")
    op = std::make_unique<Softmax>();
  else if (type == "MaxPool2D" || type == "AvgPool2D") {
    auto p = std::make_unique<Pool>();
    p->max = type == "MaxPool2D";
    p->d = PoolDims{0,
                    int(in[0][0]),
                    int(in[0][1]),
                    int(in[0][2]),
                    int(a.ints("kernel")[0]),
                    int(a.ints("kernel")[1]),
                    int(a.ints("stride")[0]),
                    int(a.ints("stride")[1]),
                    int(a.ints("padding")[0]),
                    int(a.ints("padding")[1]),
                    int(out[1]),
                    int(out[2])};
    op = std::move(p);
  } else if (type == "GlobalAvgPool2D")
    op = std::make_unique<GlobalAvgPool>();
  else if (type == "BatchNorm1D" || type == "BatchNorm2D") {
    auto p = std::make_unique<BatchNorm>();
    p->C = int(in[0][0]);
    p->S = int(in[0].numel() / in[0][0]);
    p->momentum = float(a.f("momentum"));
    p->eps = float(a.f("eps"));
    Shape s{in[0][0]};
    p->params = {{"weight", s, true},
                 {"bias", s, true},
                 {"running_mean", s, false},
                 {"running_var", s, false}};
    op = std::move(p);
  } else if (type == "Dropout") {
    auto p = std::make_unique<Dropout>();
    p->rate = float(a.f("rate"));
    op = std::move(p);
  } else if (type == "Flatten" || type == "Reshape")
    op = std::make_unique<View>();
  else if (type == "Add") {
    if (in.size() > 8) throw Error(label + ": more than 8 inputs are not supported on CUDA");
    op = std::make_unique<AddOp>();
  } else if (type == "Concat") {
    auto p = std::make_unique<ConcatOp>();
    int64_t axis = a.i("axis");
    for (size_t i = axis + 1; i < in[0].rank(); ++i) p->inner *= in[0][i];
    for (int64_t i = 0; i < axis; ++i) p->outer_per_sample *= in[0][i];
    for (const Shape& s : in) p->block.push_back(s[axis] * p->inner);
    for (int64_t b : p->block) p->total += b;
    op = std::move(p);
  } else {
    throw Error(label + " has no CUDA kernel yet; train this model with --device cpu");
  }
  op->label = label;
  op->in_shapes = in;
  op->out_shape = out;
  return op;
}

}  // namespace dc::cuda
