// Conv2D. Convolutions run on oneDNN's own kernels where it is built in
// (conv_dnnl.h: on the AMD EPYC, ResNet's and VGG-BN's training +42 and
// +51 % against the path below, MobileNetV2's +27-31 % against the depthwise
// kernels further down, docs/BENCHMARKS.md). Builds without oneDNN and
// DC_CONV=im2col take im2col + GEMM and the depthwise kernels; DC_CONV=dense
// keeps only grouped convolutions on them (A/B runs); a geometry oneDNN has
// no kernel for falls back to them on its first call.
//
// im2col + GEMM: the batch is split into one contiguous chunk per
// thread; each chunk unfolds its samples into its own column buffer and runs
// single-threaded GEMMs (OpenBLAS's OpenMP build stays single-threaded inside
// our parallel region). Measured against one multithreaded GEMM over the
// whole batch ([OC, K] x [K, N*OH*OW], then a pass back to NCHW) on the
// two-conv CNN at batch 64 on 2 cores, forward+backward: 1->32 on 28x28
// 1.25 ms vs 3.0 ms, 32->64 on 14x14 9.9 ms vs 13.1 ms (keeping the batched
// column buffer from forward instead of rebuilding it only gave 12.2 ms).
//
// The geometry and the im2col/col2im kernels are in conv_kernels.cpp; this
// file holds the layer, its direct depthwise path and its registration.
#include <deepcanvas/checked.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/memstats.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/rng.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "builtin.h"
#include "conv_dnnl.h"
#include "conv_kernels.h"

namespace dc {
namespace {

using conv_kernels::col2im;
using conv_kernels::conv_geom;
using conv_kernels::ConvGeom;
using conv_kernels::DnnlConv;
using conv_kernels::im2col;

// Eight independent partial sums let the compiler vectorise without
// -ffast-math while keeping a fixed summation order.
float sum(const float* p, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += p[i + j];
  float s = 0.f;
  for (; i < n; ++i) s += p[i];
  for (int j = 0; j < 8; ++j) s += acc[j];
  return s;
}

// Dot product with the same eight partial sums as sum(). (Four vectors of
// eight sums, not inlined, measured no faster in the depthwise weight
// gradient: 124-131 against 129-133 ms per EfficientNet-Lite0 step.)
float dot(const float* __restrict a, const float* __restrict b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float s = 0.f;
  for (; i < n; ++i) s += a[i] * b[i];
  for (int j = 0; j < 8; ++j) s += acc[j];
  return s;
}

// dst[q] = init + sum over t of w[t] * src[q + off[t]], for q in [0, L), L
// a multiple of kTapBlock. The block's sums stay in registers across all
// taps, so each tap costs a load and a multiply-add per element. Not
// inlined: inlined into the input gradient's loop (where gp and dq are
// plain vectors) GCC kept the 16 sums in scalar registers, one scalar
// multiply-add per tap and output, which made that loop 3.4 times the
// forward's; compiled on its own with the restrict pointers it vectorises.
constexpr int64_t kTapBlock = 16;
[[gnu::noinline]] void taps(const float* __restrict src, const int64_t* off, const float* w,
                            int64_t T, float init, float* __restrict dst, int64_t L) {
  for (int64_t q = 0; q < L; q += kTapBlock) {
    float acc[kTapBlock];
    for (int64_t j = 0; j < kTapBlock; ++j) acc[j] = init;
    for (int64_t t = 0; t < T; ++t) {
      const float* s = src + q + off[t];
      const float wt = w[t];
      for (int64_t j = 0; j < kTapBlock; ++j) acc[j] += wt * s[j];
    }
    for (int64_t j = 0; j < kTapBlock; ++j) dst[q + j] = acc[j];
  }
}

int64_t round_up(int64_t v, int64_t m) {
  return (v + m - 1) / m * m;
}

class Conv2D : public Layer {
 public:
  explicit Conv2D(const ConvGeom& g) : g_(g) {
    dnnl_ = DnnlConv::create(g_);
    if (!dnnl_ && g_.depthwise()) flat_ = flat_planes();  // fixed by the geometry
    Shape ws{g.OC, g.Cg(), g.KH, g.KW};
    weight_.name = "weight";
    weight_.value = Tensor(ws);
    weight_.grad = Tensor(ws);
    if (g.bias) {
      bias_.name = "bias";
      bias_.value = Tensor(Shape{g.OC});
      bias_.grad = Tensor(Shape{g.OC});
      bias_.decay = false;
    }
  }

