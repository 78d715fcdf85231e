// Conv2D through cuDNN.
//
// bf16/fp16 (the "reduced" precisions): the op converts x, w and dy to 16
// bits, runs tensor-core convolutions with float32 accumulation and converts
// the 16-bit y, dx and dw back, adding into the float32 activations and
// gradients (y, dx and dw are rounded to 16 bits once). The three
// convolutions go through cuDNN's graph API (conv_graph.h: heuristics, the
// fastest of a few plans timed once per batch size, as PyTorch's Conv_v8.cpp
// does); a direction the graph API cannot plan runs on the legacy API, and
// the reason is printed once. DC_CUDA_CONV=legacy keeps every direction on
// the legacy API (for A/B runs), DC_CUDA_CONV=graph makes a failed graph
// plan an error (the tests use it to know the graph path ran).
//
// Channels last: where cuDNN has tensor-core kernels for it (no groups,
// channel counts multiples of 8) the 16-bit copies are NHWC and the filter
// KRSC, the conversions to and from 16 bits reordering on the way
// (to_low_transposed); PyTorch's peer trains channels last too. With the
// graph API that is the default (DC_CUDA_NHWC=0 keeps NCHW); with the legacy
// API it is opt-in (DC_CUDA_NHWC=1), because cudnnFind's weight gradient
// stays on the legacy wgrad_alg0 engine there and the step was slower on an
// H100 (docs/BENCHMARKS.md).
//
// float32: the legacy API, algorithms chosen by cudnnFind* (which times them
// on the device) once per batch size, as PyTorch's cudnn.benchmark does;
// float32 math unless tf32 is allowed. Its beta = 1 accumulation into the
// gradients is what the op needs there.
//
// With DC_CUDA_WGRAD=gemm as well, the channels-last weight gradient is a
// tensor-core GEMM instead of cuDNN's: the 16-bit NHWC input unfolded into
// [pixels, taps·channels] columns (in chunks of samples, at most 128 MiB),
// times the NHWC output gradient, into a float32 KRSC gradient that is
// added into the KCRS one.
//
// Depthwise layers (groups = input channels: MobileNetV2, EfficientNet-Lite0)
// run on depthwise.cu's own kernels in every precision, straight on the
// float32 NCHW tensors: they are memory bound, so the conversion passes of
// the 16-bit path and cuDNN's grouped kernels cost more than the
// convolution itself. They also take the uneven padding of 'same' with a
// stride as it is (cuDNN needs the padded copy below). DC_CUDA_DEPTHWISE=
// cudnn keeps them on cuDNN (A/B runs, tests); with DC_CUDA_LOG_ALGOS=1 the
// layer says which kernel it runs.
//
// Pointwise convolutions in bf16 (1×1, stride 1, no padding, one
// group, planes of at least 64 pixels: deepcanvas/cuda_pointwise.h, which
// the advisor's memory model shares) skip cuDNN and its 16-bit copies: y,
// dx and the weight gradient are cuBLAS GEMMs per sample straight on the
// float32 NCHW tensors, the operands rounded to 16 bits inside the GEMM
// (CUBLAS_COMPUTE_32F_FAST_16BF; fp16 stays on cuDNN: OpContext::
// low_on_float32). The weight gradient's per-sample
// products go to the shared workspace and a GEMV sums them over the batch
// in a fixed order. DC_CUDA_PW=cudnn keeps them on cuDNN (A/B runs, tests);
// DC_CUDA_PW=tf32 computes them with TF32 tensor cores instead.
//
// A ReLU/ReLU6 right after the layer (its only consumer) is folded into it
// (relu_fusions), as into BatchNorm and Add: forward clamps in the
// bias pass (bias_relu; in the depthwise kernel itself), so the ReLU keeps
// no buffers and launches nothing, and backward first zeroes the incoming
// gradient where the clamped output is 0 or at the cap, in place
// (relu_mask: that buffer is this layer's and nothing reads it after).
//
// Uneven 'same' padding on cuDNN (a strided convolution on an even plane:
// EfficientNet-Lite0's stem): cuDNN pads both sides alike, so the op pads
// the float32 input into a copy with the extra zero rows and columns
// (conv_layout.h's ConvPadCopy, pad.cu) and every direction runs on the
// copy with the symmetric rest. The input gradient comes out as the
// copy's (beta 0, into the copy's own buffer, free by then), and its
// interior is added into dx. One rule for both APIs and all three
// precisions rather than the graph API's pre/post paddings, which the
// float32 and fallback legacy paths do not have.
#include <deepcanvas/cuda_pointwise.h>
#include <deepcanvas/layer.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conv_graph.h"
#include "conv_layout.h"
#include "handles.h"
#include "kernels.h"
#include "op_registry.h"

