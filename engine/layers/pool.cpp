// MaxPool2D, AvgPool2D and GlobalAvgPool2D with PyTorch's semantics
// (floor output size, padding at most half the kernel, average pooling counts
// the zero padding). Every (sample, channel) plane is independent, so kernels
// parallelise over planes and need no reduction.
#include <deepcanvas/checked.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/memstats.h>
#include <deepcanvas/parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
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

void require_chw(const std::vector<Shape>& in) {
  if (in.size() != 1) throw ShapeError("expects exactly one input");
  const Shape& s = in[0];
  if (s.rank() == 3) return;
  std::string msg = "expects a 3-D input (channels×height×width) but got " + s.str();
  if (s.rank() == 1)
    msg += "; pooling works on images, so put it before the Flatten (or use a Reshape)";
  else if (s.rank() == 2)
    msg += "; add a Reshape to channels×height×width (e.g. 1×" + num(s[0]) + "×" + num(s[1]) + ")";
  throw ShapeError(msg);
}

struct PoolGeom {
  int64_t C = 0, H = 0, W = 0, KH = 0, KW = 0, SH = 1, SW = 1, PH = 0, PW = 0, OH = 0, OW = 0;
  int64_t HW() const { return H * W; }
  int64_t OHW() const { return OH * OW; }
};

PoolGeom pool_geom(const std::vector<Shape>& in, const Attrs& a) {
  require_chw(in);
  PoolGeom g;
  g.C = in[0][0];
  g.H = in[0][1];
  g.W = in[0][2];
  const auto& k = a.ints("kernel");
  const auto& s = a.ints("stride");
  const auto& p = a.ints("padding");
  g.KH = k[0];
  g.KW = k[1];
  g.SH = s[0];
  g.SW = s[1];
  g.PH = p[0];
  g.PW = p[1];
  const ConvWindow wh = conv_window(g.H, g.KH, g.SH, 1, g.PH, g.PH, "height");
  const ConvWindow ww = conv_window(g.W, g.KW, g.SW, 1, g.PW, g.PW, "width");
  // More padding than half the window would allow windows made only of
  // padding; PyTorch refuses it for the same reason. (Halving the kernel
  // rather than doubling the padding: neither can overflow.)
  if (g.PH > g.KH / 2 || g.PW > g.KW / 2)
    throw ShapeError("padding " + pair_str(g.PH, g.PW) + " is more than half the " +
                     pair_str(g.KH, g.KW) + " kernel; use at most " + pair_str(g.KH / 2, g.KW / 2));
  const int64_t ph = wh.padded, pw = ww.padded;
  if (wh.out == 0 || ww.out == 0)
    throw ShapeError("the " + pair_str(g.KH, g.KW) + " window is larger than the " +
                     pair_str(g.H, g.W) + " input" +
                     (g.PH || g.PW ? " padded to " + pair_str(ph, pw) : std::string()) +
                     ", so the output would be empty; use a smaller kernel or remove a pooling "
                     "layer before it");
  g.OH = wh.out;
  g.OW = ww.out;
  // PyTorch's ceil_mode (SqueezeNet's max pooling): one more window where
  // the last one would start inside the input (or its left padding) but run
  // past its end; the kernels clip such a window to the input.
  if (a.has("ceil_mode") && a.b("ceil_mode")) {
    // (The windows that fit stay inside the padded size; one stride more
    // may not.)
    const int64_t next_h = checked_mul(g.OH, g.SH, "the ceil_mode height");
    const int64_t next_w = checked_mul(g.OW, g.SW, "the ceil_mode width");
    if ((g.OH - 1) * g.SH + g.KH < ph && next_h < g.H + g.PH) ++g.OH;
    if ((g.OW - 1) * g.SW + g.KW < pw && next_w < g.W + g.PW) ++g.OW;
  }
  return g;
}

// The 2×2/stride-2 window every classic CNN uses, on one plane: the geometry
// is in registers and the window unrolled, which makes it several times
// faster than the general loop (it was a fifth of a two-conv CNN's step).
// Same tie and NaN rules as the general loop: scan order, first maximum
// wins, a NaN is taken.
// Without kArgmax (inference: no backward follows) the positions are not
// kept; writing them cost about as much as the int8 convolutions around the
// pools in a profile of int8 inference.
template <bool kArgmax>
void max_pool_2x2(const PoolGeom& g, const float* x, float* y, int32_t* am) {
  const int64_t W = g.W, OW = g.OW;
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    const float* r0 = x + 2 * oh * W;
    const float* r1 = r0 + W;
    float* yr = y + oh * OW;
    int32_t* ar = kArgmax ? am + oh * OW : nullptr;
    const int32_t base = static_cast<int32_t>(2 * oh * W);
    for (int64_t ow = 0; ow < OW; ++ow) {
      float m = r0[2 * ow];
      int32_t at = 0;
      auto take = [&](float v, int32_t off) {
        bool t = v > m || v != v;
        m = t ? v : m;
        at = t ? off : at;
      };
      take(r0[2 * ow + 1], 1);
      take(r1[2 * ow], static_cast<int32_t>(W));
      take(r1[2 * ow + 1], static_cast<int32_t>(W + 1));
      yr[ow] = m;
      if constexpr (kArgmax) ar[ow] = base + static_cast<int32_t>(2 * ow) + at;
    }
  }
}

