// SimpleRNN, LSTM and GRU through cuDNN's RNN API (v8 calls, cuDNN 9).
//
// Layout: the engine's sequences are [N, T, F] batch first, which is cuDNN's
// CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED, so float32 inputs and outputs
// are used in place. cuDNN's gate orders are PyTorch's (LSTM i,f,g,o; GRU
// r,z,n), its GRU with CUDNN_RNN_DOUBLE_BIAS puts b_hn inside
// r * (W_hn h + b_hn) as PyTorch does, and every gate matrix in its weight
// space is row-major [H, in], one gate block of PyTorch's weight_ih /
// weight_hh.
//
// Data type: float32, or in bf16/fp16 (OpContext::reduced) 16-bit data and
// weights with float32 math on tensor cores (mathPrec float), as PyTorch's
// autocast LSTM runs; bf16 needs cuDNN 9.13 (the first release whose RNN
// takes bf16 data; PyTorch gates on the same version), except that bf16
// keeps float32 data where cuDNN's persistent algorithm runs it, which is
// faster there (measured, see choose_data). The input sequence
// is converted to 16 bits in one pass and the outputs back to float32, the
// gradients the other way. Where the version is older or cuDNN refuses the
// configuration (tried once on scratch buffers), float32 data runs it and
// the reason is printed once. DC_CUDA_RNN_DATA=float keeps float32 data (A/B
// runs); DC_CUDA_RNN_DATA=low makes a refusal an error (tests).
//
// Weights: the plan keeps every parameter in its own contiguous buffer (one
// fused optimizer launch), so the op writes the PyTorch-layout parameters
// into cuDNN's weight space (converting to 16 bits there) before each
// forward and adds cuDNN's weight gradients back into the parameter
// gradients after backward, zeroing them as it reads them: cuDNN's weight
// gradient only accumulates (CUDNN_WGRAD_MODE_ADD), and this leaves the
// space at zero for the next step without a memset. Both passes are one
// launch each over a table of segments found once with
// cudnnGetRNNWeightParams, about 80k values for the benchmark's LSTM.
//
// Last-state outputs come from cuDNN's final states (hy) of the last layer,
// not from the output sequence; their gradient enters as dhy, with an
// output-sequence gradient of zeros that is written once, so no step
// memsets or scatters a [N, T, D*H] buffer.
//
// Algorithm: cuDNN's persistent kernel for small hidden sizes
// (CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H, which keeps the recurrent weights
// on chip across the time steps) where the hidden size is at most 128 and
// there is no dropout between layers, as PyTorch's LSTM does for training.
// It is tried once on scratch buffers at the plan's batch size (forward, and
// backward where the plan trains); where cuDNN refuses it the standard
// algorithm runs, and the reason is printed once.
// DC_CUDA_RNN_ALGO=standard keeps the standard one (A/B runs);
// DC_CUDA_RNN_ALGO=persistent makes a refusal an error (tests).
//
// Dropout between layers is cuDNN's own (its mask generator, seeded once per
// layer), so masks differ from the CPU's while the rate and scaling agree.
// Evaluation-mode forwards use a second descriptor without dropout, which
// also lets tests run backward after an evaluation forward.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "handles.h"
#include "kernels.h"
#include "op_registry.h"

namespace dc::cuda {
namespace {

class Rnn : public Op {
 public:
  cudnnRNNMode_t mode = CUDNN_LSTM;
  int64_t T = 0, F = 0, H = 0, L = 1, D = 1, G = 4;
  float dropout = 0.f;
  bool seq = false, learned = false, bias = true;

  // cuDNN's dropout state advances per call, which a replay would not do.
  // Without dropout the calls take only fixed pointers; the graph tests
  // compare replayed LSTM steps with eager ones.
  bool graph_safe() const override { return !(dropout > 0.f && L > 1); }

  std::string shapes(int n) const {
    return label + " (input " + std::to_string(n) + "x" + std::to_string(T) + "x" +
           std::to_string(F) + ", hidden " + std::to_string(H) + ", " + std::to_string(L) +
           " layer" + (L > 1 ? "s" : "") + (D == 2 ? ", bidirectional" : "") + ")";
  }