namespace dc::cuda {
namespace {

constexpr size_t kMaxWorkspace = size_t(1) << 30;
// Graph-API plans may ask for less: the fastest 16-bit engines measured so
// far need a few MiB, and timing the candidates holds a scratch workspace of
// the largest one's size on top of the training's memory.
constexpr size_t kGraphWorkspace = size_t(256) << 20;

// The value of an environment variable, empty when unset.
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

struct Algos {
  // Legacy algorithms, for the directions the graph API does not run.
  cudnnConvolutionFwdAlgo_t fwd;
  cudnnConvolutionBwdDataAlgo_t bwd_data;
  cudnnConvolutionBwdFilterAlgo_t bwd_filter;
  std::optional<ConvGraph> g_fwd, g_data, g_filter;
  size_t ws = 0;
  TensorDesc x, y;
};

class Conv2D : public Op {
 public:
  int64_t C, H, W, OC, KH, KW, SH, SW, DH, DW, G, PH, PW, OH, OW;
  bool bias;
  // Depthwise kernels (depthwise.cu) instead of cuDNN (PH, PW: the top and
  // left padding they take, the rest follows from OH, OW).
  bool depthwise = false;
  FusedRelu relu;  // a ReLU/ReLU6 folded into this layer (CudaPlan::lower)
  bool fold_relu(FusedRelu r) override {
    relu = r;
    return true;
  }
  // What cuDNN runs on: the input itself, or its padded copy (pc.needed()),
  // padded by pc.pad_h, pc.pad_w on each side.
  ConvPadCopy pc;

  template <typename Perf>
  static decltype(Perf::algo) pick(const Perf* p, int got, size_t& ws, const std::string& what,
                                   const char* dir) {
    // DC_CUDA_LOG_ALGOS=1: every candidate cudnnFind timed, to see on a
    // device why it chose what it chose (the bf16 weight gradient lands on
    // a legacy engine; docs/BENCHMARKS.md).
    if (const char* e = std::getenv("DC_CUDA_LOG_ALGOS"); e && *e == '1')
      for (int i = 0; i < got; ++i)
        std::fprintf(stderr, "%s %s: algo %d, %.4f ms, %zu bytes, math type %d, status %d\n",
                     what.c_str(), dir, int(p[i].algo), double(p[i].time), size_t(p[i].memory),
                     int(p[i].mathType), int(p[i].status));
    for (int i = 0; i < got; ++i)
      if (p[i].status == CUDNN_STATUS_SUCCESS && p[i].memory <= kMaxWorkspace) {
        ws = std::max(ws, p[i].memory);
        return p[i].algo;
      }
    throw DeviceError(what + ": cuDNN found no usable " + dir + " convolution algorithm");
  }

  std::string shapes(int n) const {
    return label + " (input " + std::to_string(n) + "x" + std::to_string(C) + "x" +
           std::to_string(H) + "x" + std::to_string(W) + ", weight " + std::to_string(OC) + "x" +
           std::to_string(C / G) + "x" + std::to_string(KH) + "x" + std::to_string(KW) + ")";
  }