// 2×2 windows at stride 2 without padding, none clipped at an edge (floor
// sizing): the fast paths' case.
bool is_2x2(const PoolGeom& g) {
  return g.KH == 2 && g.KW == 2 && g.SH == 2 && g.SW == 2 && g.PH == 0 && g.PW == 0 &&
         2 * g.OH <= g.H && 2 * g.OW <= g.W;
}

class MaxPool2D : public Layer {
 public:
  explicit MaxPool2D(const PoolGeom& g) : g_(g) {}

  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext& ctx) override {
    const int64_t planes = in[0]->dim(0) * g_.C;
    const float* x = in[0]->f32();
    float* y = out.f32();
    // (Not for a ceil_mode window clipped at the edge, which the unrolled
    // loop would read past.)
    if (is_2x2(g_) && !ctx.training) {
      const PoolGeom g = g_;
      have_argmax_ = false;
      parallel_for(planes, 4, [=](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p)
          max_pool_2x2<false>(g, x + p * g.HW(), y + p * g.OHW(), nullptr);
      });
      return;
    }
    forward_keeping_argmax(x, y, planes);
  }

  void forward_keeping_argmax(const float* x, float* y, int64_t planes) {
    have_argmax_ = true;
    argmax_.resize(static_cast<size_t>(planes * g_.OHW()));
    int32_t* am = argmax_.data();
    const PoolGeom g = g_;
    if (is_2x2(g)) {
      parallel_for(planes, 4, [=](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p)
          max_pool_2x2<true>(g, x + p * g.HW(), y + p * g.OHW(), am + p * g.OHW());
      });
      return;
    }
    parallel_for(planes, 4, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const float* xp = x + p * g_.HW();
        float* yp = y + p * g_.OHW();
        int32_t* ap = am + p * g_.OHW();
        for (int64_t oh = 0; oh < g_.OH; ++oh) {
          int64_t h0 = oh * g_.SH - g_.PH;
          int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h0 + g_.KH, g_.H);
          for (int64_t ow = 0; ow < g_.OW; ++ow) {
            int64_t w0 = ow * g_.SW - g_.PW;
            int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w0 + g_.KW, g_.W);
            int64_t best = hs * g_.W + ws;
            float m = xp[best];
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w) {
                float v = xp[h * g_.W + w];
                // First maximum wins and NaN propagates, as in PyTorch.
                if (v > m || std::isnan(v)) {
                  m = v;
                  best = h * g_.W + w;
                }
              }
            yp[oh * g_.OW + ow] = m;
            ap[oh * g_.OW + ow] = static_cast<int32_t>(best);
          }
        }
      }
    });
  }

  bool overwrites_din() const override { return true; }

  void backward(const std::vector<const Tensor*>& in, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext& ctx) override {
    if (!din[0]) return;
    const int64_t planes = in[0]->dim(0) * g_.C;
    if (!have_argmax_) {
      // A backward after an inference forward (none of the app's paths do
      // this, but a layer must not depend on it): find the maxima again.
      std::vector<float> y(static_cast<size_t>(planes * g_.OHW()));
      forward_keeping_argmax(in[0]->f32(), y.data(), planes);
    }
    const float* dy = dout.f32();
    float* dx = din[0]->f32();
    const int32_t* am = argmax_.data();
    const PoolGeom g = g_;
    const bool fresh = ctx.fresh(0);
    // 2×2 windows at stride 2 tiling the plane exactly: every input pixel
    // is in one window, so a fresh gradient is written outright (the
    // window's maximum gets dy, the other three 0) without zeroing first.
    if (fresh && is_2x2(g) && 2 * g.OH == g.H && 2 * g.OW == g.W) {
      parallel_for(planes, 4, [=](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) {
          float* dxp = dx + p * g.HW();
          const int32_t* ap = am + p * g.OHW();
          const float* dyp = dy + p * g.OHW();
          for (int64_t oh = 0; oh < g.OH; ++oh)
            for (int64_t ow = 0; ow < g.OW; ++ow) {
              const int64_t o = oh * g.OW + ow, at = 2 * oh * g.W + 2 * ow;
              dxp[at] = dxp[at + 1] = dxp[at + g.W] = dxp[at + g.W + 1] = 0.f;
              dxp[ap[o]] = dyp[o];
            }
        }
      });
      return;
    }
    parallel_for(planes, 4, [=](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        float* dxp = dx + p * g.HW();
        if (fresh) std::fill(dxp, dxp + g.HW(), 0.f);
        for (int64_t i = p * g.OHW(); i < (p + 1) * g.OHW(); ++i) dxp[am[i]] += dy[i];
      }
    });
  }

 private:
  PoolGeom g_;
  ScratchVec<int32_t> argmax_;  // index within the input plane, per output
  bool have_argmax_ = false;    // argmax_ is the last forward's
};

