// Recurrent layers: SimpleRNN (tanh or relu), LSTM and GRU, as torch.nn.RNN,
// nn.LSTM and nn.GRU with batch_first=True. Parameters carry PyTorch's names,
// layouts and gate orders (weight_ih_l0 [G*H, In], weight_hh_l0 [G*H, H],
// bias_ih_l0, bias_hh_l0, *_reverse; LSTM i,f,g,o; GRU r,z,n) so weights move
// between the two as is.
//
// Input [N, T, F]. Output [N, T, D*H] (return_sequences) or [N, D*H], the
// final state of each direction as PyTorch's h_n of the last layer (the
// reverse direction's final state is the one at t = 0).
//
// Speed: the input projections of all T steps are one GEMM per layer and
// direction; each step is one [N, H] x [H, G*H] GEMM plus an elementwise
// pass; backward mirrors it, and the weight gradients are again one GEMM
// each over all steps, because the states entering every step are kept.
#include <deepcanvas/checked.h>
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

enum class Cell { RnnTanh, RnnRelu, Lstm, Gru };

struct RnnGeom {
  Cell cell = Cell::Lstm;
  int64_t T = 0, F = 0, H = 0, L = 1, D = 1, G = 4;
  double dropout = 0;
  bool seq = false, learned_init = false, bias = true;
};

