// Conv2D with uneven 'same' padding (a stride on an even plane, or an even
// kernel: EfficientNet-Lite0's stem) on cuDNN, which pads both sides alike:
// cuda/conv.cpp convolves a zero-padded copy of the input
// (cuda/conv_layout.h's ConvPadCopy, cuda/pad.cu) with the symmetric rest.
//
// Host tests (run everywhere): the split into copy rows/columns and
// symmetric padding gives the engine's output size for a sweep of shapes,
// and a direct convolution of the padded copy (what cuDNN is asked for),
// with its input gradient cropped back, reproduces the CPU Conv2D layer's
// output and all its gradients.
//
// GPU tests (skip without a device): Input -> "pre" (a 1×1 convolution, so
// op's input gradient shows in pre's weight and bias gradients) -> "op",
// against the CPU plan: float32 (TF32 off) to 1e-5; bf16 and fp16 within
// the precision tests' 16-bit error, on the default path, the legacy API,
// channels last with the graph API required and the GEMM weight gradient;
// a depthwise layer kept on cuDNN (DC_CUDA_DEPTHWISE=cudnn); and a frozen
// op, first behind the input (no backward reaches it) and then behind a
// trainable layer (input gradient, no weight gradient); training steps
// replayed from a captured CUDA graph against eager ones.
#include <deepcanvas/advisor/memory_model.h>
#include <deepcanvas/device.h>
#include <deepcanvas/enum_names.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../../cuda/conv_layout.h"
#include "cuda_test_util.h"