  void prepare(OpContext& c, int n) override {
    if (depthwise && prepare_depthwise(c, n)) return;
    if (!pw_decided_) {
      pw_decided_ = true;
      const std::string pw = env("DC_CUDA_PW");
      // fp16 keeps cuDNN's 16-bit copies unless TF32 is asked for
      // (OpContext::low_on_float32).
      pw_ = c.reduced && pw != "cudnn" && (c.low_on_float32() || pw == "tf32") &&
            cuda_pointwise_gemm(C, H, W, OC, KH, KW, SH, SW, G, pc.total(),
                                needs_backward && !frozen);
      pw_math_ = pw == "tf32" ? CUBLAS_COMPUTE_32F_FAST_TF32 : c.low_compute();
      if (pw_ && env("DC_CUDA_LOG_ALGOS") == "1")
        std::fprintf(stderr, "%s: pointwise GEMMs on cuBLAS (%s)\n", shapes(n).c_str(),
                     pw == "tf32" ? "tf32" : "16-bit operands");
    }
    if (pw_) {
      prepare_pointwise(c, n);
      return;
    }
    if (!conv_) {
      reduced_ = c.reduced;
      dt_ = !c.reduced ? CUDNN_DATA_FLOAT
                       : (c.low == Low::Bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF);
      const std::string api = env("DC_CUDA_CONV"), layout = env("DC_CUDA_NHWC");
      graph_ = reduced_ && api != "legacy";
      graph_required_ = graph_ && api == "graph";
      nhwc_ = reduced_ && G == 1 && C % 8 == 0 && OC % 8 == 0 &&
              (layout == "1" || (layout.empty() && graph_));
      wgrad_gemm_ = nhwc_ && needs_backward && !frozen && env("DC_CUDA_WGRAD") == "gemm";
      DC_CUDNN(cudnnCreateFilterDescriptor(wdesc_.out()), label);
      DC_CUDNN(cudnnSetFilter4dDescriptor(wdesc_.get(), dt_, format(), int(OC), int(C / G), int(KH),
                                          int(KW)),
               shapes(n));
      DC_CUDNN(cudnnCreateConvolutionDescriptor(conv_.out()), label);
      // The compute type stays float32 in every precision.
      DC_CUDNN(cudnnSetConvolution2dDescriptor(conv_.get(), int(pc.pad_h), int(pc.pad_w), int(SH),
                                               int(SW), int(DH), int(DW), CUDNN_CROSS_CORRELATION,
                                               CUDNN_DATA_FLOAT),
               shapes(n));
      DC_CUDNN(cudnnSetConvolutionGroupCount(conv_.get(), int(G)), shapes(n));
      const cudnnMathType_t math = c.reduced || c.tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
      DC_CUDNN(cudnnSetConvolutionMathType(conv_.get(), math), shapes(n));
      if (reduced_ && needs_backward && !frozen)
        dw_low_ = DeviceBuffer(*c.alloc, size_t(OC * (C / G) * KH * KW) * 2,
                               label + " 16-bit weight gradient");
      if (nhwc_)
        w_nhwc_ =
            DeviceBuffer(*c.alloc, size_t(OC * C * KH * KW) * 2, label + " 16-bit KRSC weight");
      if (bias && needs_backward && !frozen)
        bias_parts_ = DeviceBuffer(*c.alloc, bias_grad_scratch_bytes(OC),
                                   label + " bias gradient partial sums");
    }
    // The padded copy, which backward reuses for the copy's input gradient:
    // nothing more for a layer backward reaches.
    if (pc.needed() && n > pad_cap_) {
      pad_cap_ = n;
      xpad_ = DeviceBuffer(*c.alloc, size_t(n) * C * pc.h * pc.w * 4,
                           label + " zero-padded input (uneven 'same' padding)");
    }
    if (reduced_ && n > cap_) {
      cap_ = n;
      x_low_ = DeviceBuffer(*c.alloc, size_t(n) * C * pc.h * pc.w * 2, label + " 16-bit input");
      y_low_ = DeviceBuffer(*c.alloc, size_t(n) * OC * OH * OW * 2, label + " 16-bit output");
      if (wgrad_gemm_) {
        cols_ = DeviceBuffer(*c.alloc, size_t(cols_samples(n)) * OH * OW * KH * KW * C * 2,
                             label + " weight-gradient columns");
        if (!dw32_.bytes())
          dw32_ = DeviceBuffer(*c.alloc, size_t(OC) * C * KH * KW * 4,
                               label + " float32 KRSC weight gradient");
      }
    }
    if (algos_.count(n)) {
      c.ws(algos_[n].ws, label);
      return;
    }
    const std::string what = shapes(n);
    Algos a{};
    DC_CUDNN(cudnnCreateTensorDescriptor(a.x.out()), what);
    DC_CUDNN(cudnnCreateTensorDescriptor(a.y.out()), what);
    const cudnnTensorDescriptor_t x = a.x.get(), y = a.y.get();
    const cudnnFilterDescriptor_t w = wdesc_.get();
    const cudnnConvolutionDescriptor_t conv = conv_.get();
    DC_CUDNN(cudnnSetTensor4dDescriptor(x, format(), dt_, n, int(C), int(pc.h), int(pc.w)), what);
    DC_CUDNN(cudnnSetTensor4dDescriptor(y, format(), dt_, n, int(OC), int(OH), int(OW)), what);
    // Only what backward will run: nothing for a layer it never reaches,
    // no weight gradient for a frozen one.
    const bool data_grad = needs_backward, filter_grad = needs_backward && !frozen && !wgrad_gemm_;
    if (graph_) plan_graphs(c, n, a, data_grad, filter_grad);
    int got = 0;
    if (!a.g_fwd) {
      cudnnConvolutionFwdAlgoPerf_t fp[8];
      DC_CUDNN(cudnnFindConvolutionForwardAlgorithm(c.dnn, x, w, conv, y, 8, &got, fp), what);
      a.fwd = pick(fp, got, a.ws, what, "forward");
    }
    if (data_grad && !a.g_data) {
      cudnnConvolutionBwdDataAlgoPerf_t dp[8];
      DC_CUDNN(cudnnFindConvolutionBackwardDataAlgorithm(c.dnn, w, y, conv, x, 8, &got, dp), what);
      a.bwd_data = pick(dp, got, a.ws, what, "backward data");
    }
    if (filter_grad && !a.g_filter) {
      cudnnConvolutionBwdFilterAlgoPerf_t wp[8];
      DC_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithm(c.dnn, x, y, conv, w, 8, &got, wp),
               what);
      a.bwd_filter = pick(wp, got, a.ws, what, "backward filter");
    }
    // Stored only once every search has succeeded, so that a failed one is
    // retried on the next prepare.
    const Algos& kept = algos_[n] = std::move(a);
    c.ws(kept.ws, label);
  }

  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    if (depthwise) {
      depthwise_forward(dw_dims(n), in[0], params[0].value, bias ? params[1].value : nullptr, out,
                        c.reduced, c.low, relu, c.stream);
      DC_LAUNCHED(shapes(n));
      return;
    }
    if (pw_) {
      pointwise_forward(c, in[0], out, n);
      return;
    }
    Algos& a = algos_.at(n);
    const float one = 1.f, zero = 0.f;
    const float* x = padded_input(c, in[0], n);
    if (reduced_) {
      // Channels last: the KRSC copy from the float32 weights, each step
      // (they are small); the optimizer keeps the KCRS 16-bit copy current,
      // not this one.
      if (nhwc_) to_low_layout(c, params[0].value, w_nhwc_.get<void>(), OC, C, KH * KW);
      to_low_layout(c, x, x_low_.get<void>(), n, C, pc.h * pc.w);
      DC_LAUNCHED(shapes(n));
      if (a.g_fwd)
        a.g_fwd->run(c.dnn, x_low_.get<void>(), low_weight(), y_low_.get<void>(),
                     c.workspace->get(), shapes(n));
      else
        DC_CUDNN(
            cudnnConvolutionForward(c.dnn, &one, a.x.get(), x_low_.get<void>(), wdesc_.get(),
                                    low_weight(), conv_.get(), a.fwd, c.workspace->get(),
                                    c.workspace->bytes(), &zero, a.y.get(), y_low_.get<void>()),
            shapes(n));
      from_low_layout(c, y_low_.get<void>(), out, n, OC, OH * OW, false);
      DC_LAUNCHED(shapes(n));
    } else {
      DC_CUDNN(cudnnConvolutionForward(c.dnn, &one, a.x.get(), x, wdesc_.get(), params[0].value,
                                       conv_.get(), a.fwd, c.workspace->get(), c.workspace->bytes(),
                                       &zero, a.y.get(), out),
               shapes(n));
    }
    if (bias || relu.on) {
      bias_relu(out, bias ? params[1].value : nullptr, n, OC, OH * OW, relu, c.stream);
      DC_LAUNCHED(shapes(n));
    }
  }

