#pragma once
// The CUDA plugin's choices that both advisor models (memory_model.cpp,
// step_time.cpp) must predict the same way. The engine cannot include the
// plugin's headers, so each rule here mirrors the plugin file it names; one
// copy on this side keeps the two models from drifting apart.
#include <deepcanvas/cuda_pointwise.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/plan.h>

#include <string>

namespace dc::advisor {

// What cuda/conv.cpp sends to its own depthwise kernels (depthwise.h's
// is_depthwise): one input channel per group, more than one group. Unlike
// the CPU's conv_is_depthwise (layer.h), 1×1 kernels count.
inline bool cuda_depthwise_conv(const PlanStep& s) {
  const int64_t C = s.in_shapes[0][0], OC = s.out_shape[0], G = s.attrs.i("groups");
  return G > 1 && G == C && OC % C == 0;
}

// A Conv2D's padding on each side (top, bottom, left, right), as
// cuda/conv.cpp's make_conv derives it.
struct ConvPads {
  int64_t t = 0, b = 0, l = 0, r = 0;
};
inline ConvPads conv_pads(const PlanStep& s) {
  ConvPads p;
  const std::string& mode = s.attrs.s("padding_mode");
  if (mode == "explicit") {
    const auto& e = s.attrs.ints("padding");
    p.t = p.b = e[0];
    p.l = p.r = e[1];
  } else if (mode == "same") {
    const Shape& x = s.in_shapes[0];
    const auto& k = s.attrs.ints("kernel");
    const auto& st = s.attrs.ints("stride");
    const auto& dl = s.attrs.ints("dilation");
    same_padding(x[1], k[0], st[0], dl[0], p.t, p.b, "height");
    same_padding(x[2], k[1], st[1], dl[1], p.l, p.r, "width");
  }
  return p;
}

// deepcanvas/cuda_pointwise.h's rule for a Conv2D step: whether bf16 runs it
// as cuBLAS GEMMs on the float32 tensors. weight_grad: it trains its weights.
inline bool cuda_pointwise_gemm(const PlanStep& s, bool weight_grad) {
  const Shape& x = s.in_shapes[0];
  const auto& k = s.attrs.ints("kernel");
  const auto& st = s.attrs.ints("stride");
  const ConvPads p = conv_pads(s);
  return dc::cuda_pointwise_gemm(x[0], x[1], x[2], s.out_shape[0], k[0], k[1], st[0], st[1],
                                 s.attrs.i("groups"), p.t + p.b + p.l + p.r, weight_grad);
}

inline bool is_recurrent(const std::string& t) {
  return t == "LSTM" || t == "GRU" || t == "SimpleRNN";
}

// A stacked recurrent layer with dropout between its layers (cuda/rnn.cpp):
// cuDNN then neither runs its persistent kernels nor can the step be
// captured in a CUDA graph (its dropout state advances outside the graph).
inline bool rnn_dropout_between_layers(const PlanStep& s) {
  return is_recurrent(s.type) && s.attrs.has("dropout") && s.attrs.f("dropout") > 0 &&
         s.attrs.i("num_layers") > 1;
}

}  // namespace dc::advisor