class AvgPool2D : public Layer {
 public:
  explicit AvgPool2D(const PoolGeom& g) : g_(g) {}

  // With floor sizing and padding <= kernel/2 every window lies inside the
  // padded input, so count_include_pad=True always divides by the full
  // window size.
  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const int64_t planes = in[0]->dim(0) * g_.C;
    const float* x = in[0]->f32();
    float* y = out.f32();
    const float inv = 1.0f / float(g_.KH * g_.KW);
    if (is_2x2(g_)) {
      // LeNet's pooling. The same sums in the same order as the general
      // loop below (bit for bit), as a loop GCC vectorises: the general
      // one, with its window bounds, ran 5x slower per element than
      // MaxPool2D's 2x2 path.
      const PoolGeom g = g_;
      parallel_for(planes, 4, [=](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p)
          for (int64_t oh = 0; oh < g.OH; ++oh) {
            const float* r0 = x + p * g.HW() + 2 * oh * g.W;
            const float* r1 = r0 + g.W;
            float* yr = y + p * g.OHW() + oh * g.OW;
            for (int64_t ow = 0; ow < g.OW; ++ow)
              yr[ow] = (((r0[2 * ow] + r0[2 * ow + 1]) + r1[2 * ow]) + r1[2 * ow + 1]) * inv;
          }
      });
      return;
    }
    parallel_for(planes, 4, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const float* xp = x + p * g_.HW();
        float* yp = y + p * g_.OHW();
        for (int64_t oh = 0; oh < g_.OH; ++oh) {
          int64_t h0 = oh * g_.SH - g_.PH;
          int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h0 + g_.KH, g_.H);
          for (int64_t ow = 0; ow < g_.OW; ++ow) {
            int64_t w0 = ow * g_.SW - g_.PW;
            int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w0 + g_.KW, g_.W);
            float s = 0.f;
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w) s += xp[h * g_.W + w];
            yp[oh * g_.OW + ow] = s * inv;
          }
        }
      }
    });
  }

  bool overwrites_din() const override { return true; }

  void backward(const std::vector<const Tensor*>& in, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext& ctx) override {
    if (!din[0]) return;
    const int64_t planes = in[0]->dim(0) * g_.C;
    const float* dy = dout.f32();
    float* dx = din[0]->f32();
    const float inv = 1.0f / float(g_.KH * g_.KW);
    const bool fresh = ctx.fresh(0);
    if (is_2x2(g_)) {
      const PoolGeom g = g_;
      // Windows tiling the plane exactly: a fresh gradient is written
      // outright; otherwise (an uncovered last row or column, or a
      // gradient other layers add to) it is accumulated.
      const bool write = fresh && 2 * g.OH == g.H && 2 * g.OW == g.W;
      parallel_for(planes, 4, [=](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) {
          float* dxp = dx + p * g.HW();
          if (fresh && !write) std::fill(dxp, dxp + g.HW(), 0.f);
          for (int64_t oh = 0; oh < g.OH; ++oh) {
            float* r0 = dxp + 2 * oh * g.W;
            float* r1 = r0 + g.W;
            const float* dyr = dy + p * g.OHW() + oh * g.OW;
            for (int64_t ow = 0; ow < g.OW; ++ow) {
              const float v = dyr[ow] * inv;
              if (write) {
                r0[2 * ow] = r0[2 * ow + 1] = r1[2 * ow] = r1[2 * ow + 1] = v;
              } else {
                r0[2 * ow] += v;
                r0[2 * ow + 1] += v;
                r1[2 * ow] += v;
                r1[2 * ow + 1] += v;
              }
            }
          }
        }
      });
      return;
    }
    parallel_for(planes, 4, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        float* dxp = dx + p * g_.HW();
        if (fresh) std::fill(dxp, dxp + g_.HW(), 0.f);
        const float* dyp = dy + p * g_.OHW();
        for (int64_t oh = 0; oh < g_.OH; ++oh) {
          int64_t h0 = oh * g_.SH - g_.PH;
          int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h0 + g_.KH, g_.H);
          for (int64_t ow = 0; ow < g_.OW; ++ow) {
            int64_t w0 = ow * g_.SW - g_.PW;
            int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w0 + g_.KW, g_.W);
            float v = dyp[oh * g_.OW + ow] * inv;
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w) dxp[h * g_.W + w] += v;
          }
        }
      }
    });
  }

 private:
  PoolGeom g_;
};