  void backward(OpContext& c, const std::vector<const float*>& in, const float* out,
                const float* dout, const std::vector<float*>& din, int n) override {
    if (relu.on) {
      // The plan's gradient buffer of this layer, which only this backward
      // reads: masked where it lies.
      relu_mask(out, const_cast<float*>(dout), int64_t(n) * OC * OH * OW, relu.hi, c.stream);
      DC_LAUNCHED(shapes(n));
    }
    if (depthwise) {
      const DwDims d = dw_dims(n);
      float* db = bias ? params[1].grad : nullptr;
      if (params[0].grad || db) {
        if (!dw_parts_.bytes())
          throw DeviceError(shapes(n) + ": weight gradients asked of a layer prepared as frozen");
        depthwise_backward_weight(d, in[0], dout, params[0].grad, db, dw_parts_.get<void>(),
                                  c.reduced, c.low, c.stream);
        DC_LAUNCHED(shapes(n));
      }
      if (din[0]) {
        depthwise_backward_data(d, dout, params[0].value, din[0], c.reduced, c.low, c.stream);
        DC_LAUNCHED(shapes(n));
      }
      return;
    }
    // A frozen layer (null gradients) only passes the gradient on.
    if (bias && params[1].grad) {
      bias_grad(dout, params[1].grad, n, OC, OH * OW, bias_parts_.get<void>(), c.stream);
      DC_LAUNCHED(shapes(n));
    }
    if (pw_) {
      pointwise_backward(c, in[0], dout, din[0], n);
      return;
    }
    Algos& a = algos_.at(n);
    const float one = 1.f;
    if (reduced_) {
      backward_low(c, a, dout, din[0], n);
      return;
    }
    // The padded copy is made again rather than trusted to hold this
    // input still: one pass over a plane, where it is needed at all.
    if (params[0].grad)
      DC_CUDNN(cudnnConvolutionBackwardFilter(c.dnn, &one, a.x.get(), padded_input(c, in[0], n),
                                              a.y.get(), dout, conv_.get(), a.bwd_filter,
                                              c.workspace->get(), c.workspace->bytes(), &one,
                                              wdesc_.get(), params[0].grad),
               shapes(n));
    if (!din[0]) return;
    // With a padded copy, its gradient (beta 0) into the copy's buffer,
    // which the weight gradient has read by now, then the interior onto dx.
    const float zero = 0.f;
    const bool via_copy = pc.needed();
    DC_CUDNN(cudnnConvolutionBackwardData(c.dnn, &one, wdesc_.get(), params[0].value, a.y.get(),
                                          dout, conv_.get(), a.bwd_data, c.workspace->get(),
                                          c.workspace->bytes(), via_copy ? &zero : &one, a.x.get(),
                                          via_copy ? xpad_.get<float>() : din[0]),
             shapes(n));
    if (via_copy) crop_grad_add(c, din[0], n);
  }