namespace dc {
namespace {

using test::A;
using test::pair;
using test::rel_err;

struct PadCase {
  std::string name;
  int64_t C, H, W, OC, kh, kw, sh, sw, groups;
  bool bias;
  int64_t N;
};

// Every case needs more padding at the bottom or right than at the top or
// left in at least one direction (checked by the host test).
std::vector<PadCase> cases() {
  return {
      {"3x3 stride 2 on 8x8", 8, 8, 8, 16, 3, 3, 2, 2, 1, true, 3},
      {"3x3 stride 2 on 9x10 (stem-like, 3 channels)", 3, 9, 10, 8, 3, 3, 2, 2, 1, true, 4},
      {"5x5 stride 2 on 12x10", 4, 12, 10, 6, 5, 5, 2, 2, 1, true, 3},
      {"2x2 stride 1 on 7x6", 5, 7, 6, 4, 2, 2, 1, 1, 1, false, 3},
      {"3x3 stride 2, 4 groups", 8, 10, 10, 12, 3, 3, 2, 2, 4, true, 3},
  };
}

Attrs conv_attrs(const PadCase& c) {
  return A({{"filters", c.OC},
            {"kernel", pair(c.kh, c.kw)},
            {"stride", pair(c.sh, c.sw)},
            {"groups", c.groups},
            {"bias", c.bias},
            {"padding_mode", std::string("same")}});
}

cuda::ConvPadCopy copy_of(const PadCase& c) {
  int64_t pt, pb, pl, pr;
  same_padding(c.H, c.kh, c.sh, 1, pt, pb);
  same_padding(c.W, c.kw, c.sw, 1, pl, pr);
  return cuda::conv_pad_copy(c.H, c.W, pt, pb, pl, pr);
}

// ---------------------------------------------------------------------------
// Host.

TEST(ConvPaddingHost, CopyAndSymmetricRestGiveTheEngineOutputSize) {
  register_builtin_layers();
  const LayerDescriptor& desc = LayerRegistry::instance().get("Conv2D");
  for (int64_t in : {1, 2, 5, 6, 7, 8, 9, 10, 16, 17, 224})
    for (int64_t k : {1, 2, 3, 4, 5, 7})
      for (int64_t s : {1, 2, 3})
        for (int64_t d : {1, 2}) {
          SCOPED_TRACE(std::to_string(in) + " " + std::to_string(k) + " " + std::to_string(s) +
                       " " + std::to_string(d));
          int64_t before, after;
          same_padding(in, k, s, d, before, after);
          // A plane of in × 5 with this padding in the rows and the same
          // padding in the columns.
          const cuda::ConvPadCopy p = cuda::conv_pad_copy(in, 5, before, after, before, after);
          // The engine's rule puts the odd row at the bottom: the copy adds
          // only there, one row at most.
          EXPECT_EQ(p.top, 0);
          EXPECT_EQ(p.left, 0);
          EXPECT_LE(p.bottom, 1);
          EXPECT_EQ(p.bottom, after - before);
          EXPECT_EQ(p.right, p.bottom);
          EXPECT_EQ(p.needed(), before != after);
          EXPECT_EQ(p.total(), 2 * (before + after));
          EXPECT_EQ(p.pad_h, before);
          EXPECT_EQ(p.h, in + p.bottom);
          EXPECT_EQ(p.w, 5 + p.right);
          // cuDNN's output size on the copy is the layer's.
          const Attrs a = desc.with_defaults(A({{"filters", int64_t(1)},
                                                {"kernel", pair(k, k)},
                                                {"stride", pair(s, s)},
                                                {"dilation", pair(d, d)},
                                                {"padding_mode", std::string("same")}}));
          const Shape out = desc.infer({Shape{1, in, in}}, a);
          const int64_t extent = d * (k - 1) + 1;
          EXPECT_EQ((p.h + 2 * p.pad_h - extent) / s + 1, out[1]);
        }
  // Either side may need more in general (explicit pads handed on by an
  // importer): the copy adds what the symmetric part does not cover.
  const cuda::ConvPadCopy q = cuda::conv_pad_copy(6, 7, 2, 1, 0, 3);
  EXPECT_EQ(q.pad_h, 1);
  EXPECT_EQ(q.top, 1);
  EXPECT_EQ(q.bottom, 0);
  EXPECT_EQ(q.pad_w, 0);
  EXPECT_EQ(q.left, 0);
  EXPECT_EQ(q.right, 3);
  EXPECT_EQ(q.h, 7);
  EXPECT_EQ(q.w, 10);
  EXPECT_EQ(q.total(), 2 + 1 + 0 + 3);
  EXPECT_FALSE(cuda::conv_pad_copy(6, 7, 1, 1, 2, 2).needed());
}

struct Geometry {
  int64_t N, C, H, W, OC, KH, KW, SH, SW, G, PH, PW, OH, OW;
};

int64_t at4(int64_t a, int64_t b, int64_t c, int64_t d, int64_t B, int64_t Cc, int64_t D) {
  return ((a * B + b) * Cc + c) * D + d;
}

// A direct cross-correlation with symmetric padding PH, PW (what cuDNN
// computes): y = conv(x, w) + b, and its gradients accumulated into dx, dw.
void direct(const Geometry& g, const float* x, const float* w, const float* b, const float* dy,
            float* y, float* dx, float* dw) {
  const int64_t cg = g.C / g.G, og = g.OC / g.G;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t oc = 0; oc < g.OC; ++oc)
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          const int64_t yi = at4(n, oc, oh, ow, g.OC, g.OH, g.OW);
          double acc = b ? b[oc] : 0.0;
          for (int64_t ci = 0; ci < cg; ++ci) {
            const int64_t c = oc / og * cg + ci;
            for (int64_t r = 0; r < g.KH; ++r)
              for (int64_t s = 0; s < g.KW; ++s) {
                const int64_t ih = oh * g.SH - g.PH + r, iw = ow * g.SW - g.PW + s;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                const int64_t xi = at4(n, c, ih, iw, g.C, g.H, g.W);
                const int64_t wi = at4(oc, ci, r, s, cg, g.KH, g.KW);
                acc += double(x[xi]) * w[wi];
                dx[xi] += dy[yi] * w[wi];
                dw[wi] += dy[yi] * x[xi];
              }
          }
          y[yi] = float(acc);
        }
}