class GlobalAvgPool2D : public Layer {
 public:
  explicit GlobalAvgPool2D(int64_t hw) : hw_(hw) {}

  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const float* x = in[0]->f32();
    float* y = out.f32();
    const int64_t hw = hw_;
    const float inv = 1.0f / float(hw);
    parallel_for(out.numel(), 16, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const float* xp = x + p * hw;
        float s = 0.f;
        for (int64_t i = 0; i < hw; ++i) s += xp[i];
        y[p] = s * inv;
      }
    });
  }

  void backward(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext&) override {
    if (!din[0]) return;
    const float* dy = dout.f32();
    float* dx = din[0]->f32();
    const int64_t hw = hw_;
    const float inv = 1.0f / float(hw);
    parallel_for(dout.numel(), 16, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        float v = dy[p] * inv;
        float* dxp = dx + p * hw;
        for (int64_t i = 0; i < hw; ++i) dxp[i] += v;
      }
    });
  }

 private:
  int64_t hw_;
};

std::vector<AttrSpec> window_attrs() {
  auto pair = [](int64_t a, int64_t b) { return AttrValue(std::vector<int64_t>{a, b}); };
  return {
      {"kernel", AttrType::IntPair, pair(2, 2), 1, 64, {}, "Window height×width"},
      {"stride", AttrType::IntPair, pair(2, 2), 1, 64, {}, "Step between windows, rows×columns"},
      {"padding",
       AttrType::IntPair,
       pair(0, 0),
       0,
       32,
       {},
       "Padding on each side, rows×columns (at most half the kernel)"},
  };
}

template <typename L>
LayerDescriptor window_pool(const std::string& type, const std::string& help) {
  LayerDescriptor d;
  d.type = type;
  d.category = "Pooling";
  d.help = help;
  d.attrs = window_attrs();
  d.num_inputs = [](const Attrs&) { return 1; };
  d.infer = [type](const std::vector<Shape>& in, const Attrs& a) {
    PoolGeom g = pool_geom(in, LayerRegistry::instance().get(type).with_defaults(a));
    return Shape{g.C, g.OH, g.OW};
  };
  // One comparison (max) or addition (average) per window element.
  d.cost = [type](const std::vector<Shape>& in, const Shape&, const Attrs& a) {
    PoolGeom g = pool_geom(in, LayerRegistry::instance().get(type).with_defaults(a));
    return Cost{0, checked_mul(g.C * g.OHW(), g.KH * g.KW, "the window operations")};
  };
  d.create = [type](const Attrs& a, const std::vector<Shape>& in, const Shape&) {
    return std::unique_ptr<Layer>(
        new L(pool_geom(in, LayerRegistry::instance().get(type).with_defaults(a))));
  };
  return d;
}

}  // namespace

void register_pool_layers(LayerRegistry& r) {
  LayerDescriptor mp =
      window_pool<MaxPool2D>("MaxPool2D", "Maximum over each window (like torch.nn.MaxPool2d)");
  mp.attrs.push_back({"ceil_mode",
                      AttrType::Bool,
                      false,
                      -1e18,
                      1e18,
                      {},
                      "Round the output size up: a last, partial window at the bottom/right "
                      "edge (as PyTorch's ceil_mode)"});
  r.add(std::move(mp));
  r.add(window_pool<AvgPool2D>(
      "AvgPool2D", "Average over each window, padding counted as zeros (like torch.nn.AvgPool2d)"));

  LayerDescriptor g;
  g.type = "GlobalAvgPool2D";
  g.category = "Pooling";
  g.help = "Average of each channel over height×width: channels×H×W becomes channels";
  g.num_inputs = [](const Attrs&) { return 1; };
  g.infer = [](const std::vector<Shape>& in, const Attrs&) {
    require_chw(in);
    return Shape{in[0][0]};
  };
  g.cost = [](const std::vector<Shape>& in, const Shape&, const Attrs&) {
    return Cost{0, in[0].numel()};
  };
  g.create = [](const Attrs&, const std::vector<Shape>& in, const Shape&) {
    return std::unique_ptr<Layer>(new GlobalAvgPool2D(in[0][1] * in[0][2]));
  };
  r.add(std::move(g));
}

}  // namespace dc