 private:
  // The pointwise path's buffers: the bias gradient's partial sums, the
  // batch's ones for the GEMV (made at the first prepare, which is for the
  // largest batch and runs before any graph capture), and the weight
  // gradient's per-sample products in the shared workspace.
  void prepare_pointwise(OpContext& c, int n) {
    const bool wgrad = needs_backward && !frozen;
    if (bias && wgrad && !bias_parts_.bytes())
      bias_parts_ = DeviceBuffer(*c.alloc, bias_grad_scratch_bytes(OC),
                                 label + " bias gradient partial sums");
    if (!wgrad) return;
    c.ws(size_t(n) * size_t(C * OC) * 4, label);
    if (n > int(pw_ones_host_.size())) {
      pw_ones_host_.assign(size_t(n), 1.f);
      pw_ones_ = DeviceBuffer(*c.alloc, size_t(n) * 4, label + " ones (batch sums)");
      DC_CUDA(cudaMemcpyAsync(pw_ones_.get<void>(), pw_ones_host_.data(), size_t(n) * 4,
                              cudaMemcpyHostToDevice, c.stream),
              shapes(n));
    }
  }

  // Column-major views of the NCHW planes: x[n] is HW × C (ld HW), y[n]
  // HW × OC, and the OC × C weight is C × OC (ld C). y = x · W per sample.
  void pointwise_forward(OpContext& c, const float* x, float* y, int n) {
    const float one = 1.f, zero = 0.f;
    const int hw = int(H * W);
    DC_CUBLAS(cublasGemmStridedBatchedEx(c.blas, CUBLAS_OP_N, CUBLAS_OP_N, hw, int(OC), int(C),
                                         &one, x, CUDA_R_32F, hw, int64_t(C) * hw, params[0].value,
                                         CUDA_R_32F, int(C), 0, &zero, y, CUDA_R_32F, hw,
                                         int64_t(OC) * hw, n, pw_math_, CUBLAS_GEMM_DEFAULT),
              shapes(n));
    if (bias || relu.on) {
      bias_relu(y, bias ? params[1].value : nullptr, n, OC, H * W, relu, c.stream);
      DC_LAUNCHED(shapes(n));
    }
  }

  // dx += dy · Wᵀ per sample; dW += Σₙ x[n]ᵀ · dy[n]: the per-sample C × OC
  // products into the workspace, then one GEMV with the batch's ones.
  void pointwise_backward(OpContext& c, const float* x, const float* dy, float* dx, int n) {
    const float one = 1.f, zero = 0.f;
    const int hw = int(H * W);
    if (params[0].grad) {
      float* parts = c.workspace->get();
      DC_CUBLAS(cublasGemmStridedBatchedEx(c.blas, CUBLAS_OP_T, CUBLAS_OP_N, int(C), int(OC), hw,
                                           &one, x, CUDA_R_32F, hw, int64_t(C) * hw, dy, CUDA_R_32F,
                                           hw, int64_t(OC) * hw, &zero, parts, CUDA_R_32F, int(C),
                                           int64_t(C) * OC, n, pw_math_, CUBLAS_GEMM_DEFAULT),
                shapes(n));
      DC_CUBLAS(cublasSgemv(c.blas, CUBLAS_OP_N, int(C * OC), n, &one, parts, int(C * OC),
                            pw_ones_.get<float>(), 1, &one, params[0].grad, 1),
                shapes(n));
    }
    if (!dx) return;
    DC_CUBLAS(cublasGemmStridedBatchedEx(
                  c.blas, CUBLAS_OP_N, CUBLAS_OP_T, hw, int(C), int(OC), &one, dy, CUDA_R_32F, hw,
                  int64_t(OC) * hw, params[0].value, CUDA_R_32F, int(C), 0, &one, dx, CUDA_R_32F,
                  hw, int64_t(C) * hw, n, pw_math_, CUBLAS_GEMM_DEFAULT),
              shapes(n));
  }