  void prepare(OpContext& c, int n) override {
    if (!rnn_) {
      choose_data(c, n);
      choose_algo(c, n);
      setup(c, n);
    }
    if (!per_.count(n)) per_batch(c, n);
    c.ws(per_.at(n).ws, label);
  }

  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    const PerBatch& b = per_.at(n);
    const std::string what = shapes(n);
    const int64_t xn = int64_t(n) * T * F, yn = int64_t(n) * T * D * H, hn = L * D * n * H;
    pack_weights(pack_.get<WeightSegment>(), npack_, longest_, space_, c.stream);
    DC_LAUNCHED(what + ": packing the weights");
    const void* x = in[0];
    if (low()) {
      to_low(in[0], xlow_.get<void>(), xn, c.low, c.stream);
      DC_LAUNCHED(what + ": 16-bit input");
      x = xlow_.get<void>();
    }
    const void* hx = nullptr;
    const void* cx = nullptr;
    if (learned) {
      broadcast_states(h0_.get<const float*>(), hx_.get(), int(L * D), n, H, c.stream);
      if (mode == CUDNN_LSTM)
        broadcast_states(c0_.get<const float*>(), cx_.get(), int(L * D), n, H, c.stream);
      hx = hx_.get();
      cx = mode == CUDNN_LSTM ? cx_.get() : nullptr;
      if (low()) {
        to_low(hx_.get(), hxl_.get<void>(), hn, c.low, c.stream);
        hx = hxl_.get<void>();
        if (mode == CUDNN_LSTM) {
          to_low(cx_.get(), cxl_.get<void>(), hn, c.low, c.stream);
          cx = cxl_.get<void>();
        }
      }
      DC_LAUNCHED(what + ": initial states");
    }
    used_ = c.training && rnn_drop_ ? rnn_drop_.get() : rnn_.get();
    // The output sequence straight into out where it is the output in
    // float32; otherwise into ybuf_ (also what backward reads).
    void* y = seq && !low() ? static_cast<void*>(out) : ybuf_.get<void>();
    // Inference mode (no reserve space written) when no backward follows:
    // pure inference, or a layer in a frozen prefix.
    const cudnnForwardMode_t fm =
        c.need_backward && needs_backward ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE;
    // Last state only: cuDNN's final states, straight into the output where
    // they are all of it (one layer, one direction, float32).
    void* hy = nullptr;
    if (!seq) hy = hy_is_out() ? static_cast<void*>(out) : hybuf_.get<void>();
    DC_CUDNN(
        cudnnRNNForward(c.dnn, used_, fm, seqlen_.get<int32_t>(), b.x.get(), x, b.y.get(), y,
                        b.h.get(), hx, hy, b.h.get(), cx, nullptr, wbytes_, wspace_.get(), b.ws,
                        c.workspace->get(), fm == CUDNN_FWD_MODE_TRAINING ? b.reserve : 0,
                        fm == CUDNN_FWD_MODE_TRAINING ? reserve_.get() : nullptr),
        what);
    if (seq) {
      if (low()) {
        from_low(ybuf_.get<void>(), out, yn, c.low, false, c.stream);
        DC_LAUNCHED(what + ": float32 output");
      }
      return;
    }
    if (hy_is_out()) return;
    // The last layer's final states, forward then reverse, each [n, H]:
    // the output rows [n, D*H] hold them side by side.
    const char* last = hybuf_.get<char>() + size_t((L - 1) * D * n * H) * es_;
    const float* src = reinterpret_cast<const float*>(last);
    if (low()) {
      float* dst = D == 1 ? out : hyf_.get();
      from_low(last, dst, D * n * H, c.low, false, c.stream);
      DC_LAUNCHED(what + ": float32 final states");
      if (D == 1) return;
      src = hyf_.get();
    }
    if (D == 1) {
      DC_CUDA(cudaMemcpyAsync(out, src, size_t(n * H) * 4, cudaMemcpyDeviceToDevice, c.stream),
              what + ": final states");
      return;
    }
    for (int64_t d = 0; d < 2; ++d)
      DC_CUDA(cudaMemcpy2DAsync(out + d * H, size_t(2 * H) * 4, src + d * n * H, size_t(H) * 4,
                                size_t(H) * 4, size_t(n), cudaMemcpyDeviceToDevice, c.stream),
              what + ": final states");
  }

