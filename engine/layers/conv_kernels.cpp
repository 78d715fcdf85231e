// Conv2D's geometry (the output size, "same" padding, the checks that
// refuse a zero stride or a size past 64 bits) and the im2col/col2im
// unfolding its GEMM path runs on, one sample at a time; conv.cpp holds the
// layer and its direct depthwise path.
#include <deepcanvas/checked.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/parallel.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "conv_dnnl.h"
#include "conv_kernels.h"

namespace dc {

namespace {

std::string num(int64_t v) {
  return std::to_string(v);
}
std::string pair_str(int64_t a, int64_t b) {
  return num(a) + "×" + num(b);
}

}  // namespace

void same_padding(int64_t in, int64_t k, int64_t s, int64_t d, int64_t& before, int64_t& after,
                  std::string_view axis) {
  // The unpadded window refuses a zero stride or dilation (a model's
  // attributes come here before any range check) and gives the extent.
  const ConvWindow w = conv_window(in, k, s, d, 0, 0, axis);
  const int64_t out = in == 0 ? 0 : (in - 1) / s + 1;  // ceil(in / s) without in + s overflowing
  const int64_t span =
      checked_add(checked_mul(out - 1, s, "same padding"), w.extent, "same padding");
  const int64_t total = std::max<int64_t>(0, span - in);
  before = total / 2;
  after = total - before;
}

namespace conv_kernels {

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
  if (g.OC < 1 || g.G < 1)
    throw ShapeError("filters and groups must be at least 1 but are " + num(g.OC) + " and " +
                     num(g.G));
  if (g.C % g.G != 0)
    throw ShapeError("the input has " + num(g.C) +
                     " channels, which is not divisible by groups = " + num(g.G) +
                     "; set groups to a divisor of " + num(g.C));
  if (g.OC % g.G != 0)
    throw ShapeError("filters = " + num(g.OC) + " is not divisible by groups = " + num(g.G) +
                     "; use a multiple of " + num(g.G) + " filters");
  const std::string& mode = a.s("padding_mode");
  if (mode == "same") {
    same_padding(g.H, g.KH, g.SH, g.DH, g.PT, g.PB, "height");
    same_padding(g.W, g.KW, g.SW, g.DW, g.PL, g.PR, "width");
  } else if (mode == "explicit") {
    const auto& p = a.ints("padding");
    g.PT = g.PB = p[0];
    g.PL = g.PR = p[1];
  } else if (mode != "valid") {
    throw ShapeError("unknown padding_mode '" + mode + "'; use explicit, same or valid");
  }
  const ConvWindow wh = conv_window(g.H, g.KH, g.SH, g.DH, g.PT, g.PB, "height");
  const ConvWindow ww = conv_window(g.W, g.KW, g.SW, g.DW, g.PL, g.PR, "width");
  const int64_t eh = wh.extent, ew = ww.extent, ph = wh.padded, pw = ww.padded;
  if (wh.out == 0 || ww.out == 0) {
    std::string win = pair_str(g.KH, g.KW) + " kernel";
    if (g.DH != 1 || g.DW != 1) win += " with dilation " + pair_str(g.DH, g.DW);
    throw ShapeError("the " + win + " spans " + pair_str(eh, ew) + ", larger than the " +
                     pair_str(g.H, g.W) + " input padded to " + pair_str(ph, pw) +
                     ", so the output would be empty; use a smaller kernel or dilation, add "
                     "padding, or remove a pooling layer before it");
  }
  g.OH = wh.out;
  g.OW = ww.out;
  // The weights and the columns a sample unfolds into are sized from these:
  // counts that pass 64 bits are refused here, not wrapped.
  checked_product(std::vector<int64_t>{g.OC, g.Cg(), g.KH, g.KW},
                  "the weight (filters×channels per group×kernel)");
  if (g.kernel() == ConvKernel::Im2col)
    checked_product(std::vector<int64_t>{g.C, g.KH, g.KW, g.OH, g.OW},
                    "the column buffer (channels×kernel×output)");
  return g;
}

namespace {

// Valid output columns [lo, hi) for kernel column offset `off` (input column
// = ow*stride + off): outside it the window reads padding.
void valid_range(int64_t off, int64_t stride, int64_t in, int64_t out, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  hi = in - 1 - off < 0 ? 0 : (in - 1 - off) / stride + 1;
  lo = std::min(lo, out);
  hi = std::max(lo, std::min(hi, out));
}

// Stride 1, no dilation, the output as large as the padded input allows.
bool unit_stride(const ConvGeom& g) {
  return g.SH == 1 && g.SW == 1 && g.DH == 1 && g.DW == 1 && g.OH == g.H + g.PT + g.PB - g.KH + 1 &&
         g.OW == g.W + g.PL + g.PR - g.KW + 1;
}

// Stride 1, no dilation (3x3 "same" and the like): each channel is copied
// once into a zero-bordered plane, and every column row is then plain
// copies of OW values from it, with no bounds to work out and no zeros to
// write per row. The borders stay zero from channel to channel.
void im2col_unit_stride(const ConvGeom& g, const float* x, float* col, int64_t ld) {
  const int64_t Wp = g.W + g.PL + g.PR, Hp = g.H + g.PT + g.PB, OW = g.OW;
  thread_local std::vector<float> pad;
  pad.assign(size_t(Hp * Wp), 0.f);
  for (int64_t c = 0; c < g.C; ++c) {
    const float* xc = x + c * g.HW();
    for (int64_t h = 0; h < g.H; ++h)
      std::copy_n(xc + h * g.W, g.W, pad.data() + (h + g.PT) * Wp + g.PL);
    for (int64_t ki = 0; ki < g.KH; ++ki)
      for (int64_t kj = 0; kj < g.KW; ++kj) {
        float* row = col + ((c * g.KH + ki) * g.KW + kj) * ld;
        const float* src = pad.data() + ki * Wp + kj;
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          const float* s = src + oh * Wp;
          float* r = row + oh * OW;
          for (int64_t ow = 0; ow < OW; ++ow) r[ow] = s[ow];
        }
      }
  }
}

}  // namespace

