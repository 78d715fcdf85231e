// Conv2D as im2col + GEMM. The batch is split into one contiguous chunk per
// thread; each chunk unfolds its samples into its own column buffer and runs
// single-threaded GEMMs (OpenBLAS's OpenMP build stays single-threaded inside
// our parallel region). Measured against one multithreaded GEMM over the
// whole batch ([OC, K] x [K, N*OH*OW], then a pass back to NCHW) on the
// two-conv CNN at batch 64 on 2 cores, forward+backward: 1->32 on 28x28
// 1.25 ms vs 3.0 ms, 32->64 on 14x14 9.9 ms vs 13.1 ms (keeping the batched
// column buffer from forward instead of rebuilding it only gave 12.2 ms).
#include <deepcanvas/errors.h>
#include <deepcanvas/memstats.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/rng.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "builtin.h"

namespace dc {
namespace {

std::string num(int64_t v) {
  return std::to_string(v);
}
std::string pair_str(int64_t a, int64_t b) {
  return num(a) + "×" + num(b);
}

// Everything a kernel needs, resolved once from attributes and input shape.
struct ConvGeom {
  int64_t C = 0, H = 0, W = 0;  // input
  int64_t OC = 0, KH = 0, KW = 0, SH = 1, SW = 1, DH = 1, DW = 1, G = 1;
  int64_t PT = 0, PB = 0, PL = 0, PR = 0;  // "same" may pad asymmetrically
  int64_t OH = 0, OW = 0;
  bool bias = true;

