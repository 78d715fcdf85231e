// The token layers on the GPU (engine/layers/tokens.cpp): ImageToTokens is
// a tiled transpose, PositionalEmbedding a broadcast add whose gradient is
// a bias gradient over T·E columns, ClassToken and TokenPooling slab copies
// and means (tokens.cu).
#include "kernels.h"
#include "op_registry.h"

namespace dc::cuda {
namespace {

class ImageToTokens : public Op {
 public:
  int64_t C = 0, P = 0;
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    transpose(in[0], out, n, C, P, c.stream);
    DC_LAUNCHED(label + " on " + dims(n, in_shapes[0]));
  }
  void backward(OpContext& c, const std::vector<const float*>&, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    if (!din[0]) return;
    transpose_accumulate(dout, din[0], n, P, C, c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, in_shapes[0]));
  }
};

class PositionalEmbedding : public Op {
 public:
  int64_t TE = 0;
  bool learned = true;
  void prepare(OpContext& c, int) override {
    if (learned && needs_backward && !frozen && !parts_.bytes())
      parts_ = DeviceBuffer(*c.alloc, bias_grad_scratch_bytes(TE), label + " partial sums");
  }
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    copy(in[0], out, n * TE, c.stream);
    add_bias(out, params[0].value, n, TE, 1, c.stream);
    DC_LAUNCHED(label + " on " + dims(n, in_shapes[0]));
  }
  void backward(OpContext& c, const std::vector<const float*>&, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    if (din[0]) accumulate(dout, din[0], n * TE, c.stream);
    if (learned && params[0].grad)
      bias_grad(dout, params[0].grad, n, TE, 1, parts_.get<void>(), c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, in_shapes[0]));
  }

 private:
  DeviceBuffer parts_;
};

class ClassToken : public Op {
 public:
  int64_t T = 0, E = 0;
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    const int64_t OE = (T + 1) * E;
    broadcast_row(params[0].value, out, n, E, OE, 0, c.stream);
    slab_copy(in[0], out, n, T * E, T * E, 0, OE, E, false, c.stream);
    DC_LAUNCHED(label + " on " + dims(n, in_shapes[0]));
  }
  void backward(OpContext& c, const std::vector<const float*>&, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    const int64_t OE = (T + 1) * E;
    if (din[0]) slab_copy(dout, din[0], n, T * E, OE, E, T * E, 0, true, c.stream);
    if (params[0].grad) strided_column_sums(dout, params[0].grad, n, E, OE, 0, c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, in_shapes[0]));
  }
};

class TokenPooling : public Op {
 public:
  int64_t T = 0, E = 0;
  bool first = false;
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    if (first)
      slab_copy(in[0], out, n, E, T * E, 0, E, 0, false, c.stream);
    else
      token_mean(in[0], out, n, T, E, c.stream);
    DC_LAUNCHED(label + " on " + dims(n, in_shapes[0]));
  }
  void backward(OpContext& c, const std::vector<const float*>&, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    if (!din[0]) return;
    if (first)
      slab_copy(dout, din[0], n, E, E, 0, T * E, 0, true, c.stream);
    else
      token_mean_backward(dout, din[0], n, T, E, c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, in_shapes[0]));
  }
};

}  // namespace

void register_token_ops(OpRegistry& r) {
  r.add("ImageToTokens", [](const PlanStep& s) -> std::unique_ptr<Op> {
    auto p = std::make_unique<ImageToTokens>();
    p->C = s.in_shapes[0][0];
    p->P = s.in_shapes[0][1] * s.in_shapes[0][2];
    return p;
  });
  r.add("PositionalEmbedding", [](const PlanStep& s) -> std::unique_ptr<Op> {
    auto p = std::make_unique<PositionalEmbedding>();
    p->TE = s.in_shapes[0].numel();
    p->learned = s.attrs.s("kind") == "learned";
    // The sinusoids are a buffer: uploaded with the parameters, not trained.
    p->params = {{p->learned ? "weight" : "table", s.in_shapes[0], p->learned}};
    return p;
  });
  r.add("ClassToken", [](const PlanStep& s) -> std::unique_ptr<Op> {
    auto p = std::make_unique<ClassToken>();
    p->T = s.in_shapes[0][0];
    p->E = s.in_shapes[0][1];
    p->params = {{"token", Shape{p->E}, true}};
    return p;
  });
  r.add("TokenPooling", [](const PlanStep& s) -> std::unique_ptr<Op> {
    auto p = std::make_unique<TokenPooling>();
    p->T = s.in_shapes[0][0];
    p->E = s.in_shapes[0][1];
    p->first = s.attrs.s("mode") == "first";
    return p;
  });
}

}  // namespace dc::cuda