// The op's arithmetic, emulated: the input padded into the copy, the
// direct convolution of the copy with the symmetric rest, the copy's input
// gradient cropped back; against the CPU layer.
TEST(ConvPaddingHost, ConvolvingThePaddedCopyMatchesTheCpuLayer) {
  register_builtin_layers();
  const LayerDescriptor& desc = LayerRegistry::instance().get("Conv2D");
  for (const PadCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const cuda::ConvPadCopy p = copy_of(c);
    ASSERT_TRUE(p.needed()) << "not a case of uneven padding";
    const Attrs a = desc.with_defaults(conv_attrs(c));
    const Shape in{c.C, c.H, c.W};
    const Shape out = desc.infer({in}, a);
    std::unique_ptr<Layer> layer = desc.create(a, {in}, out);
    Rng rng(3);
    layer->init(rng);
    std::vector<Param*> ps = layer->params();
    ps[0]->value.copy_from(test::uniform_tensor(ps[0]->value.shape(), 21, -1.f, 1.f));
    if (c.bias) ps[1]->value.copy_from(test::uniform_tensor(ps[1]->value.shape(), 22, -1.f, 1.f));
    for (Param* q : ps) {
      if (q->grad.defined())
        q->grad.zero();
      else
        q->grad = Tensor(q->value.shape());
    }
    const Tensor x = test::uniform_tensor(in.with_batch(c.N), 11, -1.f, 1.f);
    const Tensor dy = test::uniform_tensor(out.with_batch(c.N), 13, -1.f, 1.f);
    RunContext ctx{true, nullptr};
    Tensor y(out.with_batch(c.N)), dx(in.with_batch(c.N));
    layer->forward({&x}, y, ctx);
    std::vector<Tensor*> din{&dx};
    layer->backward({&x}, y, dy, din, ctx);

    const Geometry g{c.N,  c.C,  c.H,      c.W,     c.OC,    c.kh,   c.kw,
                     c.sh, c.sw, c.groups, p.pad_h, p.pad_w, out[1], out[2]};
    Geometry gp = g;
    gp.H = p.h;
    gp.W = p.w;
    const int64_t planes = c.N * c.C;
    std::vector<float> xp(size_t(planes * p.h * p.w), 0.f), dxp(xp.size(), 0.f);
    for (int64_t pl = 0; pl < planes; ++pl)
      for (int64_t r = 0; r < c.H; ++r)
        for (int64_t q = 0; q < c.W; ++q)
          xp[size_t((pl * p.h + r + p.top) * p.w + q + p.left)] = x.f32()[(pl * c.H + r) * c.W + q];
    Tensor ye(out.with_batch(c.N)), dxe(in.with_batch(c.N)), dwe(ps[0]->value.shape());
    direct(gp, xp.data(), ps[0]->value.f32(), c.bias ? ps[1]->value.f32() : nullptr, dy.f32(),
           ye.f32(), dxp.data(), dwe.f32());
    for (int64_t pl = 0; pl < planes; ++pl)
      for (int64_t r = 0; r < c.H; ++r)
        for (int64_t q = 0; q < c.W; ++q)
          dxe.f32()[(pl * c.H + r) * c.W + q] +=
              dxp[size_t((pl * p.h + r + p.top) * p.w + q + p.left)];
    EXPECT_LE(rel_err(ye, y), 1e-5) << "forward";
    EXPECT_LE(rel_err(dxe, dx), 1e-5) << "input gradient";
    EXPECT_LE(rel_err(dwe, ps[0]->grad), 1e-5) << "weight gradient";
    // cuDNN's symmetric padding alone (the top/left amount on both sides)
    // would give a smaller output: the case needs the copy.
    const int64_t oh_sym = (c.H + 2 * p.pad_h - c.kh) / c.sh + 1;
    const int64_t ow_sym = (c.W + 2 * p.pad_w - c.kw) / c.sw + 1;
    EXPECT_TRUE(oh_sym < out[1] || ow_sym < out[2]);
  }
}

// The advisor's CUDA prediction counts the padded copy (float32, reused for
// the input gradient) and the 16-bit input copy at the copy's size: the
// same stem with explicit padding 1 (the same output, no copy) predicts
// exactly that much less.
TEST(ConvPaddingHost, AdvisorCountsThePaddedCopy) {
  register_builtin_layers();
  auto stem = [](bool same) {
    Graph g;
    NodeId in = g.add_node("Input", "in", A({{"shape", std::vector<int64_t>{3, 9, 10}}}));
    Attrs a = A({{"filters", int64_t(8)}, {"kernel", pair(3, 3)}, {"stride", pair(2, 2)}});
    if (same)
      a.set("padding_mode", std::string("same"));
    else
      a.set("padding", pair(1, 1));
    NodeId conv = g.add_node("Conv2D", "stem", std::move(a));
    NodeId gap = g.add_node("GlobalAvgPool2D", "gap");
    NodeId fc = g.add_node("Dense", "fc", A({{"units", int64_t(4)}}));
    g.connect(in, conv);
    g.connect(conv, gap);
    g.connect(gap, fc);
    return g;
  };
  const int64_t n = 16, plain = 3 * 9 * 10, copy = 3 * 9 * 11;  // one more column
  for (Precision prec : {Precision::Fp32, Precision::Bf16}) {
    advisor::MemoryOptions o;
    o.batch = n;
    o.backend = advisor::Backend::Cuda;
    o.precision = prec;
    const advisor::MemoryPrediction same = advisor::predict_memory(stem(true), o);
    const advisor::MemoryPrediction expl = advisor::predict_memory(stem(false), o);
    int64_t want = advisor::cuda_block_bytes(4 * n * copy);
    if (prec != Precision::Fp32)
      want += advisor::cuda_block_bytes(2 * n * copy) - advisor::cuda_block_bytes(2 * n * plain);
    EXPECT_EQ(same.overhead - expl.overhead, want) << enum_name(prec);
    EXPECT_EQ(same.workspace, expl.workspace) << enum_name(prec);
  }
}