  int64_t Cg() const { return C / G; }
  int64_t OCg() const { return OC / G; }
  int64_t Kg() const { return Cg() * KH * KW; }  // GEMM depth per group
  int64_t K() const { return C * KH * KW; }      // rows of the column buffer
  int64_t HW() const { return H * W; }
  int64_t OHW() const { return OH * OW; }
  // A 1x1 stride-1 unpadded convolution is a plain GEMM on the input.
  bool pointwise() const {
    return KH == 1 && KW == 1 && SH == 1 && SW == 1 && PT == 0 && PB == 0 && PL == 0 && PR == 0;
  }
  // One input channel per group (MobileNet's and EfficientNet's depthwise
  // convolutions, any channel multiplier): run directly, without columns.
  // Through im2col each group was a 1-row GEMM, all call overhead: EfficientNet-
  // Lite0's depthwise layers took 80 % of its forward time that way.
  bool depthwise() const { return G > 1 && Cg() == 1 && !pointwise(); }
  bool uses_columns() const { return !pointwise() && !depthwise(); }
};

}  // namespace

void same_padding(int64_t in, int64_t k, int64_t s, int64_t d, int64_t& before, int64_t& after) {
  int64_t out = (in + s - 1) / s;
  int64_t total = std::max<int64_t>(0, (out - 1) * s + d * (k - 1) + 1 - in);
  before = total / 2;
  after = total - before;
}

namespace {

ConvGeom conv_geom(const std::vector<Shape>& in, const Attrs& a) {
  if (in.size() != 1) throw ShapeError("expects exactly one input");
  const Shape& s = in[0];
  if (s.rank() != 3) {
    std::string msg = "expects a 3-D input (channels×height×width) but got " + s.str();
    if (s.rank() == 1)
      msg += "; remove the Flatten before it, or add a Reshape to channels×height×width";
    else if (s.rank() == 2)
      msg +=
          "; add a Reshape to channels×height×width (e.g. 1×" + num(s[0]) + "×" + num(s[1]) + ")";
    throw ShapeError(msg);
  }
  ConvGeom g;
  g.C = s[0];
  g.H = s[1];
  g.W = s[2];
  g.OC = a.i("filters");
  g.G = a.i("groups");
  const auto& k = a.ints("kernel");
  const auto& st = a.ints("stride");
  const auto& dl = a.ints("dilation");
  g.KH = k[0];
  g.KW = k[1];
  g.SH = st[0];
  g.SW = st[1];
  g.DH = dl[0];
  g.DW = dl[1];
  g.bias = a.b("bias");
  if (g.C % g.G != 0)
    throw ShapeError("the input has " + num(g.C) +
                     " channels, which is not divisible by groups = " + num(g.G) +
                     "; set groups to a divisor of " + num(g.C));
  if (g.OC % g.G != 0)
    throw ShapeError("filters = " + num(g.OC) + " is not divisible by groups = " + num(g.G) +
                     "; use a multiple of " + num(g.G) + " filters");
  const std::string& mode = a.s("padding_mode");
  if (mode == "same") {
    same_padding(g.H, g.KH, g.SH, g.DH, g.PT, g.PB);
    same_padding(g.W, g.KW, g.SW, g.DW, g.PL, g.PR);
  } else if (mode == "explicit") {
    const auto& p = a.ints("padding");
    g.PT = g.PB = p[0];
    g.PL = g.PR = p[1];
  } else if (mode != "valid") {
    throw ShapeError("unknown padding_mode '" + mode + "'; use explicit, same or valid");
  }
  // Extent of the dilated kernel window.
  int64_t eh = g.DH * (g.KH - 1) + 1, ew = g.DW * (g.KW - 1) + 1;
  int64_t ph = g.H + g.PT + g.PB, pw = g.W + g.PL + g.PR;
  if (eh > ph || ew > pw) {
    std::string win = pair_str(g.KH, g.KW) + " kernel";
    if (g.DH != 1 || g.DW != 1) win += " with dilation " + pair_str(g.DH, g.DW);
    throw ShapeError("the " + win + " spans " + pair_str(eh, ew) + ", larger than the " +
                     pair_str(g.H, g.W) + " input padded to " + pair_str(ph, pw) +
                     ", so the output would be empty; use a smaller kernel or dilation, add "
                     "padding, or remove a pooling layer before it");
  }
  g.OH = (ph - eh) / g.SH + 1;
  g.OW = (pw - ew) / g.SW + 1;
  return g;
}

// Valid output columns [lo, hi) for kernel column offset `off` (input column
// = ow*stride + off): outside it the window reads padding.
void valid_range(int64_t off, int64_t stride, int64_t in, int64_t out, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  hi = in - 1 - off < 0 ? 0 : (in - 1 - off) / stride + 1;
  lo = std::min(lo, out);
  hi = std::max(lo, std::min(hi, out));
}

// Unfolds one sample [C, H, W] into col [K, OH*OW] (row stride ld).
void im2col(const ConvGeom& g, const float* x, float* col, int64_t ld) {
  const int64_t OW = g.OW;
  for (int64_t c = 0; c < g.C; ++c) {
    const float* xc = x + c * g.HW();
    for (int64_t ki = 0; ki < g.KH; ++ki)
      for (int64_t kj = 0; kj < g.KW; ++kj) {
        float* row = col + ((c * g.KH + ki) * g.KW + kj) * ld;
        int64_t off = kj * g.DW - g.PL, lo, hi;
        valid_range(off, g.SW, g.W, OW, lo, hi);
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          float* r = row + oh * OW;
          int64_t ih = oh * g.SH - g.PT + ki * g.DH;
          if (ih < 0 || ih >= g.H) {
            for (int64_t ow = 0; ow < OW; ++ow) r[ow] = 0.f;
            continue;
          }
          const float* xr = xc + ih * g.W + off;
          for (int64_t ow = 0; ow < lo; ++ow) r[ow] = 0.f;
          // Rows are short (tens of floats): a plain loop beats memcpy's call.
          if (g.SW == 1) {
            for (int64_t ow = lo; ow < hi; ++ow) r[ow] = xr[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) r[ow] = xr[ow * g.SW];
          }
          for (int64_t ow = hi; ow < OW; ++ow) r[ow] = 0.f;
        }
      }
  }
}

// Folds col [K, OH*OW] back onto one sample's input gradient, accumulating.
void col2im(const ConvGeom& g, const float* col, float* dx, int64_t ld) {
  const int64_t OW = g.OW;
  for (int64_t c = 0; c < g.C; ++c) {
    float* dc_ = dx + c * g.HW();
    for (int64_t ki = 0; ki < g.KH; ++ki)
      for (int64_t kj = 0; kj < g.KW; ++kj) {
        const float* row = col + ((c * g.KH + ki) * g.KW + kj) * ld;
        int64_t off = kj * g.DW - g.PL, lo, hi;
        valid_range(off, g.SW, g.W, OW, lo, hi);
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          int64_t ih = oh * g.SH - g.PT + ki * g.DH;
          if (ih < 0 || ih >= g.H) continue;
          const float* r = row + oh * OW;
          float* xr = dc_ + ih * g.W + off;
          if (g.SW == 1) {
            for (int64_t ow = lo; ow < hi; ++ow) xr[ow] += r[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) xr[ow * g.SW] += r[ow];
          }
        }
      }
  }
}

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

// Dot product of a and b[i * stride] with the same eight partial sums as sum().
float dot(const float* __restrict a, const float* __restrict b, int64_t stride, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  if (stride == 1) {
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  } else {
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[(i + j) * stride];
  }
  float s = 0.f;
  for (; i < n; ++i) s += a[i] * b[i * stride];
  for (int j = 0; j < 8; ++j) s += acc[j];
  return s;
}

// y[i] += w * x[i * stride] for i in [0, n).
void axpy(float w, const float* __restrict x, int64_t stride, float* __restrict y, int64_t n) {
  if (stride == 1)
    for (int64_t i = 0; i < n; ++i) y[i] += w * x[i];
  else
    for (int64_t i = 0; i < n; ++i) y[i] += w * x[i * stride];
}