  void backward(OpContext& c, const std::vector<const float*>& in, const float* out,
                const float* dout, const std::vector<float*>& din, int n) override {
    const PerBatch& b = per_.at(n);
    const std::string what = shapes(n) + " backward";
    const int64_t xn = int64_t(n) * T * F, yn = int64_t(n) * T * D * H, hn = L * D * n * H;
    const void* y = seq && !low() ? static_cast<const void*>(out) : ybuf_.get<void>();
    const void* dy = dout;
    const void* dhy = nullptr;
    if (seq) {
      if (low()) {
        to_low(dout, dybuf_.get<void>(), yn, c.low, c.stream);
        DC_LAUNCHED(what + ": 16-bit output gradient");
        dy = dybuf_.get<void>();
      }
    } else {
      // The gradient enters through the last layer's final states; the
      // output sequence's gradient is the zeros dybuf_ was given when
      // allocated, and the other layers' dhy the zeros of b.dhy.
      dy = dybuf_.get<void>();
      if (hy_is_out()) {
        dhy = dout;
      } else {
        char* last = b.dhy.get<char>() + size_t((L - 1) * D * n * H) * es_;
        float* dst = low() ? hyf_.get() : reinterpret_cast<float*>(last);
        if (low() && D == 1) {
          to_low(dout, last, n * H, c.low, c.stream);
        } else if (D == 1) {
          DC_CUDA(cudaMemcpyAsync(dst, dout, size_t(n * H) * 4, cudaMemcpyDeviceToDevice, c.stream),
                  what + ": final state gradients");
        } else {
          for (int64_t d = 0; d < 2; ++d)
            DC_CUDA(
                cudaMemcpy2DAsync(dst + d * n * H, size_t(H) * 4, dout + d * H, size_t(2 * H) * 4,
                                  size_t(H) * 4, size_t(n), cudaMemcpyDeviceToDevice, c.stream),
                what + ": final state gradients");
          if (low()) to_low(dst, last, 2 * n * H, c.low, c.stream);
        }
        DC_LAUNCHED(what + ": final state gradients");
        dhy = b.dhy.get<void>();
      }
    }
    const void* x = low() ? xlow_.get<void>() : static_cast<const void*>(in[0]);
    const void* hx = nullptr;
    const void* cx = nullptr;
    void* dhx = nullptr;
    void* dcx = nullptr;
    if (learned) {
      hx = low() ? hxl_.get<void>() : hx_.get<void>();
      dhx = low() ? dhxl_.get<void>() : dhx_.get<void>();
      if (mode == CUDNN_LSTM) {
        cx = low() ? cxl_.get<void>() : cx_.get<void>();
        dcx = low() ? dcxl_.get<void>() : dcx_.get<void>();
      }
    }
    // cuDNN writes dx (it does not accumulate), so it goes through scratch.
    DC_CUDNN(cudnnRNNBackwardData_v8(c.dnn, used_, seqlen_.get<int32_t>(), b.y.get(), y, dy,
                                     b.x.get(), dxbuf_.get<void>(), b.h.get(), hx, dhy, dhx,
                                     b.h.get(), cx, nullptr, dcx, wbytes_, wspace_.get(), b.ws,
                                     c.workspace->get(), b.reserve, reserve_.get()),
             what);
    if (din[0]) {
      if (low())
        from_low(dxbuf_.get<void>(), din[0], xn, c.low, true, c.stream);
      else
        accumulate(dxbuf_.get(), din[0], xn, c.stream);
      DC_LAUNCHED(what + ": input gradient");
    }
    if (frozen) return;  // no weight or initial state gradients
    // Weights after data: cuDNN's backward-weights reads what backward-data
    // left in the reserve space. It adds into dwspace_, which the unpack of
    // the previous step (or the allocation) left at zero.
    DC_CUDNN(cudnnRNNBackwardWeights_v8(c.dnn, used_, CUDNN_WGRAD_MODE_ADD, seqlen_.get<int32_t>(),
                                        b.x.get(), x, b.h.get(), hx, b.y.get(), y, wbytes_,
                                        dwspace_.get(), b.ws, c.workspace->get(), b.reserve,
                                        reserve_.get()),
             what);
    unpack_weight_grads(unpack_.get<WeightSegment>(), npack_, longest_, space_, c.stream);
    DC_LAUNCHED(what + ": weight gradients");
    if (learned) {
      if (low()) {
        from_low(dhxl_.get<void>(), dhx_.get(), hn, c.low, false, c.stream);
        if (mode == CUDNN_LSTM) from_low(dcxl_.get<void>(), dcx_.get(), hn, c.low, false, c.stream);
      }
      reduce_states(dhx_.get(), h0g_.get<float* const>(), int(L * D), n, H, c.stream);
      if (mode == CUDNN_LSTM)
        reduce_states(dcx_.get(), c0g_.get<float* const>(), int(L * D), n, H, c.stream);
      DC_LAUNCHED(what + ": initial state gradients");
    }
  }

 private:
  struct PerBatch {
    RnnDataDesc x, y;
    TensorDesc h;
    size_t ws = 0, reserve = 0;
    // Last-state outputs: the final-state gradient [L*D, n, H] of this batch
    // size; only the last layer's part is written, the rest stays zero.
    DeviceBuffer dhy;
  };

  ParamSlot& param(const std::string& name) {
    for (ParamSlot& p : params)
      if (p.name == name) return p;
    throw Error(label + ": no parameter " + name);
  }

  bool low() const { return dtype_ != CUDNN_DATA_FLOAT; }
  // Whether a last-state output is all of cuDNN's hy (one layer, one
  // direction, float32), so hy and dhy are the output and its gradient.
  bool hy_is_out() const { return !seq && D == 1 && L == 1 && !low(); }