  DwDims dw_dims(int n) const {
    return DwDims{n,       int(C),  int(OC / C), int(H),  int(W),  int(OH), int(OW), int(KH),
                  int(KW), int(SH), int(SW),     int(DH), int(DW), int(PH), int(PW)};
  }

  // The depthwise kernels' scratch, once; false when a batch of n is past
  // their index range (depthwise_fits), which sends the layer to cuDNN for
  // good (uneven 'same' padding through the padded copy), or refuses it
  // once a smaller batch has run on them.
  bool prepare_depthwise(OpContext& c, int n) {
    if (!depthwise_fits(dw_dims(n))) {
      // Once a smaller batch has run on the kernels it has no cuDNN
      // algorithms; switching now would leave it without any.
      if (dw_prepared_)
        throw DeviceError(shapes(n) + ": too large for the depthwise kernels; use a smaller batch");
      std::fprintf(stderr, "%s: too large for the depthwise kernels; cuDNN runs it\n",
                   shapes(n).c_str());
      depthwise = false;
      return false;
    }
    if (!dw_parts_.bytes() && needs_backward && !frozen)
      dw_parts_ = DeviceBuffer(*c.alloc, depthwise_wgrad_scratch_bytes(dw_dims(n)),
                               label + " depthwise weight-gradient partial sums");
    if (!dw_said_ && env("DC_CUDA_LOG_ALGOS") == "1") {
      const DwVariant v = dw_variant(dw_dims(n));
      std::fprintf(
          stderr, "%s: depthwise kernels (%s)\n", shapes(n).c_str(),
          v.k ? (std::to_string(v.k) + "x" + std::to_string(v.k) + " stride " + std::to_string(v.s))
                    .c_str()
              : "general");
    }
    dw_said_ = dw_prepared_ = true;
    return true;
  }

  // dy to 16 bits (into y_low_, free after forward), dw through dw_low_, then
  // dx into x_low_: the weight gradient has read the 16-bit input by then.
  void backward_low(OpContext& c, Algos& a, const float* dout, float* din, int n) {
    const float one = 1.f, zero = 0.f;
    const std::string what = shapes(n);
    to_low_layout(c, dout, y_low_.get<void>(), n, OC, OH * OW);
    DC_LAUNCHED(what);
    if (params[0].grad && wgrad_gemm_) {
      wgrad_by_gemm(c, n);
    } else if (params[0].grad && a.g_filter) {
      a.g_filter->run(c.dnn, x_low_.get<void>(), dw_low_.get<void>(), y_low_.get<void>(),
                      c.workspace->get(), what);
      from_low_layout(c, dw_low_.get<void>(), params[0].grad, OC, C / G, KH * KW, true);
      DC_LAUNCHED(what);
    } else if (params[0].grad) {
      DC_CUDNN(cudnnConvolutionBackwardFilter(c.dnn, &one, a.x.get(), x_low_.get<void>(), a.y.get(),
                                              y_low_.get<void>(), conv_.get(), a.bwd_filter,
                                              c.workspace->get(), c.workspace->bytes(), &zero,
                                              wdesc_.get(), dw_low_.get<void>()),
               what);
      from_low_layout(c, dw_low_.get<void>(), params[0].grad, OC, C / G, KH * KW, true);
      DC_LAUNCHED(what);
    }
    if (!din) return;
    if (a.g_data)
      a.g_data->run(c.dnn, x_low_.get<void>(), low_weight(), y_low_.get<void>(), c.workspace->get(),
                    what);
    else
      DC_CUDNN(cudnnConvolutionBackwardData(c.dnn, &one, wdesc_.get(), low_weight(), a.y.get(),
                                            y_low_.get<void>(), conv_.get(), a.bwd_data,
                                            c.workspace->get(), c.workspace->bytes(), &zero,
                                            a.x.get(), x_low_.get<void>()),
               what);
    if (!pc.needed()) {
      from_low_layout(c, x_low_.get<void>(), din, n, C, H * W, true);
      DC_LAUNCHED(what);
      return;
    }
    // The copy's gradient to float32 in the copy's buffer, then its
    // interior onto dx.
    from_low_layout(c, x_low_.get<void>(), xpad_.get<float>(), n, C, pc.h * pc.w, false);
    DC_LAUNCHED(what);
    crop_grad_add(c, din, n);
  }

  // The input cuDNN convolves: x itself, or its padded copy, made now.
  const float* padded_input(OpContext& c, const float* x, int n) {
    if (!pc.needed()) return x;
    pad_planes(x, xpad_.get<float>(), int64_t(n) * C, H, W, pc.top, pc.left, pc.h, pc.w, c.stream);
    DC_LAUNCHED(shapes(n));
    return xpad_.get<float>();
  }
  // dx += the interior of the copy's float32 gradient (in xpad_).
  void crop_grad_add(OpContext& c, float* dx, int n) {
    crop_planes_add(xpad_.get<float>(), dx, int64_t(n) * C, H, W, pc.top, pc.left, pc.h, pc.w,
                    c.stream);
    DC_LAUNCHED(shapes(n));
  }