  std::vector<Param*> params() override {
    if (g_.bias) return {&weight_, &bias_};
    return {&weight_};
  }

  // PyTorch's default: kaiming_uniform(a=sqrt(5)) reduces to U(-b, b) with
  // b = 1/sqrt(fan_in), and the bias uses the same bound.
  void init(Rng& rng) override {
    float b = 1.0f / std::sqrt(float(g_.Kg()));
    float* w = weight_.value.f32();
    for (int64_t i = 0; i < weight_.value.numel(); ++i) w[i] = rng.uniform(-b, b);
    if (g_.bias)
      for (int64_t i = 0; i < g_.OC; ++i) bias_.value.f32()[i] = rng.uniform(-b, b);
  }

  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext& ctx) override {
    const int64_t N = in[0]->dim(0);
    const float* x = in[0]->f32();
    float* y = out.f32();
    // A 1x1 convolution whose input is not kept (inference, a frozen layer)
    // runs as a GEMM on the input in place: oneDNN's two reorders then
    // serve one primitive instead of three, and MobileNetV2's inference at
    // 224 px ran 15 % faster this way (docs/BENCHMARKS.md).
    const bool keep = ctx.training && weight_.grad.defined();
    if (dnnl_ && (keep || !g_.pointwise())) {
      if (dnnl_->forward(N, x, weight_.value.f32(), g_.bias ? bias_.value.f32() : nullptr, y, relu_,
                         keep))
        return;
      drop_onednn();
    }
    if (g_.depthwise()) {
      depthwise_forward(N, x, y);
      return;
    }
    const int64_t chunks = num_chunks(N);
    ensure_scratch(col_, chunks);
    parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        float* col = col_[c].data();
        for (int64_t n = N * c / chunks; n < N * (c + 1) / chunks; ++n)
          forward_sample(x + n * g_.C * g_.HW(), y + n * g_.OC * g_.OHW(), col);
      }
    });
  }

  bool fuse_relu(float cap) override { return relu_.fuse(cap); }

  bool overwrites_din() const override { return true; }

  void backward(const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext& ctx) override {
    const int64_t N = in[0]->dim(0);
    const float* x = in[0]->f32();
    const float* dy = dout.f32();
    const float* y = out.f32();
    float* dx = din[0] ? din[0]->f32() : nullptr;
    const int64_t chunks = num_chunks(N);
    const int64_t wsize = weight_.value.numel();
    const int64_t OC = g_.OC, OHW = g_.OHW(), OUT = OC * OHW;
    // A frozen layer (its plan released the gradients) only passes the
    // gradient on to its input.
    const bool wgrad = weight_.grad.defined();
    if (!wgrad && !dx) return;
    const bool bgrad = wgrad && g_.bias;
    const bool fresh = ctx.fresh(0);
    if (dnnl_) {
      if (dnnl_->backward(N, x, y, dy, weight_.value.f32(), dx, fresh,
                          wgrad ? weight_.grad.f32() : nullptr, bgrad ? bias_.grad.f32() : nullptr,
                          relu_))
        return;
      // (Its primitives are first built here when the forward was a GEMM.)
      drop_onednn();
    }
    if (g_.depthwise()) {
      depthwise_backward(N, x, y, dy, dx, fresh);
      return;
    }
    ensure_scratch(col_, chunks);
    if (dx) ensure_scratch(dcol_, chunks);
    if (relu_.on()) {
      if (static_cast<int64_t>(masked_.size()) < chunks)
        masked_.resize(static_cast<size_t>(chunks));
      for (auto& m : masked_)
        if (static_cast<int64_t>(m.size()) < OUT) m.resize(static_cast<size_t>(OUT));
    }
    dw_part_.assign(static_cast<size_t>(wgrad ? chunks * wsize : 0), 0.f);
    db_part_.assign(static_cast<size_t>(bgrad ? chunks * OC : 0), 0.f);
    parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        float* col = col_[c].data();
        float* dcol = dx ? dcol_[c].data() : nullptr;
        float* dw = wgrad ? dw_part_.data() + c * wsize : nullptr;
        float* db = bgrad ? db_part_.data() + c * OC : nullptr;
        for (int64_t n = N * c / chunks; n < N * (c + 1) / chunks; ++n) {
          const float* dys = dy + n * OUT;
          if (relu_.on()) {
            // The fused ReLU's backward, on this sample while it is in
            // cache: the output is max(conv, 0) (capped), so the mask
            // comes from it.
            float* m = masked_[c].data();
            relu_.mask_grad(dys, y + n * OUT, m, OUT);
            dys = m;
          }
          if (db)
            for (int64_t o = 0; o < OC; ++o) db[o] += sum(dys + o * OHW, OHW);
          float* dxs = dx ? dx + n * g_.C * g_.HW() : nullptr;
          // A fresh input gradient is zeroed per sample, in cache, just
          // before col2im accumulates into it.
          if (dxs && fresh) std::fill(dxs, dxs + g_.C * g_.HW(), 0.f);
          backward_sample(x + n * g_.C * g_.HW(), dys, dxs, dw, col, dcol);
        }
      }
    });
    if (!wgrad) return;
    // Partial sums are reduced in chunk order so results repeat exactly for
    // a given thread count.
    float* gw = weight_.grad.f32();
    parallel_for(wsize, 4096, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        float s = 0.f;
        for (int64_t c = 0; c < chunks; ++c) s += dw_part_[c * wsize + i];
        gw[i] += s;
      }
    });
    if (bgrad) {
      float* gb = bias_.grad.f32();
      for (int64_t o = 0; o < OC; ++o) {
        float s = 0.f;
        for (int64_t c = 0; c < chunks; ++c) s += db_part_[c * OC + o];
        gb[o] += s;
      }
    }
  }

 private:
  // No oneDNN kernel for this geometry: our own kernels from now on.
  void drop_onednn() {
    dnnl_.reset();
    if (g_.depthwise()) flat_ = flat_planes();
  }

  int64_t num_chunks(int64_t N) const {
    return std::max<int64_t>(1, std::min<int64_t>(num_threads(), N));
  }

  void ensure_scratch(std::vector<ScratchVec<float>>& bufs, int64_t chunks) const {
    if (static_cast<int64_t>(bufs.size()) < chunks) bufs.resize(static_cast<size_t>(chunks));
    if (g_.kernel() != ConvKernel::Im2col) return;  // no columns; buffers stay empty
    for (auto& b : bufs)
      if (static_cast<int64_t>(b.size()) < g_.K() * g_.OHW())
        b.resize(static_cast<size_t>(g_.K() * g_.OHW()));
  }

  // Depthwise planes as flat arrays, so that every kernel tap is one long
  // contiguous loop (taps()) instead of OH short rows: EfficientNet's late
  // layers are 7 x 7 and 14 x 14 planes, where per-row loops were all
  // overhead. The input plane is zero-padded to Hp x Wp and split into
  // SH x SW phase planes of Hq x Wq (phase (a, b) holds padded pixel
  // (SH*i + a, SW*j + b) at (i, j)); output (oh, ow) is flat index
  // q = oh * Wq + ow, and tap (ki, kj), with ki*DH = SH*qi + a and
  // kj*DW = SW*qj + b, reads phase (a, b) at q + qi * Wq + qj. A strided
  // convolution so becomes stride-1 reads, and stride 1 is one phase. The
  // columns ow >= OW of each flat row are computed and dropped; in output
  // gradients they are zeros.
  struct FlatPlanes {
    int64_t Wq, phase_len, phases;
    int64_t out_len;           // flat outputs computed (a multiple of kTapBlock)
    int64_t in_len;            // one phase's input-gradient positions (ditto)
    int64_t margin;            // the largest in-phase offset: leading zeros of a gradient
    int64_t padded_len;        // all phases, with slack for the last block's reads
    std::vector<int64_t> off;  // per tap: phase * phase_len + qi * Wq + qj
    // Per phase, its taps and their mirrored offsets margin - (qi * Wq + qj):
    // what the input gradient's taps read of the output gradient.
    std::vector<std::vector<int64_t>> phase_taps, phase_back_off;
  };
  FlatPlanes flat_planes() const {
    FlatPlanes f;
    const int64_t Hp = g_.H + g_.PT + g_.PB, Wp = g_.W + g_.PL + g_.PR;
    const int64_t Hq = (Hp + g_.SH - 1) / g_.SH;
    f.Wq = (Wp + g_.SW - 1) / g_.SW;
    f.phase_len = Hq * f.Wq;
    f.phases = g_.SH * g_.SW;
    f.out_len = round_up((g_.OH - 1) * f.Wq + g_.OW, kTapBlock);
    f.in_len = round_up(f.phase_len, kTapBlock);
    f.margin = 0;
    f.phase_taps.resize(size_t(f.phases));
    std::vector<int64_t> in_phase;
    for (int64_t ki = 0; ki < g_.KH; ++ki)
      for (int64_t kj = 0; kj < g_.KW; ++kj) {
        const int64_t ph = ki * g_.DH % g_.SH * g_.SW + kj * g_.DW % g_.SW;
        const int64_t in = ki * g_.DH / g_.SH * f.Wq + kj * g_.DW / g_.SW;
        f.phase_taps[size_t(ph)].push_back(int64_t(f.off.size()));
        f.off.push_back(ph * f.phase_len + in);
        in_phase.push_back(in);
        f.margin = std::max(f.margin, in);
      }
    f.phase_back_off.resize(size_t(f.phases));
    for (int64_t ph = 0; ph < f.phases; ++ph)
      for (int64_t t : f.phase_taps[size_t(ph)])
        f.phase_back_off[size_t(ph)].push_back(f.margin - in_phase[size_t(t)]);
    f.padded_len = f.phases * f.phase_len + f.Wq + kTapBlock;
    return f;
  }

  // Pads one input plane and splits it into its phases. xp must have been
  // zeroed once (a fresh vector) and only ever filled here: every call
  // writes the same positions, so the padding and the slack stay zero
  // without a pass over the whole buffer per plane.
  void pad_plane(const FlatPlanes& f, const float* xc, float* xp) const {
    for (int64_t ih = 0; ih < g_.H; ++ih) {
      const int64_t r = ih + g_.PT;
      float* row = xp + (r % g_.SH) * g_.SW * f.phase_len + r / g_.SH * f.Wq;
      const float* src = xc + ih * g_.W;
      if (g_.SW == 1) {
        std::copy_n(src, g_.W, row + g_.PL);
        continue;
      }
      for (int64_t b = 0; b < g_.SW; ++b) {
        float* dst = row + b * f.phase_len;
        for (int64_t iw = first_column(b), j = (iw + g_.PL) / g_.SW; iw < g_.W; iw += g_.SW, ++j)
          dst[j] = src[iw];
      }
    }
  }

  // The first input column whose padded column lies in column phase b.
  int64_t first_column(int64_t b) const { return ((b - g_.PL) % g_.SW + g_.SW) % g_.SW; }

  // One output channel's gradient as a flat plane of row stride Wq after
  // `margin` zeros, masked by the fused ReLU, zero in the dropped columns
  // and beyond; returns its sum (the bias gradient's share). As for
  // pad_plane, gp is zeroed once by its owner: the zeros are never written.
  float flat_grad(const FlatPlanes& f, const float* dyo, const float* yo, float* gp) const {
    float total = 0.f;
    for (int64_t oh = 0; oh < g_.OH; ++oh) {
      float* r = gp + f.margin + oh * f.Wq;
      const float* d = dyo + oh * g_.OW;
      if (relu_.on()) {
        const float* yr = yo + oh * g_.OW;
        relu_.mask_grad(d, yr, r, g_.OW);
      } else {
        std::copy_n(d, g_.OW, r);
      }
      total += sum(r, g_.OW);
    }
    return total;
  }

  // Depthwise forward: every (sample, output channel) plane is independent,
  // so threads split planes, which also keeps both cores busy at batch 1
  // (the inference panel).
  void depthwise_forward(int64_t N, const float* x, float* y) const {
    const int64_t OC = g_.OC, OCg = g_.OCg(), KK = g_.KH * g_.KW;
    const FlatPlanes& f = flat_;
    const float* w = weight_.value.f32();
    const float* b = g_.bias ? bias_.value.f32() : nullptr;
    parallel_for(N * OC, 1, [&](int64_t pb, int64_t pe) {
      std::vector<float> xp(static_cast<size_t>(f.padded_len)), yf(static_cast<size_t>(f.out_len));
      int64_t padded = -1;  // the (sample, channel) plane in xp: multipliers share it
      for (int64_t p = pb; p < pe; ++p) {
        const int64_t n = p / OC, o = p % OC, nc = n * g_.C + o / OCg;
        if (nc != padded) pad_plane(f, x + nc * g_.HW(), xp.data());
        padded = nc;
        taps(xp.data(), f.off.data(), w + o * KK, KK, b ? b[o] : 0.f, yf.data(), f.out_len);
        float* yo = y + p * g_.OHW();
        for (int64_t oh = 0; oh < g_.OH; ++oh) {
          const float* r = yf.data() + oh * f.Wq;
          float* d = yo + oh * g_.OW;
          if (relu_.on())
            relu_.activate(r, d, g_.OW);
          else
            std::copy_n(r, g_.OW, d);
        }
      }
    });
  }

  // Depthwise backward. Weight and bias gradients: one thread per output
  // channel sums over the batch in sample order, so results repeat exactly
  // for any thread count and need no per-thread partial sums. Input
  // gradient: one thread per (sample, input channel) plane, from the
  // channel's OCg outputs.
  void depthwise_backward(int64_t N, const float* x, const float* y, const float* dy, float* dx,
                          bool fresh) {
    const int64_t OC = g_.OC, OCg = g_.OCg(), KK = g_.KH * g_.KW, OHW = g_.OHW(), HW = g_.HW();
    const FlatPlanes& f = flat_;
    const size_t grad_len = static_cast<size_t>(f.margin + f.in_len + kTapBlock);
    const float* w = weight_.value.f32();
    if (weight_.grad.defined()) {
      float* gw = weight_.grad.f32();
      float* gb = g_.bias ? bias_.grad.f32() : nullptr;
      // dw[t] = sum over q of grad[q] * phases[q + off[t]]: the dropped
      // columns hold zeros in grad, so whole flat rows can be dotted.
      const int64_t len = g_.OH * f.Wq;
      parallel_for(OC, 1, [&](int64_t ob, int64_t oe) {
        std::vector<float> xp(static_cast<size_t>(f.padded_len)), gp(grad_len);
        std::vector<float> acc(static_cast<size_t>(KK));
        for (int64_t o = ob; o < oe; ++o) {
          std::fill(acc.begin(), acc.end(), 0.f);
          float bsum = 0.f;
          for (int64_t n = 0; n < N; ++n) {
            pad_plane(f, x + (n * g_.C + o / OCg) * HW, xp.data());
            const int64_t plane = (n * OC + o) * OHW;
            bsum += flat_grad(f, dy + plane, y + plane, gp.data());
            for (int64_t t = 0; t < KK; ++t)
              acc[size_t(t)] += dot(gp.data() + f.margin, xp.data() + f.off[size_t(t)], len);
          }
          for (int64_t t = 0; t < KK; ++t) gw[o * KK + t] += acc[size_t(t)];
          if (gb) gb[o] += bsum;
        }
      });
    }
    if (!dx) return;
    // Per phase, padded_dx[p] = sum over that phase's taps of
    // w[t] * grad[p - (qi * Wq + qj)]: the taps kernel again, over the
    // gradient with its leading zeros and the offsets mirrored; then each
    // phase position goes back to its input pixel.
    parallel_for(N * g_.C, 1, [&](int64_t pb, int64_t pe) {
      std::vector<float> gp(grad_len), dq(static_cast<size_t>(f.in_len)), ws;
      for (int64_t p = pb; p < pe; ++p) {
        const int64_t n = p / g_.C, c = p % g_.C;
        float* dxc = dx + p * HW;
        if (fresh) std::fill(dxc, dxc + HW, 0.f);
        for (int64_t o = c * OCg; o < (c + 1) * OCg; ++o) {
          const int64_t plane = (n * OC + o) * OHW;
          flat_grad(f, dy + plane, y + plane, gp.data());
          for (int64_t ph = 0; ph < f.phases; ++ph) {
            const std::vector<int64_t>& tl = f.phase_taps[size_t(ph)];
            if (tl.empty()) continue;  // dilation skipping this phase's pixels
            ws.clear();
            for (int64_t t : tl) ws.push_back(w[o * KK + t]);
            taps(gp.data(), f.phase_back_off[size_t(ph)].data(), ws.data(), int64_t(tl.size()), 0.f,
                 dq.data(), f.in_len);
            add_phase(f, ph, dq.data(), dxc);
          }
        }
      }
    });
  }

  // Adds one phase plane of the padded input gradient to the input pixels
  // it covers.
  void add_phase(const FlatPlanes& f, int64_t ph, const float* dq, float* dxc) const {
    const int64_t a = ph / g_.SW, b = ph % g_.SW;
    for (int64_t ih = 0; ih < g_.H; ++ih) {
      const int64_t r = ih + g_.PT;
      if (r % g_.SH != a) continue;
      const float* row = dq + r / g_.SH * f.Wq;
      float* d = dxc + ih * g_.W;
      if (g_.SW == 1) {
        for (int64_t iw = 0; iw < g_.W; ++iw) d[iw] += row[iw + g_.PL];
        continue;
      }
      for (int64_t iw = first_column(b), j = (iw + g_.PL) / g_.SW; iw < g_.W; iw += g_.SW, ++j)
        d[iw] += row[j];
    }
  }

  void forward_sample(const float* x, float* y, float* col) const {
    const int64_t OHW = g_.OHW(), Kg = g_.Kg(), OCg = g_.OCg();
    const float* src = x;
    if (!g_.pointwise()) {
      im2col(g_, x, col, OHW);
      src = col;
    }
    float beta = 0.f;
    if (g_.bias) {
      // Seeding the output with the bias lets the GEMM add it for free.
      const float* b = bias_.value.f32();
      for (int64_t o = 0; o < g_.OC; ++o) std::fill(y + o * OHW, y + (o + 1) * OHW, b[o]);
      beta = 1.f;
    }
    const float* w = weight_.value.f32();
    for (int64_t gi = 0; gi < g_.G; ++gi)
      sgemm(false, false, OCg, OHW, Kg, 1.f, w + gi * OCg * Kg, Kg, src + gi * Kg * OHW, OHW, beta,
            y + gi * OCg * OHW, OHW);
    // The fused ReLU, while the sample's output is in cache. std::max keeps
    // NaN as NaN, as the ReLU layer does.
    if (relu_.on()) relu_.activate(y, y, g_.OC * OHW);
  }

  void backward_sample(const float* x, const float* dy, float* dx, float* dw, float* col,
                       float* dcol) const {
    const int64_t OHW = g_.OHW(), Kg = g_.Kg(), OCg = g_.OCg();
    const bool pw = g_.pointwise();
    const float* src = x;
    // dw is null for a frozen layer: its weights get no gradient, and the
    // columns are only needed for one.
    if (!pw && dw) {
      im2col(g_, x, col, OHW);
      src = col;
    }
    const float* w = weight_.value.f32();
    if (dw)
      for (int64_t gi = 0; gi < g_.G; ++gi)
        sgemm(false, true, OCg, Kg, OHW, 1.f, dy + gi * OCg * OHW, OHW, src + gi * Kg * OHW, OHW,
              1.f, dw + gi * OCg * Kg, Kg);
    if (!dx) return;
    // Pointwise: the column buffer is the input itself, so accumulate straight
    // into dx; otherwise build dcol and fold it back.
    for (int64_t gi = 0; gi < g_.G; ++gi)
      sgemm(true, false, Kg, OHW, OCg, 1.f, w + gi * OCg * Kg, Kg, dy + gi * OCg * OHW, OHW,
            pw ? 1.f : 0.f, (pw ? dx : dcol) + gi * Kg * OHW, OHW);
    if (!pw) col2im(g_, dcol, dx, OHW);
  }

  ConvGeom g_;
  Param weight_, bias_;
  std::vector<ScratchVec<float>> col_, dcol_;  // one per chunk, kept across steps
  ScratchVec<float> dw_part_, db_part_;
  std::vector<ScratchVec<float>> masked_;  // per chunk: one sample's ReLU-masked gradient
  FlatPlanes flat_;                        // depthwise layers: their planes' layout
  std::unique_ptr<DnnlConv> dnnl_;         // dense layers: oneDNN's kernels, unless unavailable
  FusedRelu relu_;                         // the ReLU the plan fused into this layer, if any
};