  // 16-bit data where the precision asks for it and cuDNN runs it on this
  // shape; otherwise float32.
  void choose_data(OpContext& c, int n) {
    dtype_ = CUDNN_DATA_FLOAT;
    es_ = 4;
    space_ = SpaceType::F32;
    if (!c.reduced) return;
    const char* e = std::getenv("DC_CUDA_RNN_DATA");
    const std::string want = e ? e : "";
    if (want == "float") return;
    const bool bf16 = c.low == Low::Bf16;
    const cudnnDataType_t t = bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
    // bf16 data never runs cuDNN's persistent kernel at full speed (cuDNN
    // 9.14 on an H200, LSTM rows at batch 64: 174k samples/s with bf16 data
    // under either algorithm, 240k with float32 data under the persistent
    // one, 107k under the standard one), so the persistent algorithm in
    // float32 wins where it runs; fp16 data is the faster in both (314k vs
    // 304k persistent, 174k vs 167k standard).
    if (bf16 && want != "low" && persistent_eligible() &&
        try_config(c, n, CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H, CUDNN_DATA_FLOAT).empty())
      return;
    const size_t v = cudnnGetVersion();
    std::string why;
    if (bf16 && v < kBf16RnnVersion)
      why = "cuDNN " + std::to_string(v) + " is older than 9.13, the first with bf16 RNN data";
    else
      why = try_config(c, n, CUDNN_RNN_ALGO_STANDARD, t);
    if (why.empty()) {
      dtype_ = t;
      es_ = 2;
      space_ = bf16 ? SpaceType::Bf16 : SpaceType::Fp16;
      return;
    }
    const char* name = bf16 ? "bf16" : "fp16";
    if (want == "low")
      throw DeviceError(shapes(n) + ": cuDNN's RNN cannot run " + name + " data: " + why);
    std::fprintf(stderr, "%s: %s data in cuDNN's RNN: %s; float32 data runs it\n", label.c_str(),
                 name, why.c_str());
  }

  // Whether the persistent algorithm may apply: hidden size at most 128, no
  // dropout between layers, and not turned off (DC_CUDA_RNN_ALGO=standard).
  bool persistent_eligible() const {
    const char* e = std::getenv("DC_CUDA_RNN_ALGO");
    if (e && std::string(e) == "standard") return false;
    return H <= 128 && !(dropout > 0.f && L > 1);
  }

  // The persistent algorithm where it may apply and cuDNN runs it on this
  // shape; otherwise the standard one.
  void choose_algo(OpContext& c, int n) {
    const char* e = std::getenv("DC_CUDA_RNN_ALGO");
    const std::string want = e ? e : "";
    algo_ = CUDNN_RNN_ALGO_STANDARD;
    if (want == "standard") return;
    std::string why;
    const bool eligible = persistent_eligible();
    if (H > 128)
      why = "hidden size " + std::to_string(H) + " is over 128";
    else if (!eligible)
      why = "it has dropout between layers";
    else
      why = try_config(c, n, CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H, dtype_);
    if (why.empty()) {
      algo_ = CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H;
      return;
    }
    if (want == "persistent")
      throw DeviceError(shapes(n) + ": cuDNN's persistent RNN algorithm cannot run it: " + why);
    // Said only where cuDNN itself refused; the other reasons are the rule.
    if (eligible)
      std::fprintf(stderr, "%s: cuDNN's persistent RNN algorithm: %s; the standard one runs it\n",
                   label.c_str(), why.c_str());
  }