// ---------------------------------------------------------------------------
// On the GPU.

Graph pad_graph(const PadCase& c, bool frozen_op = false, bool with_pre = true) {
  register_builtin_layers();
  Graph g;
  NodeId prev = g.add_node("Input", "input", A({{"shape", std::vector<int64_t>{c.C, c.H, c.W}}}));
  if (with_pre) {
    // 1×1: its weight and bias gradients are sums of op's input gradient.
    NodeId pre = g.add_node("Conv2D", "pre", A({{"filters", c.C}, {"kernel", pair(1, 1)}}));
    g.connect(prev, pre);
    prev = pre;
  }
  NodeId op = g.add_node("Conv2D", "op", conv_attrs(c));
  g.connect(prev, op);
  if (!with_pre) {
    // Something after a frozen op that trains, so a step has work to do.
    NodeId post =
        g.add_node("Conv2D", "post", A({{"filters", int64_t(4)}, {"kernel", pair(1, 1)}}));
    g.connect(op, post);
  }
  if (frozen_op) g.set_trainable(op, false);
  return g;
}

using Grads = std::vector<std::pair<std::string, Tensor>>;

// The trainable parameters' gradients of nodes that train (a frozen node's
// stay untouched on both sides).
Grads grads_of(Plan& host, const std::string& frozen_prefix) {
  Grads r;
  for (auto& p : host.params())
    if (p.param->trainable && (frozen_prefix.empty() || p.name.rfind(frozen_prefix, 0) != 0))
      r.emplace_back(p.name, p.param->grad.clone());
  return r;
}

struct Run {
  Tensor out;
  Grads grads;
};

Run cpu_run(Plan& host, const Tensor& x, const Tensor& dout, const std::string& frozen_prefix) {
  RunContext ctx{true, nullptr};
  Run r;
  r.out = host.forward(x, ctx).clone();
  host.zero_grad();
  host.backward(dout, ctx);
  r.grads = grads_of(host, frozen_prefix);
  return r;
}

Run device_run(DeviceBackend* be, const Graph& g, Plan& host, const Tensor& x, const Tensor& dout,
               const std::string& prec, const std::string& frozen_prefix) {
  DevicePlanOptions o;
  o.max_batch = x.shape()[0];
  o.precision = *enum_from_name<Precision>(prec);
  auto dev = be->create_plan(g, host, o);
  dev->upload_params();
  Run r;
  r.out = Tensor(host.output_shape().with_batch(x.shape()[0]));
  dev->zero_grad();
  dev->forward(x, r.out, true, 1);
  dev->backward(dout);
  dev->download_grads();
  r.grads = grads_of(host, frozen_prefix);
  return r;
}

// tol for the output and op's gradients, pre_tol for pre's (op's input
// gradient summed).
void expect_close(const Run& got, const Run& want, double tol, double pre_tol,
                  const std::string& what) {
  EXPECT_LE(rel_err(got.out, want.out), tol) << what << ": forward output";
  ASSERT_EQ(got.grads.size(), want.grads.size()) << what;
  for (size_t i = 0; i < want.grads.size(); ++i) {
    ASSERT_EQ(got.grads[i].first, want.grads[i].first) << what;
    const double t = want.grads[i].first.rfind("pre.", 0) == 0 ? pre_tol : tol;
    EXPECT_LE(rel_err(got.grads[i].second, want.grads[i].second), t)
        << what << ": gradient of " << want.grads[i].first;
  }
}

// One case on the device in `prec` against the CPU (frozen_prefix: the
// node whose gradients are left out). Throws what the device throws.
void check(DeviceBackend* be, const Graph& g, const PadCase& c, const std::string& prec, double tol,
           double pre_tol, const std::string& what, const std::string& frozen_prefix = "") {
  SCOPED_TRACE(c.name + ", " + what + ", " + prec);
  Plan host(g, c.N);
  host.init_params(7);
  const Tensor x = test::uniform_tensor(Shape{c.C, c.H, c.W}.with_batch(c.N), 11, -1.f, 1.f);
  const Tensor dout = test::uniform_tensor(host.output_shape().with_batch(c.N), 13, -1.f, 1.f);
  const Run cpu = cpu_run(host, x, dout, frozen_prefix);
  ASSERT_FALSE(cpu.grads.empty());
  const Run dev = device_run(be, g, host, x, dout, prec, frozen_prefix);
  expect_close(dev, cpu, tol, pre_tol, what);
  if (prec != "fp32") {
    EXPECT_GT(rel_err(dev.out, cpu.out), 1e-6) << "no 16-bit rounding: was " << prec << " used?";
  }
}