// exp, sigmoid and tanh without library calls, so the gate loops vectorise
// (libm's tanhf was a quarter of an LSTM step). Cephes' expf polynomial on
// x - n ln2 with n = round(x / ln2): relative error about 1e-7, well inside
// the 1e-5 agreement with PyTorch the tests ask for.
inline float fast_exp(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  float n = std::floor(x * 1.44269504088896341f + 0.5f);
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits = (int32_t(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

inline float sigm(float x) {
  return 1.0f / (1.0f + fast_exp(-x));
}

inline float ftanh(float x) {
  return 1.0f - 2.0f / (fast_exp(2.0f * x) + 1.0f);
}

const char* type_of(Cell c) {
  return c == Cell::Lstm ? "LSTM" : c == Cell::Gru ? "GRU" : "SimpleRNN";
}

RnnGeom rnn_geom(Cell cell, const std::vector<Shape>& in, const Attrs& attrs) {
  if (in.size() != 1) throw ShapeError("expects exactly one input");
  const Shape& s = in[0];
  if (s.rank() != 2)
    throw ShapeError("expects a sequence (time×features) but got " + s.str() +
                     "; feed it from a SequenceInput, an Embedding or another recurrent layer "
                     "with return_sequences on");
  Attrs a = LayerRegistry::instance().get(type_of(cell)).with_defaults(attrs);
  RnnGeom g;
  g.cell = cell;
  if (cell != Cell::Lstm && cell != Cell::Gru)
    g.cell = a.s("nonlinearity") == "relu" ? Cell::RnnRelu : Cell::RnnTanh;
  g.G = cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1;
  g.T = s[0];
  g.F = s[1];
  g.H = a.i("hidden_size");
  g.L = a.i("num_layers");
  g.D = a.b("bidirectional") ? 2 : 1;
  g.dropout = a.f("dropout");
  g.seq = a.b("return_sequences");
  g.learned_init = a.s("initial_state") == "learned";
  g.bias = a.b("bias");
  if (g.H < 1) throw ShapeError("hidden_size must be at least 1");
  if (g.L < 1) throw ShapeError("num_layers must be at least 1");
  if (g.dropout < 0 || g.dropout >= 1) throw ShapeError("dropout must be in [0, 1)");
  // The largest weight (gates·hidden × the widest layer input) and the
  // gate values kept per sample for backward: counts past 64 bits refused.
  checked_product(std::vector<int64_t>{g.G, g.H, std::max(g.F, checked_mul(g.D, g.H, "hidden"))},
                  "the input weights (gates·hidden_size×features)");
  checked_product(std::vector<int64_t>{g.T, g.D, g.G, g.H},
                  "the gate values of a sample (steps×directions×gates×hidden_size)");
  return g;
}

Param make_param(const std::string& name, Shape s, bool decay) {
  Param p;
  p.name = name;
  p.value = Tensor(s);
  p.grad = Tensor(s);
  p.decay = decay;
  return p;
}

// One layer and direction: its parameters and what forward keeps for backward.
struct Unit {
  Param w_ih, w_hh, b_ih, b_hh, h0, c0;
  ScratchVec<float> gates;  // [N, T, G*H]: pre-activations, then activations
  ScratchVec<float> hprev;  // [N, T, H]: the state entering each step
  ScratchVec<float> cell;   // LSTM [N, T, H]: cell state after each step
  ScratchVec<float> hn;     // GRU [N, T, H]: W_hn h + b_hn
  ScratchVec<float> dgx, dgh;
};

class Recurrent : public Layer {
 public:
  explicit Recurrent(const RnnGeom& g) : g_(g), units_(size_t(g.L * g.D)) {
    const int64_t GH = g.G * g.H;
    for (int64_t l = 0; l < g.L; ++l)
      for (int64_t d = 0; d < g.D; ++d) {
        Unit& u = unit(l, d);
        std::string sfx = "_l" + std::to_string(l) + (d ? "_reverse" : "");
        int64_t in = l == 0 ? g.F : g.D * g.H;
        u.w_ih = make_param("weight_ih" + sfx, Shape{GH, in}, true);
        u.w_hh = make_param("weight_hh" + sfx, Shape{GH, g.H}, true);
        if (g.bias) {
          u.b_ih = make_param("bias_ih" + sfx, Shape{GH}, false);
          u.b_hh = make_param("bias_hh" + sfx, Shape{GH}, false);
        }
        if (g.learned_init) {
          u.h0 = make_param("h0" + sfx, Shape{g.H}, false);
          if (g.cell == Cell::Lstm) u.c0 = make_param("c0" + sfx, Shape{g.H}, false);
        }
      }
  }

  std::vector<Param*> params() override {
    std::vector<Param*> v;
    for (Unit& u : units_) {
      v.push_back(&u.w_ih);
      v.push_back(&u.w_hh);
      if (g_.bias) {
        v.push_back(&u.b_ih);
        v.push_back(&u.b_hh);
      }
    }
    if (g_.learned_init)
      for (Unit& u : units_) {
        v.push_back(&u.h0);
        if (g_.cell == Cell::Lstm) v.push_back(&u.c0);
      }
    return v;
  }

  // PyTorch: every weight and bias U(-1/sqrt(H), 1/sqrt(H)), drawn in its
  // parameter order. Learned initial states start at zero, so a fresh model
  // behaves exactly like one with a zero initial state.
  void init(Rng& rng) override {
    const float b = 1.0f / std::sqrt(float(g_.H));
    for (Unit& u : units_)
      for (Param* p : {&u.w_ih, &u.w_hh, &u.b_ih, &u.b_hh})
        if (p->value.defined())
          for (int64_t i = 0; i < p->value.numel(); ++i) p->value.f32()[i] = rng.uniform(-b, b);
    for (Unit& u : units_) {
      if (u.h0.value.defined()) u.h0.value.zero();
      if (u.c0.value.defined()) u.c0.value.zero();
    }
  }

  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext& ctx) override {
    N_ = in[0]->dim(0);
    const int64_t T = g_.T, DH = g_.D * g_.H;
    ys_.resize(size_t(g_.L));
    drops_.resize(size_t(g_.L));
    masks_.resize(size_t(g_.L));
    masked_ = ctx.training && g_.dropout > 0;
    const float* x = in[0]->f32();
    for (int64_t l = 0; l < g_.L; ++l) {
      ScratchVec<float>& y = ys_[size_t(l)];
      y.resize(size_t(N_ * T * DH));
      for (int64_t d = 0; d < g_.D; ++d) forward_unit(l, d, x, y.data());
      x = y.data();
      if (masked_ && l + 1 < g_.L) {
        // Drawn in order from the step's generator: same seed, same mask.
        Rng& rng = ctx.rng ? *ctx.rng : fallback_;
        const float keep = float(1.0 / (1.0 - g_.dropout)), rate = float(g_.dropout);
        auto& m = masks_[size_t(l)];
        auto& dr = drops_[size_t(l)];
        m.resize(y.size());
        dr.resize(y.size());
        for (size_t i = 0; i < y.size(); ++i) {
          m[i] = rng.uniform() >= rate ? keep : 0.f;
          dr[i] = y[i] * m[i];
        }
        x = dr.data();
      }
    }
    const float* top = ys_.back().data();
    float* o = out.f32();
    if (g_.seq) {
      std::copy(top, top + N_ * T * DH, o);
      return;
    }
    for (int64_t n = 0; n < N_; ++n)
      for (int64_t d = 0; d < g_.D; ++d) {
        int64_t t = d == 0 ? T - 1 : 0;
        const float* src = top + (n * T + t) * DH + d * g_.H;
        std::copy(src, src + g_.H, o + n * DH + d * g_.H);
      }
  }

  void backward(const std::vector<const Tensor*>& in, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext&) override {
    const int64_t T = g_.T, DH = g_.D * g_.H;
    // dY of the layer being processed ([N, T, DH]); the top layer's comes
    // from dout (sequence) or enters as the final state's gradient.
    ScratchVec<float> dy_buf, dx_buf;
    const float* dy = g_.seq ? dout.f32() : nullptr;
    for (int64_t l = g_.L - 1; l >= 0; --l) {
      const bool first = l == 0;
      const int64_t In = first ? g_.F : DH;
      const float* x = first ? in[0]->f32()
                             : (masked_ ? drops_[size_t(l - 1)].data() : ys_[size_t(l - 1)].data());
      float* dx = nullptr;
      if (first) {
        dx = din[0] ? din[0]->f32() : nullptr;
      } else {
        dx_buf.assign(size_t(N_ * T * In), 0.f);
        dx = dx_buf.data();
      }
      const float* dfinal = (!g_.seq && l == g_.L - 1) ? dout.f32() : nullptr;
      for (int64_t d = 0; d < g_.D; ++d) backward_unit(l, d, x, In, dy, dfinal, dx);
      if (!first) {
        if (masked_) {
          const auto& m = masks_[size_t(l - 1)];
          for (size_t i = 0; i < dx_buf.size(); ++i) dx_buf[i] *= m[i];
        }
        dy_buf.swap(dx_buf);
        dy = dy_buf.data();
      }
    }
  }

 private:
  Unit& unit(int64_t l, int64_t d) { return units_[size_t(l * g_.D + d)]; }

  // Samples per thread in the time loops: enough rows that each per-step
  // GEMM is still worth calling.
  static int64_t rows_grain() { return 8; }

  // The state entering the first step of a unit, broadcast over the batch.
  void initial(const Param& p, ScratchVec<float>& buf) {
    buf.assign(size_t(N_ * g_.H), 0.f);
    if (!g_.learned_init || !p.value.defined()) return;
    for (int64_t n = 0; n < N_; ++n)
      std::copy(p.value.f32(), p.value.f32() + g_.H, buf.data() + n * g_.H);
  }

  void forward_unit(int64_t l, int64_t d, const float* x, float* y) {
    Unit& u = unit(l, d);
    const int64_t N = N_, T = g_.T, H = g_.H, G = g_.G, GH = G * H, DH = g_.D * H;
    const int64_t In = l == 0 ? g_.F : DH;
    u.gates.resize(size_t(N * T * GH));
    u.hprev.resize(size_t(N * T * H));
    float* gates = u.gates.data();
    // Seed with the biases so the projection GEMM adds them. GRU keeps b_hn
    // apart: it sits inside r * (W_hn h + b_hn).
    bias_row_.assign(size_t(GH), 0.f);
    if (g_.bias) {
      const float* bi = u.b_ih.value.f32();
      const float* bh = u.b_hh.value.f32();
      for (int64_t k = 0; k < GH; ++k)
        bias_row_[k] = bi[k] + (g_.cell == Cell::Gru && k >= 2 * H ? 0.f : bh[k]);
    }
    for (int64_t r = 0; r < N * T; ++r)
      std::copy(bias_row_.begin(), bias_row_.end(), gates + r * GH);
    sgemm(false, true, N * T, GH, In, 1.f, x, In, u.w_ih.value.f32(), In, 1.f, gates, GH);

    initial(u.h0, h0_);
    if (g_.cell == Cell::Lstm) {
      u.cell.resize(size_t(N * T * H));
      initial(u.c0, c0_);
    }
    if (g_.cell == Cell::Gru) {
      u.hn.resize(size_t(N * T * H));
      tmp_.resize(size_t(N * GH));
    }
    const float* whh = u.w_hh.value.f32();
    const float* bhn = g_.cell == Cell::Gru && g_.bias ? u.b_hh.value.f32() + 2 * H : nullptr;
    // The recurrence is independent across samples: each thread runs all T
    // steps for its own rows, so there is one parallel region per unit
    // instead of one per step (a small per-step GEMM cannot amortise a
    // thread hand-off), and BLAS runs single-threaded inside it.
    parallel_for(N, rows_grain(), [&](int64_t b, int64_t e) {
      const int64_t M = e - b;
      const float* hp = h0_.data() + b * H;
      int64_t ldh = H;
      // Only LSTM has a cell state; offsetting the other cells' empty
      // buffer would be pointer arithmetic on null (UBSan).
      const float* cp = g_.cell == Cell::Lstm ? c0_.data() + b * H : nullptr;
      int64_t ldc = H;
      float* tmp = g_.cell == Cell::Gru ? tmp_.data() + b * GH : nullptr;
      for (int64_t s = 0; s < T; ++s) {
        const int64_t t = d == 0 ? s : T - 1 - s;
        float* gt = gates + (b * T + t) * GH;  // row n (from b) at gt + n * T * GH
        for (int64_t n = 0; n < M; ++n)
          std::copy(hp + n * ldh, hp + n * ldh + H, u.hprev.data() + ((b + n) * T + t) * H);
        if (tmp)
          sgemm(false, true, M, GH, H, 1.f, hp, ldh, whh, H, 0.f, tmp, GH);
        else
          sgemm(false, true, M, GH, H, 1.f, hp, ldh, whh, H, 1.f, gt, T * GH);
        float* yt = y + (b * T + t) * DH + d * H;  // row n at yt + n * T * DH
        for (int64_t n = 0; n < M; ++n) {
          float* g = gt + n * T * GH;
          float* h = yt + n * T * DH;
          const float* hpr = hp + n * ldh;
          switch (g_.cell) {
            case Cell::Lstm: {
              const float* cpr = cp + n * ldc;
              float* c = u.cell.data() + ((b + n) * T + t) * H;
              for (int64_t j = 0; j < H; ++j) {
                float ig = sigm(g[j]), fg = sigm(g[H + j]), gg = ftanh(g[2 * H + j]),
                      og = sigm(g[3 * H + j]);
                g[j] = ig;
                g[H + j] = fg;
                g[2 * H + j] = gg;
                g[3 * H + j] = og;
                float cv = fg * cpr[j] + ig * gg;
                c[j] = cv;
                h[j] = og * ftanh(cv);
              }
              break;
            }
            case Cell::Gru: {
              const float* hh = tmp + n * GH;
              float* hn = u.hn.data() + ((b + n) * T + t) * H;
              for (int64_t j = 0; j < H; ++j) {
                float r = sigm(g[j] + hh[j]), z = sigm(g[H + j] + hh[H + j]);
                float hnv = hh[2 * H + j] + (bhn ? bhn[j] : 0.f);
                float nv = ftanh(g[2 * H + j] + r * hnv);
                g[j] = r;
                g[H + j] = z;
                g[2 * H + j] = nv;
                hn[j] = hnv;
                h[j] = (1.f - z) * nv + z * hpr[j];
              }
              break;
            }
            case Cell::RnnTanh:
              for (int64_t j = 0; j < H; ++j) h[j] = g[j] = ftanh(g[j]);
              break;
            case Cell::RnnRelu:
              for (int64_t j = 0; j < H; ++j) h[j] = g[j] = std::max(g[j], 0.f);
              break;
          }
        }
        hp = yt;
        ldh = T * DH;
        if (g_.cell == Cell::Lstm) {
          cp = u.cell.data() + (b * T + t) * H;
          ldc = T * H;
        }
      }
    });
  }

  // dy: [N, T, DH] gradient of this layer's output sequence (or null);
  // dfinal: [N, DH] gradient of the final states (or null). Accumulates into
  // the unit's parameter gradients and into dx ([N, T, In], may be null).
  void backward_unit(int64_t l, int64_t d, const float* x, int64_t In, const float* dy,
                     const float* dfinal, float* dx) {
    Unit& u = unit(l, d);
    const int64_t N = N_, T = g_.T, H = g_.H, G = g_.G, GH = G * H, DH = g_.D * H;
    const bool gru = g_.cell == Cell::Gru, lstm = g_.cell == Cell::Lstm;
    u.dgx.resize(size_t(N * T * GH));
    if (gru) u.dgh.resize(size_t(N * T * GH));
    float* dgx = u.dgx.data();
    float* dgh = gru ? u.dgh.data() : dgx;
    dh_.assign(size_t(N * H), 0.f);
    dc_.assign(size_t(N * H), 0.f);
    if (dfinal)
      for (int64_t n = 0; n < N; ++n)
        std::copy(dfinal + n * DH + d * H, dfinal + n * DH + d * H + H, dh_.data() + n * H);
    if (lstm) initial(u.c0, c0_);
    const float* whh = u.w_hh.value.f32();
    parallel_for(N, rows_grain(), [&](int64_t b, int64_t e) {
      const int64_t M = e - b;
      for (int64_t s = T - 1; s >= 0; --s) {
        const int64_t t = d == 0 ? s : T - 1 - s;
        const int64_t tprev = d == 0 ? t - 1 : t + 1;  // valid when s > 0
        for (int64_t n = b; n < e; ++n) {
          const int64_t row = n * T + t;
          const float* g = u.gates.data() + row * GH;
          float* gx = dgx + row * GH;
          float* gh = dgh + row * GH;
          float* dh = dh_.data() + n * H;
          const float* dyr = dy ? dy + row * DH + d * H : nullptr;
          if (dyr)
            for (int64_t j = 0; j < H; ++j) dh[j] += dyr[j];
          switch (g_.cell) {
            case Cell::Lstm: {
              const float* c = u.cell.data() + row * H;
              const float* cp = s > 0 ? u.cell.data() + (n * T + tprev) * H : c0_.data() + n * H;
              float* dc = dc_.data() + n * H;
              for (int64_t j = 0; j < H; ++j) {
                float ig = g[j], fg = g[H + j], gg = g[2 * H + j], og = g[3 * H + j];
                float tc = ftanh(c[j]);
                float dcv = dc[j] + dh[j] * og * (1.f - tc * tc);
                gx[j] = dcv * gg * ig * (1.f - ig);
                gx[H + j] = dcv * cp[j] * fg * (1.f - fg);
                gx[2 * H + j] = dcv * ig * (1.f - gg * gg);
                gx[3 * H + j] = dh[j] * tc * og * (1.f - og);
                dc[j] = dcv * fg;
              }
              break;
            }
            case Cell::Gru: {
              const float* hn = u.hn.data() + row * H;
              const float* hp = u.hprev.data() + row * H;
              for (int64_t j = 0; j < H; ++j) {
                float r = g[j], z = g[H + j], nv = g[2 * H + j];
                float dpn = dh[j] * (1.f - z) * (1.f - nv * nv);
                float dpr = dpn * hn[j] * r * (1.f - r);
                float dpz = dh[j] * (hp[j] - nv) * z * (1.f - z);
                gx[j] = gh[j] = dpr;
                gx[H + j] = gh[H + j] = dpz;
                gx[2 * H + j] = dpn;
                gh[2 * H + j] = dpn * r;
                dh[j] *= z;  // the direct path; the GEMM below adds the rest
              }
              break;
            }
            case Cell::RnnTanh:
              for (int64_t j = 0; j < H; ++j) gx[j] = dh[j] * (1.f - g[j] * g[j]);
              break;
            case Cell::RnnRelu:
              for (int64_t j = 0; j < H; ++j) gx[j] = g[j] > 0.f ? dh[j] : 0.f;
              break;
          }
        }
        // dh_prev = dG_hh(t) · W_hh (+ z * dh for GRU, already in dh_).
        sgemm(false, false, M, H, GH, 1.f, dgh + (b * T + t) * GH, T * GH, whh, H, gru ? 1.f : 0.f,
              dh_.data() + b * H, H);
      }
    });
    // A frozen layer's plan releases all of its gradients: then only the
    // input's gradient is computed.
    const bool wgrad = u.w_ih.grad.defined();
    if (g_.learned_init && wgrad) {
      accumulate_rows(dh_.data(), N, H, u.h0.grad.f32());
      if (lstm) accumulate_rows(dc_.data(), N, H, u.c0.grad.f32());
    }
    if (wgrad) {
      sgemm(true, false, GH, In, N * T, 1.f, dgx, GH, x, In, 1.f, u.w_ih.grad.f32(), In);
      sgemm(true, false, GH, H, N * T, 1.f, dgh, GH, u.hprev.data(), H, 1.f, u.w_hh.grad.f32(), H);
    }
    if (g_.bias && wgrad) {
      accumulate_rows(dgx, N * T, GH, u.b_ih.grad.f32());
      accumulate_rows(dgh, N * T, GH, u.b_hh.grad.f32());
    }
    if (dx) sgemm(false, false, N * T, In, GH, 1.f, dgx, GH, u.w_ih.value.f32(), In, 1.f, dx, In);
  }

  // out[c] += sum over rows of m[r][c], in double and row order (repeatable).
  void accumulate_rows(const float* m, int64_t rows, int64_t cols, float* out) {
    sum_.assign(size_t(cols), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) sum_[size_t(c)] += m[r * cols + c];
    for (int64_t c = 0; c < cols; ++c) out[c] += float(sum_[size_t(c)]);
  }

  RnnGeom g_;
  std::vector<Unit> units_;
  int64_t N_ = 0;
  bool masked_ = false;
  std::vector<ScratchVec<float>> ys_, drops_, masks_;
  ScratchVec<float> bias_row_, h0_, c0_, tmp_, dh_, dc_;
  ScratchVec<double> sum_;
  Rng fallback_;
};

std::vector<AttrSpec> rnn_attrs(Cell cell) {
  std::vector<AttrSpec> v = {
      {"hidden_size", AttrType::Int, int64_t{128}, 1, 65536, {}, "Size of the hidden state"},
      {"num_layers", AttrType::Int, int64_t{1}, 1, 64, {}, "Number of stacked recurrent layers"},
      {"dropout",
       AttrType::Float,
       0.0,
       0,
       0.99,
       {},
       "Dropout on the outputs of every layer but the last, in training (as PyTorch's dropout)"},
      {"bidirectional",
       AttrType::Bool,
       false,
       -1e18,
       1e18,
       {},
       "Also read the sequence backwards; the outputs of both directions are concatenated"},
      {"return_sequences",
       AttrType::Bool,
       false,
       -1e18,
       1e18,
       {},
       "Output every step (time×hidden) instead of only the final state (hidden)"},
      {"initial_state",
       AttrType::Enum,
       std::string("zero"),
       -1e18,
       1e18,
       {"zero", "learned"},
       "State before the first step: zeros, or learned vectors (h0, c0) trained with the rest"},
      {"bias", AttrType::Bool, true, -1e18, 1e18, {}, "Learnable biases (bias_ih, bias_hh)"},
  };
  if (cell != Cell::Lstm && cell != Cell::Gru)
    v.push_back({"nonlinearity",
                 AttrType::Enum,
                 std::string("tanh"),
                 -1e18,
                 1e18,
                 {"tanh", "relu"},
                 "Activation of the hidden state"});
  return v;
}

void add_rnn(LayerRegistry& r, Cell cell, const std::string& help) {
  LayerDescriptor d;
  d.type = type_of(cell);
  d.category = "Recurrent";
  d.help = help;
  d.attrs = rnn_attrs(cell);
  d.num_inputs = [](const Attrs&) { return 1; };
  d.infer = [cell](const std::vector<Shape>& in, const Attrs& a) {
    RnnGeom g = rnn_geom(cell, in, a);
    return g.seq ? Shape{g.T, g.D * g.H} : Shape{g.D * g.H};
  };
  d.cost = [cell](const std::vector<Shape>& in, const Shape&, const Attrs& a) {
    RnnGeom g = rnn_geom(cell, in, a);
    Cost c;
    for (int64_t l = 0; l < g.L; ++l) {
      int64_t inf = l == 0 ? g.F : g.D * g.H;
      int64_t per = g.G * g.H * (inf + g.H) + (g.bias ? 2 * g.G * g.H : 0);
      c.params += g.D * per;
      c.macs = checked_add(
          c.macs, checked_mul(g.D * g.T * g.G * g.H, inf + g.H, "the multiply-accumulates"),
          "the multiply-accumulates");
    }
    if (g.learned_init) c.params += g.L * g.D * g.H * (g.cell == Cell::Lstm ? 2 : 1);
    return c;
  };
  d.create = [cell](const Attrs& a, const std::vector<Shape>& in, const Shape&) {
    return std::unique_ptr<Layer>(new Recurrent(rnn_geom(cell, in, a)));
  };
  r.add(std::move(d));
}

}  // namespace

void register_recurrent_layers(LayerRegistry& r) {
  add_rnn(r, Cell::RnnTanh,
          "Simple recurrent layer: h = act(W_ih x + W_hh h + b) at every step (like "
          "torch.nn.RNN)");
  add_rnn(r, Cell::Lstm,
          "Long short-term memory: a recurrent layer with input, forget and output gates (like "
          "torch.nn.LSTM)");
  add_rnn(r, Cell::Gru,
          "Gated recurrent unit: a recurrent layer with reset and update gates (like "
          "torch.nn.GRU)");
}

}  // namespace dc