  // Runs an algorithm and data type once on scratch buffers of a batch of
  // n: an empty string when every call succeeded, else cuDNN's error.
  // Checked here rather than met at the first training step, where a
  // refusal could only stop the run.
  std::string try_config(OpContext& c, int n, cudnnRNNAlgo_t algo, cudnnDataType_t dtype) {
    try {
      const std::string what =
          shapes(n) + ": trying " +
          (algo == CUDNN_RNN_ALGO_STANDARD ? "the standard" : "the persistent") + " algorithm";
      RnnDesc d;
      DC_CUDNN(cudnnCreateRNNDescriptor(d.out()), what);
      describe(c, d.get(), nullptr, n, algo, dtype);
      PerBatch b;
      describe_batch(b, n, dtype, what);
      size_t wbytes = 0, ws = 0, rs = 0;
      DC_CUDNN(cudnnGetRNNWeightSpaceSize(c.dnn, d.get(), &wbytes), what);
      DC_CUDNN(
          cudnnGetRNNTempSpaceSizes(c.dnn, d.get(), CUDNN_FWD_MODE_TRAINING, b.x.get(), &ws, &rs),
          what);
      const size_t es = dtype == CUDNN_DATA_FLOAT ? 4 : 2;
      const size_t xs = size_t(n * T * F) * es, ys = size_t(n * T * D * H) * es;
      DeviceBuffer w(*c.alloc, wbytes, what), dw(*c.alloc, wbytes, what), work(*c.alloc, ws, what),
          reserve(*c.alloc, rs, what), x(*c.alloc, xs, what), dx(*c.alloc, xs, what),
          y(*c.alloc, ys, what), dy(*c.alloc, ys, what), len;
      std::vector<int32_t> lengths(static_cast<size_t>(n), static_cast<int32_t>(T));
      upload(c, len, lengths.data(), lengths.size() * 4, what);
      // Small non-zero values (0x3c bytes: about 0.01 in float32 and bf16,
      // 1.06 in fp16), never NaN.
      for (DeviceBuffer* buf : {&w, &x, &dy})
        DC_CUDA(cudaMemsetAsync(buf->get<void>(), 0x3c, buf->bytes(), c.stream), what);
      DC_CUDA(cudaMemsetAsync(dw.get<void>(), 0, dw.bytes(), c.stream), what);
      const bool train = needs_backward;
      const cudnnForwardMode_t fm = train ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE;
      DC_CUDNN(
          cudnnRNNForward(c.dnn, d.get(), fm, len.get<int32_t>(), b.x.get(), x.get(), b.y.get(),
                          y.get(), b.h.get(), nullptr, nullptr, b.h.get(), nullptr, nullptr, wbytes,
                          w.get(), ws, work.get(), train ? rs : 0, train ? reserve.get() : nullptr),
          what);
      if (train) {
        DC_CUDNN(cudnnRNNBackwardData_v8(c.dnn, d.get(), len.get<int32_t>(), b.y.get(), y.get(),
                                         dy.get(), b.x.get(), dx.get(), b.h.get(), nullptr, nullptr,
                                         nullptr, b.h.get(), nullptr, nullptr, nullptr, wbytes,
                                         w.get(), ws, work.get(), rs, reserve.get()),
                 what);
        if (!frozen)
          DC_CUDNN(
              cudnnRNNBackwardWeights_v8(c.dnn, d.get(), CUDNN_WGRAD_MODE_ADD, len.get<int32_t>(),
                                         b.x.get(), x.get(), b.h.get(), nullptr, b.y.get(), y.get(),
                                         wbytes, dw.get(), ws, work.get(), rs, reserve.get()),
              what);
      }
      DC_CUDA(cudaStreamSynchronize(c.stream), what);
      return "";
    } catch (const DeviceError& e) {
      return e.what();
    }
  }

  void describe(OpContext& c, cudnnRNNDescriptor_t d, cudnnDropoutDescriptor_t drop, int n) {
    describe(c, d, drop, n, algo_, dtype_);
  }
  void describe(OpContext& c, cudnnRNNDescriptor_t d, cudnnDropoutDescriptor_t drop, int n,
                cudnnRNNAlgo_t algo, cudnnDataType_t dtype) {
    // 16-bit data: tensor cores with float32 accumulation and state math.
    // float32 data in fp16: cuDNN converts inputs and weights to 16 bits
    // inside its tensor-core GEMMs (ALLOW_CONVERSION); in bf16 (no such
    // path) the recurrence stays float32.
    cudnnMathType_t math = c.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    if (dtype != CUDNN_DATA_FLOAT)
      math = CUDNN_TENSOR_OP_MATH;
    else if (c.reduced && c.low == Low::Fp16)
      math = CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    DC_CUDNN(cudnnSetRNNDescriptor_v8(
                 d, algo, mode, bias ? CUDNN_RNN_DOUBLE_BIAS : CUDNN_RNN_NO_BIAS,
                 D == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, dtype,
                 CUDNN_DATA_FLOAT, math, int32_t(F), int32_t(H), int32_t(H), int32_t(L), drop,
                 CUDNN_RNN_PADDED_IO_ENABLED),
             shapes(n));
  }