const LayerDescriptor& conv_desc() {
  return LayerRegistry::instance().get("Conv2D");
}

}  // namespace

void register_conv_layers(LayerRegistry& r) {
  LayerDescriptor d;
  d.type = "Conv2D";
  d.category = "Convolution";
  d.help = "2-D convolution over channels×height×width (like torch.nn.Conv2d)";
  auto pair = [](int64_t a, int64_t b) { return AttrValue(std::vector<int64_t>{a, b}); };
  d.attrs = {
      {"filters", AttrType::Int, int64_t{32}, 1, 65536, {}, "Number of output channels"},
      {"kernel", AttrType::IntPair, pair(3, 3), 1, 64, {}, "Kernel height×width"},
      {"stride", AttrType::IntPair, pair(1, 1), 1, 64, {}, "Step between windows, rows×columns"},
      {"padding",
       AttrType::IntPair,
       pair(0, 0),
       0,
       64,
       {},
       "Zero padding on each side, rows×columns (used when padding_mode is explicit)"},
      {"padding_mode",
       AttrType::Enum,
       std::string("explicit"),
       -1e18,
       1e18,
       {"explicit", "same", "valid"},
       "explicit: use padding; same: pad so the output is ceil(input/stride) (extra pixel at the "
       "bottom/right); valid: no padding"},
      {"dilation", AttrType::IntPair, pair(1, 1), 1, 64, {}, "Spacing between kernel taps"},
      {"groups",
       AttrType::Int,
       int64_t{1},
       1,
       65536,
       {},
       "Split channels into this many independent groups (groups = channels: depthwise)"},
      {"bias", AttrType::Bool, true, -1e18, 1e18, {}, "Add a learnable bias per filter"},
  };
  d.num_inputs = [](const Attrs&) { return 1; };
  d.infer = [](const std::vector<Shape>& in, const Attrs& a) {
    ConvGeom g = conv_geom(in, conv_desc().with_defaults(a));
    return Shape{g.OC, g.OH, g.OW};
  };
  d.cost = [](const std::vector<Shape>& in, const Shape&, const Attrs& a) {
    ConvGeom g = conv_geom(in, conv_desc().with_defaults(a));
    Cost c;
    c.params = g.OC * g.Kg() + (g.bias ? g.OC : 0);
    c.macs = checked_mul(g.OC * g.OHW(), g.Kg(), "the multiply-accumulates");
    return c;
  };
  d.create = [](const Attrs& a, const std::vector<Shape>& in, const Shape&) {
    return std::unique_ptr<Layer>(new Conv2D(conv_geom(in, conv_desc().with_defaults(a))));
  };
  r.add(std::move(d));
}

}  // namespace dc