// Unfolds one sample [C, H, W] into col [K, OH*OW] (row stride ld).
void im2col(const ConvGeom& g, const float* x, float* col, int64_t ld) {
  const int64_t OW = g.OW;
  if (unit_stride(g)) {
    im2col_unit_stride(g, x, col, ld);
    return;
  }
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

namespace {

// col2im's counterpart of im2col_unit_stride: each channel's rows are
// added into a zero-bordered plane with no bounds to work out, and the
// plane's interior is then added onto dx.
void col2im_unit_stride(const ConvGeom& g, const float* col, float* dx, int64_t ld) {
  const int64_t Wp = g.W + g.PL + g.PR, Hp = g.H + g.PT + g.PB, OW = g.OW;
  thread_local std::vector<float> pad;
  pad.resize(size_t(Hp * Wp));
  for (int64_t c = 0; c < g.C; ++c) {
    std::fill(pad.begin(), pad.end(), 0.f);
    for (int64_t ki = 0; ki < g.KH; ++ki)
      for (int64_t kj = 0; kj < g.KW; ++kj) {
        const float* row = col + ((c * g.KH + ki) * g.KW + kj) * ld;
        float* dst = pad.data() + ki * Wp + kj;
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          float* d = dst + oh * Wp;
          const float* r = row + oh * OW;
          for (int64_t ow = 0; ow < OW; ++ow) d[ow] += r[ow];
        }
      }
    float* dc_ = dx + c * g.HW();
    for (int64_t h = 0; h < g.H; ++h) {
      const float* p = pad.data() + (h + g.PT) * Wp + g.PL;
      float* d = dc_ + h * g.W;
      for (int64_t w = 0; w < g.W; ++w) d[w] += p[w];
    }
  }
}

}  // namespace

// Folds col [K, OH*OW] back onto one sample's input gradient, accumulating.
void col2im(const ConvGeom& g, const float* col, float* dx, int64_t ld) {
  const int64_t OW = g.OW;
  if (unit_stride(g)) {
    col2im_unit_stride(g, col, dx, ld);
    return;
  }
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

}  // namespace conv_kernels

ConvKernel conv_cpu_kernel(const std::vector<Shape>& in, const Attrs& a) {
  const conv_kernels::ConvGeom g = conv_kernels::conv_geom(in, a);
  return conv_kernels::DnnlConv::takes(g) ? ConvKernel::OneDnn : g.kernel();
}

bool conv_onednn_bytes(const std::vector<Shape>& in, const Attrs& a, int64_t n, bool relu,
                       int threads, int64_t& kept, int64_t& workspace, int64_t* forward_only) {
  return conv_kernels::DnnlConv::bytes(conv_kernels::conv_geom(in, a), n, relu, threads, kept,
                                       workspace, nullptr, forward_only);
}

bool conv_is_pointwise(const std::vector<Shape>& in, const Attrs& a) {
  return conv_kernels::conv_geom(in, a).pointwise();
}

bool conv_is_depthwise(const std::vector<Shape>& in, const Attrs& a) {
  return conv_kernels::conv_geom(in, a).depthwise();
}

bool conv_onednn_winograd(const std::vector<Shape>& in, const Attrs& a) {
  int64_t kept = 0, workspace = 0;
  bool winograd = false;
  return conv_kernels::DnnlConv::bytes(conv_kernels::conv_geom(in, a), 1, false, num_threads(),
                                       kept, workspace, &winograd) &&
         winograd;
}

}  // namespace dc