  void setup(OpContext& c, int n) {
    const std::string what = shapes(n);
    DC_CUDNN(cudnnCreateRNNDescriptor(rnn_.out()), what);
    describe(c, rnn_.get(), nullptr, n);
    if (dropout > 0.f && L > 1) {
      size_t states = 0;
      DC_CUDNN(cudnnCreateDropoutDescriptor(drop_.out()), what);
      DC_CUDNN(cudnnDropoutGetStatesSize(c.dnn, &states), what);
      drop_states_ = DeviceBuffer(*c.alloc, states, label + " dropout states");
      const unsigned long long seed = std::hash<std::string>{}(label) ^ c.seed;
      DC_CUDNN(cudnnSetDropoutDescriptor(drop_.get(), c.dnn, dropout, drop_states_.get<void>(),
                                         states, seed),
               what + ": dropout");
      DC_CUDNN(cudnnCreateRNNDescriptor(rnn_drop_.out()), what);
      describe(c, rnn_drop_.get(), drop_.get(), n);
    }
    DC_CUDNN(cudnnGetRNNWeightSpaceSize(c.dnn, rnn_.get(), &wbytes_), what);
    wspace_ = DeviceBuffer(*c.alloc, wbytes_, label + " weights");
    // cuDNN leaves no gaps we rely on, but zero the space so any padding is
    // defined; the gradient space must start at zero (cuDNN adds into it,
    // and the unpack after every backward zeroes what it read).
    DC_CUDA(cudaMemsetAsync(wspace_.get(), 0, wbytes_, c.stream), what);
    if (!frozen) {
      dwspace_ = DeviceBuffer(*c.alloc, wbytes_, label + " weight gradients");
      DC_CUDA(cudaMemsetAsync(dwspace_.get(), 0, wbytes_, c.stream), what);
    }
    map_weights(c, n);
    if (learned) {
      const int64_t U = L * D;
      const size_t units = static_cast<size_t>(U);
      std::vector<const float*> h0(units), c0(units);
      std::vector<float*> h0g(units), c0g(units);
      for (int64_t l = 0; l < L; ++l)
        for (int64_t d = 0; d < D; ++d) {
          const std::string sfx = "_l" + std::to_string(l) + (d ? "_reverse" : "");
          const size_t u = size_t(l * D + d);
          h0[u] = param("h0" + sfx).value;
          h0g[u] = param("h0" + sfx).grad;
          if (mode == CUDNN_LSTM) {
            c0[u] = param("c0" + sfx).value;
            c0g[u] = param("c0" + sfx).grad;
          }
        }
      upload(c, h0_, h0.data(), U * sizeof(void*), what);
      upload(c, h0g_, h0g.data(), U * sizeof(void*), what);
      if (mode == CUDNN_LSTM) {
        upload(c, c0_, c0.data(), U * sizeof(void*), what);
        upload(c, c0g_, c0g.data(), U * sizeof(void*), what);
      }
    }
  }

  // Synchronous: the host vector goes out of scope right after.
  static void upload(OpContext& c, DeviceBuffer& dst, const void* src, size_t bytes,
                     const std::string& what) {
    dst = DeviceBuffer(*c.alloc, bytes, what);
    DC_CUDA(cudaMemcpyAsync(dst.get<void>(), src, bytes, cudaMemcpyHostToDevice, c.stream), what);
    DC_CUDA(cudaStreamSynchronize(c.stream), what);
  }

  // Builds the pack (parameters -> weight space) and unpack (weight
  // gradients -> parameter gradients) tables from cuDNN's own addresses.
  void map_weights(OpContext& c, int n) {
    const std::string what = shapes(n) + ": mapping the weights";
    TensorDesc md, bd;
    DC_CUDNN(cudnnCreateTensorDescriptor(md.out()), what);
    DC_CUDNN(cudnnCreateTensorDescriptor(bd.out()), what);
    std::vector<WeightSegment> pack, unpack;
    auto numel = [&](cudnnTensorDescriptor_t t) {
      cudnnDataType_t dt;
      int rank = 0, dims[8] = {}, strides[8] = {};
      DC_CUDNN(cudnnGetTensorNdDescriptor(t, 8, &dt, &rank, dims, strides), what);
      int64_t k = 1;
      for (int i = 0; i < rank; ++i) k *= dims[i];
      return k;
    };
    char* base = wspace_.get<char>();
    char* dbase = dwspace_.get<char>();
    for (int64_t l = 0; l < L; ++l)
      for (int64_t d = 0; d < D; ++d) {
        const std::string sfx = "_l" + std::to_string(l) + (d ? "_reverse" : "");
        const int64_t in = l == 0 ? F : D * H;
        ParamSlot& wih = param("weight_ih" + sfx);
        ParamSlot& whh = param("weight_hh" + sfx);
        for (int64_t id = 0; id < 2 * G; ++id) {
          const bool rec = id >= G;
          const int64_t gate = id % G, cols = rec ? H : in;
          void* m = nullptr;
          void* bptr = nullptr;
          DC_CUDNN(cudnnGetRNNWeightParams(c.dnn, rnn_.get(), int32_t(l * D + d), wbytes_, base,
                                           int32_t(id), md.get(), &m, bd.get(), &bptr),
                   what);
          if (!m || numel(md.get()) != H * cols)
            throw DeviceError(what + ": cuDNN's matrix " + std::to_string(id) + " of layer " +
                              std::to_string(l) + " is not " + std::to_string(H) + "x" +
                              std::to_string(cols));
          ParamSlot& w = rec ? whh : wih;
          const int64_t off = gate * H * cols;
          const int64_t moff = static_cast<char*>(m) - base;
          pack.push_back({w.value + off, base + moff, H * cols});
          if (!frozen) unpack.push_back({w.grad + off, dbase + moff, H * cols});
          if (!bias) continue;
          if (!bptr || numel(bd.get()) != H)
            throw DeviceError(what + ": cuDNN's bias " + std::to_string(id) + " of layer " +
                              std::to_string(l) + " is not " + std::to_string(H) + " long");
          ParamSlot& b = param((rec ? "bias_hh" : "bias_ih") + sfx);
          const int64_t boff = static_cast<char*>(bptr) - base;
          pack.push_back({b.value + gate * H, base + boff, H});
          if (!frozen) unpack.push_back({b.grad + gate * H, dbase + boff, H});
        }
      }
    npack_ = int(pack.size());
    longest_ = 0;
    for (const WeightSegment& s : pack) longest_ = std::max(longest_, s.n);
    upload(c, pack_, pack.data(), pack.size() * sizeof(WeightSegment), what);
    if (!unpack.empty())
      upload(c, unpack_, unpack.data(), unpack.size() * sizeof(WeightSegment), what);
  }