TEST(CudaConvPadding, Fp32MatchesTheCpuLayer) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  const test::ScopedEnv tf32("DC_CUDA_TF32", "0");
  for (const PadCase& c : cases())
    EXPECT_NO_THROW(check(be, pad_graph(c), c, "fp32", 1e-5, 1e-5, "default"));
  // A depthwise layer kept on cuDNN goes through the padded copy too.
  const PadCase dw{"depthwise 3x3 stride 2 on 8x8, cuDNN", 4, 8, 8, 4, 3, 3, 2, 2, 4, true, 3};
  const test::ScopedEnv cudnn("DC_CUDA_DEPTHWISE", "cudnn");
  EXPECT_NO_THROW(check(be, pad_graph(dw), dw, "fp32", 1e-5, 1e-5, "DC_CUDA_DEPTHWISE=cudnn"));
}

// bf16 and fp16 within the precision tests' bounds: 2e-2, and for pre's
// gradients (sums over op's 16-bit input gradient that partly cancel)
// bf16's 8e-2.
void reduced(const std::string& prec) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  using test::ScopedEnv;
  const double pre_tol = prec == "bf16" ? 8e-2 : 2e-2;
  for (const PadCase& c : cases()) {
    const Graph g = pad_graph(c);
    EXPECT_NO_THROW(check(be, g, c, prec, 2e-2, pre_tol, "default"));
    // Grouped 16-bit convolutions are covered on the graph API only, as in
    // the precision tests: the legacy API need not have an engine for them.
    if (c.groups != 1) continue;
    const ScopedEnv legacy("DC_CUDA_CONV", "legacy");
    EXPECT_NO_THROW(check(be, g, c, prec, 2e-2, pre_tol, "legacy API"));
  }
  // 8 -> 16 channels: channels last (NHWC copies of the padded plane) with
  // the graph API required, NCHW on it, the legacy API channels last, and
  // the weight gradient as a GEMM over the padded copy's columns.
  const PadCase c = cases()[0];
  const Graph g = pad_graph(c);
  {
    const ScopedEnv graph("DC_CUDA_CONV", "graph");
    EXPECT_NO_THROW(check(be, g, c, prec, 2e-2, pre_tol, "graph API channels last"));
    {
      const ScopedEnv nchw("DC_CUDA_NHWC", "0");
      EXPECT_NO_THROW(check(be, g, c, prec, 2e-2, pre_tol, "graph API NCHW"));
    }
    const ScopedEnv gemm("DC_CUDA_WGRAD", "gemm");
    EXPECT_NO_THROW(check(be, g, c, prec, 2e-2, pre_tol, "GEMM weight gradient"));
  }
  const ScopedEnv legacy("DC_CUDA_CONV", "legacy");
  const ScopedEnv nhwc("DC_CUDA_NHWC", "1");
  EXPECT_NO_THROW(check(be, g, c, prec, 2e-2, pre_tol, "legacy API channels last"));
}

TEST(CudaConvPadding, Bf16MatchesTheCpuLayer) {
  reduced("bf16");
}
TEST(CudaConvPadding, Fp16MatchesTheCpuLayer) {
  reduced("fp16");
}

// A frozen op: right behind the input (backward never reaches it: forward
// only, no input-gradient scratch, as Lite0's frozen stem) and behind a
// trainable layer (the input gradient through the copy, no weight
// gradient). Neither may throw; the trainable layers' gradients match.
TEST(CudaConvPadding, FrozenLayerRunsInEveryPrecision) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  const test::ScopedEnv tf32("DC_CUDA_TF32", "0");
  const PadCase c = cases()[1];  // the stem-like one
  for (const std::string& prec : {std::string("fp32"), std::string("bf16"), std::string("fp16")}) {
    const double tol = prec == "fp32" ? 1e-5 : 2e-2;
    const double pre_tol = prec == "fp32" ? 1e-5 : prec == "bf16" ? 8e-2 : 2e-2;
    EXPECT_NO_THROW(
        check(be, pad_graph(c, true, false), c, prec, tol, tol, "frozen behind the input", "op."));
    EXPECT_NO_THROW(check(be, pad_graph(c, true, true), c, prec, tol, pre_tol,
                          "frozen behind a trainable layer", "op."));
  }
}

