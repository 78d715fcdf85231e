// ChannelScale, ChannelShuffle and ChannelSlice over channel.cu.
#include "kernels.h"
#include "op_registry.h"

namespace dc::cuda {

namespace {

// Values per channel of a per-sample shape [C, rest...].
int64_t per_channel(const Shape& s) {
  return s.numel() / s[0];
}

class ChannelScaleOp : public Op {
 public:
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    channel_scale_forward(in[0], in[1], out, n * in_shapes[0][0], per_channel(in_shapes[0]),
                          c.stream);
    DC_LAUNCHED(label + " on " + dims(n, out_shape));
  }
  void backward(OpContext& c, const std::vector<const float*>& in, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    if (!din[0] && !din[1]) return;
    channel_scale_backward(in[0], in[1], dout, din[0], din[1], n * in_shapes[0][0],
                           per_channel(in_shapes[0]), c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, out_shape));
  }
};

class ChannelShuffleOp : public Op {
 public:
  int64_t groups = 1;
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    channel_shuffle_forward(in[0], out, n, out_shape[0], per_channel(out_shape), groups, c.stream);
    DC_LAUNCHED(label + " on " + dims(n, out_shape));
  }
  void backward(OpContext& c, const std::vector<const float*>&, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    if (!din[0]) return;
    channel_shuffle_backward(dout, din[0], n, out_shape[0], per_channel(out_shape), groups,
                             c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, out_shape));
  }
};

class ChannelSliceOp : public Op {
 public:
  int64_t start = 0;
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    channel_slice_forward(in[0], out, n, in_shapes[0][0], per_channel(in_shapes[0]), start,
                          out_shape[0], c.stream);
    DC_LAUNCHED(label + " on " + dims(n, out_shape));
  }
  void backward(OpContext& c, const std::vector<const float*>&, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    if (!din[0]) return;
    channel_slice_backward(dout, din[0], n, in_shapes[0][0], per_channel(in_shapes[0]), start,
                           out_shape[0], c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, out_shape));
  }
};

std::unique_ptr<Op> make_scale(const PlanStep&) {
  return std::make_unique<ChannelScaleOp>();
}

std::unique_ptr<Op> make_shuffle(const PlanStep& s) {
  auto p = std::make_unique<ChannelShuffleOp>();
  p->groups = s.attrs.i("groups");
  return p;
}

std::unique_ptr<Op> make_slice(const PlanStep& s) {
  auto p = std::make_unique<ChannelSliceOp>();
  p->start = s.attrs.i("start");
  return p;
}

}  // namespace

void register_channel_ops(OpRegistry& r) {
  r.add("ChannelScale", make_scale);
  r.add("ChannelShuffle", make_shuffle);
  r.add("ChannelSlice", make_slice);
}

}  // namespace dc::cuda