  // The 16-bit convolutions of a batch of n through the graph API. The
  // candidates are timed on this op's own 16-bit buffers, filled with a
  // non-zero pattern first (zeros can time faster than real data); they
  // are scratch between steps. A direction cuDNN cannot plan stays on the
  // legacy API, said once per layer, unless DC_CUDA_CONV=graph.
  void plan_graphs(OpContext& c, int n, Algos& a, bool data_grad, bool filter_grad) {
    const std::string what = shapes(n);
    const ConvGeometry g{.n = n,
                         .c = C,
                         .h = pc.h,
                         .w = pc.w,
                         .k = OC,
                         .r = KH,
                         .s = KW,
                         .oh = OH,
                         .ow = OW,
                         .groups = G,
                         .pad_h = pc.pad_h,
                         .pad_w = pc.pad_w,
                         .stride_h = SH,
                         .stride_w = SW,
                         .dil_h = DH,
                         .dil_w = DW,
                         .channels_last = nhwc_,
                         .data = dt_};
    void* x = x_low_.get<void>();
    void* y = y_low_.get<void>();
    DC_CUDA(cudaMemsetAsync(x, 0x3c, size_t(n) * C * pc.h * pc.w * 2, c.stream), what);
    DC_CUDA(cudaMemsetAsync(y, 0x3c, size_t(n) * OC * OH * OW * 2, c.stream), what);
    if (nhwc_) DC_CUDA(cudaMemsetAsync(w_nhwc_.get<void>(), 0x3c, w_nhwc_.bytes(), c.stream), what);
    auto attempt = [&](std::optional<ConvGraph>& slot, ConvDir d, const void* w) {
      ConvGraph cg;
      try {
        cg.build(c.dnn, c.stream, *c.alloc, g, d, 1.f, 0.f, x, w, y, kGraphWorkspace, what);
      } catch (const DeviceError& e) {
        if (graph_required_) throw;
        if (!fallback_said_)
          std::fprintf(stderr, "%s: %s; the legacy cuDNN API runs it\n", label.c_str(), e.what());
        fallback_said_ = true;
        return;
      }
      if (env("DC_CUDA_LOG_ALGOS") == "1")
        std::fprintf(stderr, "%s %s (graph API, %s): %s\n", what.c_str(), conv_dir_name(d),
                     nhwc_ ? "NHWC" : "NCHW", cg.choice().c_str());
      a.ws = std::max(a.ws, cg.workspace());
      slot = std::move(cg);
    };
    attempt(a.g_fwd, ConvDir::Forward, low_weight());
    if (data_grad) attempt(a.g_data, ConvDir::BackwardData, low_weight());
    if (filter_grad) attempt(a.g_filter, ConvDir::BackwardFilter, dw_low_.get<void>());
  }

  cudnnTensorFormat_t format() const { return nhwc_ ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW; }
  const void* low_weight() const { return nhwc_ ? w_nhwc_.get<void>() : params[0].value_low; }

  // A float32 [B, ch, hw] tensor (NCHW, or KCRS for the weights) to its
  // 16-bit copy in the layout cuDNN is given: the same order, or channels
  // last ([B, hw, ch]) on the NHWC path.
  void to_low_layout(OpContext& c, const float* src, void* dst, int64_t B, int64_t ch,
                     int64_t hw) const {
    if (nhwc_)
      to_low_transposed(src, dst, B, ch, hw, c.low, c.stream);
    else
      to_low(src, dst, B * ch * hw, c.low, c.stream);
  }
  // And back, into (or, accumulating, onto) the float32 [B, ch, hw] tensor.
  void from_low_layout(OpContext& c, const void* src, float* dst, int64_t B, int64_t ch, int64_t hw,
                       bool accumulate) const {
    if (nhwc_)
      from_low_transposed(src, dst, B, hw, ch, c.low, accumulate, c.stream);
    else
      from_low(src, dst, B * ch * hw, c.low, accumulate, c.stream);
  }

  // Samples whose columns go into one GEMM: at most 128 MiB of columns, and
  // fewer than 2^31 (pixel, channel) pairs for the unfolding's 32-bit
  // index arithmetic.
  int64_t cols_samples(int64_t n) const {
    const int64_t per = OH * OW * KH * KW * C * 2;
    const int64_t by_bytes = std::max<int64_t>(1, (int64_t(128) << 20) / per);
    const int64_t by_index = std::max<int64_t>(1, ((int64_t(1) << 31) - 1) / (OH * OW * C));
    return std::min({n, by_bytes, by_index});
  }