  // The data and state descriptors of a batch of n.
  void describe_batch(PerBatch& b, int n, cudnnDataType_t dtype, const std::string& what) const {
    std::vector<int> lengths(static_cast<size_t>(n), static_cast<int>(T));
    DC_CUDNN(cudnnCreateRNNDataDescriptor(b.x.out()), what);
    DC_CUDNN(cudnnCreateRNNDataDescriptor(b.y.out()), what);
    DC_CUDNN(cudnnCreateTensorDescriptor(b.h.out()), what);
    DC_CUDNN(cudnnSetRNNDataDescriptor(b.x.get(), dtype, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED,
                                       int(T), n, int(F), lengths.data(), nullptr),
             what);
    DC_CUDNN(cudnnSetRNNDataDescriptor(b.y.get(), dtype, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED,
                                       int(T), n, int(D * H), lengths.data(), nullptr),
             what);
    const int hd[3] = {int(L * D), n, int(H)};
    const int hs[3] = {n * int(H), int(H), 1};
    DC_CUDNN(cudnnSetTensorNdDescriptor(b.h.get(), dtype, 3, hd, hs), what);
  }

  void per_batch(OpContext& c, int n) {
    const std::string what = shapes(n);
    PerBatch b;
    describe_batch(b, n, dtype_, what);
    for (cudnnRNNDescriptor_t d : {rnn_.get(), rnn_drop_.get()}) {
      if (!d) continue;
      size_t ws = 0, rs = 0;
      DC_CUDNN(cudnnGetRNNTempSpaceSizes(c.dnn, d, CUDNN_FWD_MODE_TRAINING, b.x.get(), &ws, &rs),
               what);
      b.ws = std::max(b.ws, ws);
      b.reserve = std::max(b.reserve, rs);
    }
    const size_t hb = size_t(L * D * n * H);
    if (!seq && !hy_is_out()) {
      b.dhy = DeviceBuffer(*c.alloc, hb * es_, what + " final state gradients");
      DC_CUDA(cudaMemsetAsync(b.dhy.get<void>(), 0, b.dhy.bytes(), c.stream), what);
    }
    const PerBatch& kept = per_[n] = std::move(b);
    // Buffers sized for the largest batch seen (the plan prepares its
    // maximum first, so this grows once).
    if (n > cap_) {
      cap_ = n;
      const size_t xn = size_t(n * T * F), yn = size_t(n * T * D * H), hn = size_t(L * D * n * H);
      std::vector<int32_t> len(static_cast<size_t>(n), static_cast<int32_t>(T));
      upload(c, seqlen_, len.data(), len.size() * 4, what);
      dxbuf_ = DeviceBuffer(*c.alloc, xn * es_, what + " input gradient");
      if (low()) xlow_ = DeviceBuffer(*c.alloc, xn * es_, what + " 16-bit input");
      if (!seq || low()) ybuf_ = DeviceBuffer(*c.alloc, yn * es_, what + " outputs");
      // Last state: zeros, the output sequence's gradient, written once.
      // Sequence in 16 bits: the output gradient converted each step.
      if (!seq || low()) {
        dybuf_ = DeviceBuffer(*c.alloc, yn * es_, what + " output gradients");
        DC_CUDA(cudaMemsetAsync(dybuf_.get(), 0, dybuf_.bytes(), c.stream), what);
      }
      if (!seq && !hy_is_out()) {
        hybuf_ = DeviceBuffer(*c.alloc, hn * es_, what + " final states");
        if (low() && D == 2)
          hyf_ = DeviceBuffer(*c.alloc, size_t(D * n * H) * 4, what + " final states");
      }
      if (learned) {
        hx_ = DeviceBuffer(*c.alloc, hn * 4, what + " initial states");
        dhx_ = DeviceBuffer(*c.alloc, hn * 4, what + " initial state gradients");
        if (mode == CUDNN_LSTM) {
          cx_ = DeviceBuffer(*c.alloc, hn * 4, what + " initial cell states");
          dcx_ = DeviceBuffer(*c.alloc, hn * 4, what + " initial cell state gradients");
        }
        if (low()) {
          hxl_ = DeviceBuffer(*c.alloc, hn * 2, what + " 16-bit initial states");
          dhxl_ = DeviceBuffer(*c.alloc, hn * 2, what + " 16-bit initial state gradients");
          if (mode == CUDNN_LSTM) {
            cxl_ = DeviceBuffer(*c.alloc, hn * 2, what + " 16-bit initial cell states");
            dcxl_ = DeviceBuffer(*c.alloc, hn * 2, what + " 16-bit initial cell state gradients");
          }
        }
      }
    }
    if (kept.reserve > reserve_.bytes()) {
      reserve_.reset();
      reserve_ = DeviceBuffer(*c.alloc, kept.reserve, what + " reserve space");
    }
  }