// Training steps replayed from a captured CUDA graph against the same steps
// run eagerly (DC_CUDA_GRAPHS=0): a stem-like convolution and a grouped one,
// both with uneven padding, so the pad and crop kernels are in the graph,
// and a last partial batch (another batch size, the copy already larger).
// Errors from a stale pointer or a host value baked into the graph are of
// order one; 1e-3 leaves room for cuDNN timing its algorithms again in the
// second plan.
TEST(CudaConvPadding, ReplayedGraphStepsMatchEagerSteps) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  const test::ScopedEnv tf32("DC_CUDA_TF32", "0");
  register_builtin_layers();
  Graph g;
  NodeId in = g.add_node("Input", "input", A({{"shape", std::vector<int64_t>{3, 12, 12}}}));
  NodeId stem = g.add_node("Conv2D", "stem",
                           A({{"filters", int64_t(8)},
                              {"kernel", pair(3, 3)},
                              {"stride", pair(2, 2)},
                              {"padding_mode", std::string("same")}}));
  NodeId r = g.add_node("ReLU", "relu");
  NodeId grouped = g.add_node("Conv2D", "grouped",
                              A({{"filters", int64_t(8)},
                                 {"kernel", pair(3, 3)},
                                 {"stride", pair(2, 2)},
                                 {"groups", int64_t(2)},
                                 {"padding_mode", std::string("same")}}));
  NodeId gap = g.add_node("GlobalAvgPool2D", "gap");
  NodeId fc = g.add_node("Dense", "fc", A({{"units", int64_t(10)}}));
  g.connect(in, stem);
  g.connect(stem, r);
  g.connect(r, grouped);
  g.connect(grouped, gap);
  g.connect(gap, fc);
  const int64_t B = 16, S = 100;
  Dataset ds;
  ds.sample_shape = Shape{3, 12, 12};
  Rng rng(2);
  for (int64_t i = 0; i < S * 432; ++i) ds.pixels.push_back(uint8_t(rng.below(256)));
  for (int64_t i = 0; i < S; ++i) ds.labels.push_back(int32_t(rng.below(10)));
  ds.num_classes = 10;
  ds.mean = 0.5f;
  ds.stddev = 0.3f;
  struct Result {
    std::vector<Tensor> state;
    double loss = 0;
    int64_t graph_steps = 0;
  };
  auto train = [&](bool graphs) {
    if (!graphs) setenv("DC_CUDA_GRAPHS", "0", 1);
    Plan host(g, B);
    host.init_params(5);
    DevicePlanOptions o;
    o.max_batch = B;
    auto dev = be->create_plan(g, host, o);
    unsetenv("DC_CUDA_GRAPHS");
    dev->upload_params();
    const int h = dev->add_dataset(ds);
    Result out;
    for (int epoch = 0; epoch < 2; ++epoch) {
      std::vector<int64_t> order(S);
      for (int64_t i = 0; i < S; ++i) order[size_t(i)] = (i * 37 + epoch * 11) % S;
      for (int64_t b0 = 0; b0 < S; b0 += B) {
        const int64_t n = std::min(B, S - b0);
        dev->train_step(h, order.data() + b0, n, 1e-2 / double(1 + b0 / B + epoch * 7),
                        uint64_t(b0));
      }
      const DeviceStepStats st = dev->take_stats();
      out.loss += st.loss_sum;
      out.graph_steps += st.graph_steps;
    }
    dev->download_params();
    for (auto& [k, t] : host.state()) out.state.push_back(t.clone());
    return out;
  };
  const Result eager = train(false);
  testing::internal::CaptureStderr();
  const Result graph = train(true);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("capture failed"), std::string::npos) << err;
  EXPECT_EQ(eager.graph_steps, 0);
  EXPECT_GT(graph.graph_steps, 0) << "no step was replayed from a graph";
  EXPECT_NEAR(graph.loss, eager.loss, 1e-3 * std::fabs(eager.loss));
  ASSERT_EQ(graph.state.size(), eager.state.size());
  for (size_t i = 0; i < eager.state.size(); ++i)
    EXPECT_LE(rel_err(graph.state[i], eager.state[i]), 1e-3) << "state " << i;
}

}  // namespace
}  // namespace dc