  // dW += (NHWC dy)ᵀ · columns, chunk by chunk into the float32 KRSC buffer
  // (the first chunk overwrites it), then reordered into the KCRS gradient.
  // The GEMM is Dense's weight gradient with the columns as its input.
  void wgrad_by_gemm(OpContext& c, int n) {
    const float one = 1.f, zero = 0.f;
    const cudaDataType_t t = c.low == Low::Bf16 ? CUDA_R_16BF : CUDA_R_16F;
    const int64_t K = KH * KW * C, per = cols_samples(n);
    const Im2colDims d{int(C),        int(pc.h),     int(pc.w), int(KH), int(KW), int(SH), int(SW),
                       int(pc.pad_h), int(pc.pad_w), int(DH),   int(DW), int(OH), int(OW)};
    const auto* x = x_low_.get<uint16_t>();
    const auto* dy = y_low_.get<uint16_t>();
    for (int64_t n0 = 0; n0 < n; n0 += per) {
      const int64_t cnt = std::min<int64_t>(per, n - n0), M = cnt * OH * OW;
      im2col_nhwc_low(x + n0 * pc.h * pc.w * C, cols_.get<void>(), cnt, d, c.stream);
      DC_LAUNCHED(shapes(n));
      DC_CUBLAS(cublasGemmEx(c.blas, CUBLAS_OP_N, CUBLAS_OP_T, int(K), int(OC), int(M), &one,
                             cols_.get<void>(), t, int(K), dy + n0 * OH * OW * OC, t, int(OC),
                             n0 ? &one : &zero, dw32_.get<float>(), CUDA_R_32F, int(K),
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                shapes(n));
    }
    transpose_accumulate(dw32_.get<float>(), params[0].grad, OC, KH * KW, C, c.stream);
    DC_LAUNCHED(shapes(n));
  }

  bool reduced_ = false, nhwc_ = false, wgrad_gemm_ = false;
  bool pw_decided_ = false, pw_ = false;
  cublasComputeType_t pw_math_ = CUBLAS_COMPUTE_32F_FAST_16BF;
  std::vector<float> pw_ones_host_;  // the ones' source, alive while a copy may read it
  DeviceBuffer pw_ones_;
  bool graph_ = false, graph_required_ = false, fallback_said_ = false, dw_said_ = false,
       dw_prepared_ = false;
  cudnnDataType_t dt_ = CUDNN_DATA_FLOAT;
  int cap_ = 0, pad_cap_ = 0;
  DeviceBuffer x_low_, y_low_, dw_low_, w_nhwc_, bias_parts_, cols_, dw32_, dw_parts_, xpad_;
  FilterDesc wdesc_;
  ConvDesc conv_;
  std::map<int, Algos> algos_;
};

std::unique_ptr<Op> make_conv(const PlanStep& s) {
  const Attrs& a = s.attrs;
  const std::vector<Shape>& in = s.in_shapes;
  const Shape& out = s.out_shape;
  auto op = std::make_unique<Conv2D>();
  Conv2D& g = *op;
  g.C = in[0][0];
  g.H = in[0][1];
  g.W = in[0][2];
  g.OC = a.i("filters");
  g.G = a.i("groups");
  g.KH = a.ints("kernel")[0];
  g.KW = a.ints("kernel")[1];
  g.SH = a.ints("stride")[0];
  g.SW = a.ints("stride")[1];
  g.DH = a.ints("dilation")[0];
  g.DW = a.ints("dilation")[1];
  g.bias = a.b("bias");
  const std::string& mode = a.s("padding_mode");
  int64_t pt = 0, pb = 0, pl = 0, pr = 0;
  if (mode == "explicit") {
    pt = pb = a.ints("padding")[0];
    pl = pr = a.ints("padding")[1];
  } else if (mode == "same") {
    dc::same_padding(g.H, g.KH, g.SH, g.DH, pt, pb, "height");
    dc::same_padding(g.W, g.KW, g.SW, g.DW, pl, pr, "width");
  }
  g.depthwise = is_depthwise(g.C, g.OC, g.G) && env("DC_CUDA_DEPTHWISE") != "cudnn";
  g.pc = conv_pad_copy(g.H, g.W, pt, pb, pl, pr);
  g.PH = pt;
  g.PW = pl;
  g.OH = out[1];
  g.OW = out[2];
  g.params.push_back({"weight", Shape{g.OC, g.C / g.G, g.KH, g.KW}, true});
  if (g.bias) g.params.push_back({"bias", Shape{g.OC}, true});
  return op;
}

}  // namespace

void register_conv_ops(OpRegistry& r) {
  r.add("Conv2D", make_conv);
}

}  // namespace dc::cuda