// x[i * stride] += w * y[i] for i in [0, n): the transpose of axpy.
void axpy_scatter(float w, const float* __restrict y, float* __restrict x, int64_t stride,
                  int64_t n) {
  if (stride == 1)
    for (int64_t i = 0; i < n; ++i) x[i] += w * y[i];
  else
    for (int64_t i = 0; i < n; ++i) x[i * stride] += w * y[i];
}

class Conv2D : public Layer {
 public:
  explicit Conv2D(const ConvGeom& g) : g_(g) {
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

  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const int64_t N = in[0]->dim(0);
    const float* x = in[0]->f32();
    float* y = out.f32();
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

  bool fuse_relu() override {
    relu_ = true;
    return true;
  }

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
    if (g_.depthwise()) {
      depthwise_backward(N, x, y, dy, dx, fresh);
      return;
    }
    ensure_scratch(col_, chunks);
    if (dx) ensure_scratch(dcol_, chunks);
    if (relu_) {
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
          if (relu_) {
            // The fused ReLU's backward, on this sample while it is in
            // cache: the output is max(conv, 0), so out > 0 is the mask.
            float* __restrict m = masked_[c].data();
            const float* __restrict ys = y + n * OUT;
            const float* __restrict g = dys;
            for (int64_t i = 0; i < OUT; ++i) m[i] = g[i] * (ys[i] > 0.0f ? 1.0f : 0.0f);
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
  int64_t num_chunks(int64_t N) const {
    return std::max<int64_t>(1, std::min<int64_t>(num_threads(), N));
  }

  void ensure_scratch(std::vector<ScratchVec<float>>& bufs, int64_t chunks) const {
    if (static_cast<int64_t>(bufs.size()) < chunks) bufs.resize(static_cast<size_t>(chunks));
    if (!g_.uses_columns()) return;  // reads the input in place; buffers stay empty
    for (auto& b : bufs)
      if (static_cast<int64_t>(b.size()) < g_.K() * g_.OHW())
        b.resize(static_cast<size_t>(g_.K() * g_.OHW()));
  }

  // Output columns [lo, hi) per kernel column that read the input, not padding.
  void column_ranges(std::vector<int64_t>& lo, std::vector<int64_t>& hi) const {
    lo.resize(static_cast<size_t>(g_.KW));
    hi.resize(static_cast<size_t>(g_.KW));
    for (int64_t kj = 0; kj < g_.KW; ++kj)
      valid_range(kj * g_.DW - g_.PL, g_.SW, g_.W, g_.OW, lo[size_t(kj)], hi[size_t(kj)]);
  }

  // Calls fn(tap, input row, first output column, its input column, count)
  // for each kernel tap of output row oh whose input row lies inside the
  // image and whose output columns do not all read padding.
  template <class Fn>
  void for_each_tap(int64_t oh, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi,
                    Fn&& fn) const {
    for (int64_t ki = 0; ki < g_.KH; ++ki) {
      const int64_t ih = oh * g_.SH - g_.PT + ki * g_.DH;
      if (ih < 0 || ih >= g_.H) continue;
      for (int64_t kj = 0; kj < g_.KW; ++kj) {
        const int64_t l = lo[size_t(kj)], h = hi[size_t(kj)];
        if (h > l) fn(ki * g_.KW + kj, ih, l, l * g_.SW + kj * g_.DW - g_.PL, h - l);
      }
    }
  }

  // Depthwise forward: every (sample, output channel) plane is independent,
  // so threads split planes, which also keeps both cores busy at batch 1
  // (the inference panel). Each output row accumulates its taps while it
  // sits in L1.
  void depthwise_forward(int64_t N, const float* x, float* y) const {
    const int64_t OC = g_.OC, OCg = g_.OCg(), OH = g_.OH, OW = g_.OW, KK = g_.KH * g_.KW;
    std::vector<int64_t> lo, hi;
    column_ranges(lo, hi);
    const float* w = weight_.value.f32();
    const float* b = g_.bias ? bias_.value.f32() : nullptr;
    parallel_for(N * OC, 1, [&](int64_t pb, int64_t pe) {
      for (int64_t p = pb; p < pe; ++p) {
        const int64_t n = p / OC, o = p % OC;
        const float* xc = x + (n * g_.C + o / OCg) * g_.HW();
        float* yo = y + p * g_.OHW();
        const float* wo = w + o * KK;
        std::fill(yo, yo + g_.OHW(), b ? b[o] : 0.f);
        for (int64_t oh = 0; oh < OH; ++oh) {
          float* yr = yo + oh * OW;
          for_each_tap(oh, lo, hi, [&](int64_t t, int64_t ih, int64_t l, int64_t ix, int64_t cnt) {
            axpy(wo[t], xc + ih * g_.W + ix, g_.SW, yr + l, cnt);
          });
        }
        if (relu_)
          for (int64_t i = 0; i < g_.OHW(); ++i) yo[i] = std::max(yo[i], 0.0f);
      }
    });
  }

  // Copies one output-gradient row, masked by the fused ReLU when there is one.
  const float* grad_row(const float* dy, const float* y, int64_t off, float* buf) const {
    if (!relu_) return dy + off;
    for (int64_t i = 0; i < g_.OW; ++i) buf[i] = dy[off + i] * (y[off + i] > 0.0f ? 1.0f : 0.0f);
    return buf;
  }

  // Depthwise backward. Weight and bias gradients: one thread per output
  // channel sums over the batch in sample order, so results repeat exactly
  // for any thread count and need no per-thread partial sums. Input
  // gradient: one thread per (sample, input channel) plane, from the
  // channel's OCg outputs.
  void depthwise_backward(int64_t N, const float* x, const float* y, const float* dy, float* dx,
                          bool fresh) {
    const int64_t OC = g_.OC, OCg = g_.OCg(), OH = g_.OH, OW = g_.OW, KK = g_.KH * g_.KW;
    const int64_t OHW = g_.OHW(), HW = g_.HW();
    std::vector<int64_t> lo, hi;
    column_ranges(lo, hi);
    const float* w = weight_.value.f32();
    if (weight_.grad.defined()) {
      float* gw = weight_.grad.f32();
      float* gb = g_.bias ? bias_.grad.f32() : nullptr;
      parallel_for(OC, 1, [&](int64_t ob, int64_t oe) {
        std::vector<float> buf(static_cast<size_t>(OW)), acc(static_cast<size_t>(KK));
        for (int64_t o = ob; o < oe; ++o) {
          std::fill(acc.begin(), acc.end(), 0.f);
          float bsum = 0.f;
          for (int64_t n = 0; n < N; ++n) {
            const float* xc = x + (n * g_.C + o / OCg) * HW;
            const int64_t plane = (n * OC + o) * OHW;
            for (int64_t oh = 0; oh < OH; ++oh) {
              const float* gr = grad_row(dy, y, plane + oh * OW, buf.data());
              if (gb) bsum += sum(gr, OW);
              for_each_tap(oh, lo, hi,
                           [&](int64_t t, int64_t ih, int64_t l, int64_t ix, int64_t cnt) {
                             acc[size_t(t)] += dot(gr + l, xc + ih * g_.W + ix, g_.SW, cnt);
                           });
            }
          }
          for (int64_t k = 0; k < KK; ++k) gw[o * KK + k] += acc[size_t(k)];
          if (gb) gb[o] += bsum;
        }
      });
    }
    if (!dx) return;
    parallel_for(N * g_.C, 1, [&](int64_t pb, int64_t pe) {
      std::vector<float> buf(static_cast<size_t>(OW));
      for (int64_t p = pb; p < pe; ++p) {
        const int64_t n = p / g_.C, c = p % g_.C;
        float* dxc = dx + p * HW;
        if (fresh) std::fill(dxc, dxc + HW, 0.f);
        for (int64_t o = c * OCg; o < (c + 1) * OCg; ++o) {
          const float* wo = w + o * KK;
          const int64_t plane = (n * OC + o) * OHW;
          for (int64_t oh = 0; oh < OH; ++oh) {
            const float* gr = grad_row(dy, y, plane + oh * OW, buf.data());
            for_each_tap(oh, lo, hi,
                         [&](int64_t t, int64_t ih, int64_t l, int64_t ix, int64_t cnt) {
                           axpy_scatter(wo[t], gr + l, dxc + ih * g_.W + ix, g_.SW, cnt);
                         });
          }
        }
      }
    });
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
    if (relu_)
      for (int64_t i = 0; i < g_.OC * OHW; ++i) y[i] = std::max(y[i], 0.0f);
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
  bool relu_ = false;                      // a ReLU is fused into this layer (fuse_relu)
};

const LayerDescriptor& conv_desc() {
  return LayerRegistry::instance().get("Conv2D");
}

}  // namespace

bool conv_is_pointwise(const std::vector<Shape>& in, const Attrs& a) {
  return conv_geom(in, a).pointwise();
}

bool conv_uses_columns(const std::vector<Shape>& in, const Attrs& a) {
  return conv_geom(in, a).uses_columns();
}

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
    c.macs = g.OC * g.OHW() * g.Kg();
    return c;
  };
  d.create = [](const Attrs& a, const std::vector<Shape>& in, const Shape&) {
    return std::unique_ptr<Layer>(new Conv2D(conv_geom(in, conv_desc().with_defaults(a))));
  };
  r.add(std::move(d));
}

}  // namespace dc