  // cudnnGetVersion() of cuDNN 9.13.0, the first whose RNN takes bf16 data.
  static constexpr size_t kBf16RnnVersion = 91300;

  cudnnRNNAlgo_t algo_ = CUDNN_RNN_ALGO_STANDARD;
  cudnnDataType_t dtype_ = CUDNN_DATA_FLOAT;  // data, weights and states
  size_t es_ = 4;                             // its element size
  SpaceType space_ = SpaceType::F32;
  size_t wbytes_ = 0;
  int npack_ = 0;
  int64_t longest_ = 0;
  int cap_ = 0;
  DeviceBuffer wspace_, dwspace_, reserve_, drop_states_, pack_, unpack_, seqlen_, ybuf_, dybuf_,
      dxbuf_, xlow_, hybuf_, hyf_, hx_, cx_, dhx_, dcx_, hxl_, cxl_, dhxl_, dcxl_, h0_, c0_, h0g_,
      c0g_;
  // After the buffers, so destroyed before them (drop_ uses drop_states_),
  // and rnn_drop_, which refers to drop_, after drop_ so destroyed first.
  DropoutDesc drop_;
  RnnDesc rnn_drop_, rnn_;
  cudnnRNNDescriptor_t used_ = nullptr;  // rnn_ or rnn_drop_, not owned
  std::map<int, PerBatch> per_;
};

std::unique_ptr<Op> make_rnn(const PlanStep& s) {
  const std::string& type = s.type;
  const Attrs& a = s.attrs;
  const std::vector<Shape>& in = s.in_shapes;
  auto op = std::make_unique<Rnn>();
  Rnn& r = *op;
  if (type == "LSTM") {
    r.mode = CUDNN_LSTM;
    r.G = 4;
  } else if (type == "GRU") {
    r.mode = CUDNN_GRU;
    r.G = 3;
  } else {
    r.mode = a.s("nonlinearity") == "relu" ? CUDNN_RNN_RELU : CUDNN_RNN_TANH;
    r.G = 1;
  }
  r.T = in[0][0];
  r.F = in[0][1];
  r.H = a.i("hidden_size");
  r.L = a.i("num_layers");
  r.D = a.b("bidirectional") ? 2 : 1;
  r.dropout = float(a.f("dropout"));
  r.seq = a.b("return_sequences");
  r.learned = a.s("initial_state") == "learned";
  r.bias = a.b("bias");
  if (r.T > (int64_t(1) << 30) || r.F > (int64_t(1) << 30) || r.H > (int64_t(1) << 30))
    throw Error(s.label + ": sequence too large for cuDNN's 32-bit sizes");
  const int64_t GH = r.G * r.H;
  for (int64_t l = 0; l < r.L; ++l)
    for (int64_t d = 0; d < r.D; ++d) {
      const std::string sfx = "_l" + std::to_string(l) + (d ? "_reverse" : "");
      const int64_t inf = l == 0 ? r.F : r.D * r.H;
      r.params.push_back({"weight_ih" + sfx, Shape{GH, inf}, true});
      r.params.push_back({"weight_hh" + sfx, Shape{GH, r.H}, true});
      if (r.bias) {
        r.params.push_back({"bias_ih" + sfx, Shape{GH}, true});
        r.params.push_back({"bias_hh" + sfx, Shape{GH}, true});
      }
    }
  if (r.learned)
    for (int64_t l = 0; l < r.L; ++l)
      for (int64_t d = 0; d < r.D; ++d) {
        const std::string sfx = "_l" + std::to_string(l) + (d ? "_reverse" : "");
        r.params.push_back({"h0" + sfx, Shape{r.H}, true});
        if (r.mode == CUDNN_LSTM) r.params.push_back({"c0" + sfx, Shape{r.H}, true});
      }
  return op;
}

}  // namespace

void register_rnn_ops(OpRegistry& r) {
  r.add("SimpleRNN", make_rnn);
  r.add("LSTM", make_rnn);
  r.add("GRU", make_rnn);
}

}  // namespace dc::cuda
