// Conv2D through oneDNN's convolution primitives (see conv_dnnl.h for
// why). The primitives for a batch size are built on its first use and kept
// (a training run meets four: the batch and the epoch's short last one, in
// training and in evaluation).
// Every buffer, the primitives' scratchpads included, comes from our
// tracked allocator, so memory statistics still see all of it.
#include "conv_dnnl.h"

#include <deepcanvas/memstats.h>
#include <deepcanvas/parallel.h>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#if DC_HAVE_DNNL
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace dc::conv_kernels {

#if DC_HAVE_DNNL

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// A switch that is on unless DC_CONV names `off`, read once; -1 until then.
bool switch_on(std::atomic<int>& flag, const char* off) {
  int v = flag.load(std::memory_order_relaxed);
  if (v < 0) {
    const char* e = std::getenv("DC_CONV");
    v = e && std::strcmp(e, off) == 0 ? 0 : 1;
    flag.store(v, std::memory_order_relaxed);
  }
  return v == 1;
}

// The path for convolutions created from now on: oneDNN unless
// DC_CONV=im2col says otherwise or set_cpu_conv_onednn() chose.
std::atomic<int> g_onednn{-1};
bool wanted() {
  return switch_on(g_onednn, "im2col");
}

// DC_CONV=direct: oneDNN's direct kernels only, never Winograd (A/B runs,
// and results that follow PyTorch's CPU convolutions more closely).
std::atomic<int> g_winograd{-1};
bool winograd_wanted() {
  return switch_on(g_winograd, "direct");
}

// DC_CONV=dense: grouped and depthwise convolutions on our own kernels
// (conv.cpp), only dense ones on oneDNN's (A/B runs). By default oneDNN
// takes them too: its depthwise kernels, reorders included, trained
// MobileNetV2 1.3 times as fast as ours (docs/BENCHMARKS.md).
std::atomic<int> g_grouped{-1};
bool grouped_wanted() {
  return switch_on(g_grouped, "dense");
}

// oneDNN's kernels run as many OpenMP threads as the calling thread's
// setting says; set_num_threads() only set the thread it ran on, and a
// training runs on a thread of its own.
void match_threads() {
  const int n = num_threads();
  if (omp_get_max_threads() != n) omp_set_num_threads(n);
}

dnnl::engine& cpu() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// At least `bytes` of v, 64-byte aligned (oneDNN's kernels load whole cache
// lines): v, from the tracked allocator, only ever grows (its old contents
// are not kept then).
char* aligned(ScratchVec<char>& v, size_t bytes) {
  if (v.size() < bytes + 64) {
    v.clear();
    v.shrink_to_fit();
    v.resize(bytes + 64);
  }
  auto addr = reinterpret_cast<uintptr_t>(v.data());
  return reinterpret_cast<char*>((addr + 63) & ~uintptr_t(63));
}

// The buffers a call needs only while it runs (reordered weights, output
// and gradients, the primitives' scratchpads) live in one workspace per
// thread, shared by every convolution: layers run one after another, so
// the workspace is the largest layer's need, not the sum over layers.
char* workspace(size_t bytes) {
  thread_local ScratchVec<char> ws;
  return aligned(ws, bytes);
}

// A place in the workspace for one memory descriptor.
struct Slot {
  memory::desc md;
  size_t off = 0;
  memory at(char* base) const { return memory(md, cpu(), base + off); }
};

struct Layout {
  size_t total = 0;
  Slot add(const memory::desc& md) {
    Slot s{md, total};
    total += (md.get_size() + 63) / 64 * 64;
    return s;
  }
};

// A tensor the layer holds in plain layout (user) and a primitive wants in
// its own (md): a reorder and a workspace slot when the two differ,
// nothing when they match.
struct Staged {
  bool needed = false;
  Slot slot;
  dnnl::reorder r;
  // sizes_only: the slot is placed but no reorder is built (the memory
  // model's question, answered without compiling kernels).
  void make(const memory::desc& user, const memory::desc& md, bool to_user, Layout& ws,
            bool sizes_only) {
    needed = user != md;
    if (!needed) return;
    slot = ws.add(md);
    if (sizes_only) return;
    memory u(user, cpu(), DNNL_MEMORY_NONE), b(md, cpu(), DNNL_MEMORY_NONE);
    r = to_user ? dnnl::reorder(b, u) : dnnl::reorder(u, b);
  }
};

}  // namespace

struct DnnlConv::Impl {
  ConvGeom g;
  dnnl::stream s{cpu()};
  memory::dims strides, dilates, pad_l, pad_r;

  // Everything for one batch size.
  struct Prims {
    memory::desc x_md, y_md, w_md, b_md;  // plain: NCHW, OIHW, O
    dnnl::convolution_forward fwd;
    dnnl::convolution_backward_data bwd_d;
    dnnl::convolution_backward_weights bwd_w;
    // The forward's input in oneDNN's layout (when the layouts differ): its
    // descriptor and the reorder into it; the buffer is the layer's (kept).
    bool src_needed = false;
    memory::desc src_md;
    dnnl::reorder src_r;
    Staged wei, dst;                // forward: w in, y out
    Staged bw_src, bw_ddst, bw_dw;  // weight gradient: x and g in, dw out
    Staged bd_ddst, bd_wei, bd_dx;  // input gradient: g and w in, dx out
    bool ddst_shared = false;       // both gradients take g in the same layout
    Slot masked, dw_plain, db_plain, dx_plain, scratch;
    // The forward's reordered input when it is not kept (inference, a
    // frozen layer): in the workspace, over the backward's slots, which
    // such a forward never needs.
    Slot src_tmp;
    size_t ws_bytes = 0;    // the workspace this batch size needs
    size_t fwd_bytes = 0;   // what an unkept forward needs of it (inference)
    bool winograd = false;  // the Winograd kernels, else the direct ones
  };
  std::map<int64_t, Prims> by_batch;
  FusedRelu act;  // the forward's post-op
  // The forward's reordered input, kept for the weight gradient: one buffer
  // for every batch size (the largest met), since only the last forward's
  // is read; and which x at which batch size it holds.
  ScratchVec<char> keep;
  const float* kept_x = nullptr;
  int64_t kept_n = -1;

  // The kept input's buffer for batch size p; forgets what it held when
  // it has to grow.
  memory kept(const Prims& p) {
    const size_t had = keep.size();
    char* at = aligned(keep, p.src_md.get_size());
    if (keep.size() != had) kept_x = nullptr;
    return memory(p.src_md, cpu(), at);
  }

  Prims& prims(int64_t N, const FusedRelu& want) {
    if (want.kind != act.kind || (want.kind == Act::Relu6 && want.cap != act.cap)) {
      by_batch.clear();  // the forward's post-op changed
      act = want;
    }
    auto it = by_batch.find(N);
    if (it != by_batch.end()) return it->second;
    // A run meets four sizes (the batch and the epoch's short last one, in
    // training and in evaluation); more come from the inference panel.
    if (by_batch.size() >= 8) by_batch.clear();
    Prims p;
    build(N, p);  // may throw: nothing half-built is kept
    return by_batch.emplace(N, std::move(p)).first->second;
  }

  void build(int64_t N, Prims& p, bool sizes_only = false) {
    p.x_md = memory::desc({N, g.C, g.H, g.W}, dt::f32, tag::nchw);
    p.y_md = memory::desc({N, g.OC, g.OH, g.OW}, dt::f32, tag::nchw);
    // Grouped weights as oneDNN's goihw: the same bytes as our
    // OC x C/G x KH x KW.
    const memory::dims wd = g.G == 1 ? memory::dims{g.OC, g.C, g.KH, g.KW}
                                     : memory::dims{g.G, g.OCg(), g.Cg(), g.KH, g.KW};
    p.w_md = memory::desc(wd, dt::f32, g.G == 1 ? tag::oihw : tag::goihw);
    p.b_md = memory::desc({g.OC}, dt::f32, tag::x);
    const auto x_any = memory::desc({N, g.C, g.H, g.W}, dt::f32, tag::any);
    const auto y_any = memory::desc({N, g.OC, g.OH, g.OW}, dt::f32, tag::any);
    const auto w_any = memory::desc(wd, dt::f32, tag::any);

    // Two attribute objects: a copy of a primitive_attr is the same
    // object (a shared handle), so post-ops set on a copy would reach the
    // backward primitives too.
    dnnl::primitive_attr attr, fwd_attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    fwd_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (act.on()) {
      dnnl::post_ops po;
      if (act.kind == Act::Relu6)
        po.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, 0.f, act.cap);
      else
        po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      fwd_attr.set_post_ops(po);
    }
    dnnl::convolution_forward::primitive_desc fwd_pd;
    dnnl::convolution_backward_data::primitive_desc bd_pd;
    dnnl::convolution_backward_weights::primitive_desc bw_pd;
    auto make = [&](dnnl::algorithm alg) {
      const auto fwd_d =
          g.bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, x_any,
                                                   w_any, p.b_md, y_any, strides, dilates, pad_l,
                                                   pad_r)
                 : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, x_any,
                                                   w_any, y_any, strides, dilates, pad_l, pad_r);
      fwd_pd = dnnl::convolution_forward::primitive_desc(fwd_d, fwd_attr, cpu());
      bd_pd = dnnl::convolution_backward_data::primitive_desc(
          dnnl::convolution_backward_data::desc(alg, x_any, w_any, y_any, strides, dilates, pad_l,
                                                pad_r),
          attr, cpu(), fwd_pd);
      const auto bw_d = g.bias
                            ? dnnl::convolution_backward_weights::desc(
                                  alg, x_any, w_any, p.b_md, y_any, strides, dilates, pad_l, pad_r)
                            : dnnl::convolution_backward_weights::desc(
                                  alg, x_any, w_any, y_any, strides, dilates, pad_l, pad_r);
      bw_pd = dnnl::convolution_backward_weights::primitive_desc(bw_d, attr, cpu(), fwd_pd);
    };
    // Winograd F(4×4, 3×3) where oneDNN has it (3×3, stride 1, no
    // dilation, on AVX-512): 1.6-2.8 times the direct kernels' speed on
    // ResNet's 28×28 and 14×14 layers, forward and both gradients
    // (docs/BENCHMARKS.md), at a rounding error still far below float32
    // training noise. Only for channels in whole blocks of 16: it pads the
    // channels to them, and a grey image's first layer (1 -> 32) ran 8
    // times slower forward than on the direct kernel. DC_CONV=direct keeps
    // the direct kernels everywhere.
    p.winograd = false;
    if (winograd_wanted() && g.G == 1 && g.KH == 3 && g.KW == 3 && g.SH == 1 && g.SW == 1 &&
        g.DH == 1 && g.DW == 1 && g.C % 16 == 0 && g.OC % 16 == 0) {
      try {
        make(dnnl::algorithm::convolution_winograd);
        p.winograd = true;
      } catch (const dnnl::error&) {
        // Not for this shape or CPU: direct.
      }
    }
    if (!p.winograd) make(dnnl::algorithm::convolution_direct);
    // oneDNN answers every geometry, some with its reference loops (a
    // dilated depthwise or a grouped convolution of few channels per
    // group): tens of times slower than our kernels, so those stay ours.
    for (const std::string impl :
         {fwd_pd.impl_info_str(), bd_pd.impl_info_str(), bw_pd.impl_info_str()})
      if (impl.rfind("ref", 0) == 0)
        throw dnnl::error(dnnl_unimplemented, "only oneDNN's reference kernels");

    p.src_needed = p.x_md != fwd_pd.src_desc();
    if (!sizes_only) {
      p.fwd = dnnl::convolution_forward(fwd_pd);
      p.bwd_d = dnnl::convolution_backward_data(bd_pd);
      p.bwd_w = dnnl::convolution_backward_weights(bw_pd);
    }
    if (p.src_needed) p.src_md = fwd_pd.src_desc();
    if (p.src_needed && !sizes_only)
      p.src_r = dnnl::reorder(memory(p.x_md, cpu(), DNNL_MEMORY_NONE),
                              memory(p.src_md, cpu(), DNNL_MEMORY_NONE));
    // Forward's slots and the scratchpad first; then the backward's, and
    // over them the forward's unkept input.
    Layout ws;
    p.wei.make(p.w_md, fwd_pd.weights_desc(), false, ws, sizes_only);
    p.dst.make(p.y_md, fwd_pd.dst_desc(), true, ws, sizes_only);
    size_t scratch = fwd_pd.scratchpad_desc().get_size();
    scratch = std::max(scratch, bd_pd.scratchpad_desc().get_size());
    scratch = std::max(scratch, bw_pd.scratchpad_desc().get_size());
    p.scratch = ws.add(memory::desc({std::max<int64_t>(1, int64_t(scratch))}, dt::u8, tag::x));
    const size_t backward_from = ws.total;
    p.bw_src.make(p.x_md, bw_pd.src_desc(), false, ws, sizes_only);
    p.bw_ddst.make(p.y_md, bw_pd.diff_dst_desc(), false, ws, sizes_only);
    p.bw_dw.make(p.w_md, bw_pd.diff_weights_desc(), true, ws, sizes_only);
    p.ddst_shared = bd_pd.diff_dst_desc() == bw_pd.diff_dst_desc();
    if (!p.ddst_shared) p.bd_ddst.make(p.y_md, bd_pd.diff_dst_desc(), false, ws, sizes_only);
    p.bd_wei.make(p.w_md, bd_pd.weights_desc(), false, ws, sizes_only);
    p.bd_dx.make(p.x_md, bd_pd.diff_src_desc(), true, ws, sizes_only);
    if (act.on()) p.masked = ws.add(p.y_md);
    p.dw_plain = ws.add(p.w_md);
    if (g.bias) p.db_plain = ws.add(p.b_md);
    p.dx_plain = ws.add(p.x_md);
    Layout over;
    over.total = backward_from;
    if (p.src_needed) p.src_tmp = over.add(p.src_md);
    p.fwd_bytes = over.total;
    p.ws_bytes = std::max(ws.total, over.total);
  }

  // user as the primitive wants it: reordered into its workspace slot
  // when the layouts differ, else the user's memory itself.
  memory in(Staged& st, const memory& user, char* base) {
    if (!st.needed) return user;
    memory m = st.slot.at(base);
    st.r.execute(s, const_cast<memory&>(user), m);
    return m;
  }
};

DnnlConv::DnnlConv(const ConvGeom& g) : p_(std::make_unique<Impl>()) {
  p_->g = g;
  p_->strides = {g.SH, g.SW};
  // oneDNN counts dilation from 0 (no gap between taps).
  p_->dilates = {g.DH - 1, g.DW - 1};
  p_->pad_l = {g.PT, g.PL};
  p_->pad_r = {g.PB, g.PR};
}

DnnlConv::~DnnlConv() = default;

// A 1×1 convolution over this many output pixels or more runs as one GEMM
// per sample on the NCHW tensors themselves (conv.cpp), never on oneDNN:
// its kernel is fast, but the reorders into its blocked layout and back
// (input, output, the output's gradient, the input's) cost more than the
// GEMM saves. Below it the per-sample GEMMs are too thin and oneDNN, which
// blocks the batch, is faster. MobileNetV2 at 96 px trained 6 % faster
// (docs/BENCHMARKS.md): its 48×48 to 12×12 layers went faster this way,
// its 6×6 and 3×3 ones slower.
constexpr int64_t kGemmPointwisePixels = 100;

bool DnnlConv::takes(const ConvGeom& g) {
  if (g.pointwise() && g.OHW() >= kGemmPointwisePixels) return false;
  return wanted() && (g.G == 1 || grouped_wanted());
}

std::unique_ptr<DnnlConv> DnnlConv::create(const ConvGeom& g) {
  if (!takes(g)) return nullptr;
  return std::unique_ptr<DnnlConv>(new DnnlConv(g));
}

bool DnnlConv::bytes(const ConvGeom& g, int64_t N, bool relu, int threads, int64_t& kept,
                     int64_t& workspace, bool* winograd, int64_t* forward_only) {
  if (!takes(g)) return false;
  // The advisor asks for many batch sizes (its largest-batch search) and
  // again on every edit: answers are kept. Per batch size, because the
  // Winograd kernels' scratchpads grow in steps of tiles, not linearly.
  using Sizes = std::array<int64_t, 4>;  // kept, workspace, Winograd, forward only
  static std::mutex m;
  static std::map<std::vector<int64_t>, std::optional<Sizes>> known;
  const std::vector<int64_t> key{g.G,  g.C,  g.H,  g.W,  g.OC, g.KH,   g.KW, g.SH, g.SW,   g.DH,
                                 g.DW, g.PT, g.PB, g.PL, g.PR, g.bias, relu, N,    threads};
  std::lock_guard<std::mutex> lock(m);
  auto it = known.find(key);
  if (it == known.end()) {
    if (known.size() > 4096) known.clear();
    std::optional<Sizes> sz;
    try {
      DnnlConv c(g);
      if (relu) c.p_->act.fuse(INFINITY);
      Impl::Prims p;
      // oneDNN sizes its per-thread scratchpads by the calling thread's
      // OpenMP setting when a descriptor is made: the run's, for the answer.
      const int saved = omp_get_max_threads();
      omp_set_num_threads(std::max(1, threads));
      try {
        c.p_->build(N, p, /*sizes_only=*/true);
      } catch (...) {
        omp_set_num_threads(saved);
        throw;
      }
      omp_set_num_threads(saved);
      // Both buffers as aligned() allocates them: 64 bytes for alignment.
      const size_t keep = p.src_needed ? p.src_md.get_size() + 64 : 0;
      sz = Sizes{int64_t(keep), int64_t(p.ws_bytes) + 64, int64_t(p.winograd),
                 int64_t(p.fwd_bytes) + 64};
    } catch (const dnnl::error&) {
      // No kernel: the layer unfolds (sz stays empty).
    }
    it = known.emplace(key, sz).first;
  }
  if (!it->second) return false;
  kept = (*it->second)[0];
  workspace = (*it->second)[1];
  if (winograd) *winograd = (*it->second)[2] != 0;
  if (forward_only) *forward_only = (*it->second)[3];
  return true;
}

bool DnnlConv::forward(int64_t N, const float* x, const float* w, const float* b, float* y,
                       const FusedRelu& act, bool keep) {
  match_threads();
  Impl& I = *p_;
  Impl::Prims* pp = nullptr;
  try {
    pp = &I.prims(N, act);
  } catch (const dnnl::error&) {
    return false;  // no oneDNN kernel for this geometry: the caller unfolds
  }
  Impl::Prims& p = *pp;
  // Only the forward's part: an inference never holds the backward's.
  char* base = workspace(p.fwd_bytes);
  memory xm(p.x_md, cpu(), const_cast<float*>(x));
  const memory wm(p.w_md, cpu(), const_cast<float*>(w));
  memory ym(p.y_md, cpu(), y);
  memory src = xm;
  if (p.src_needed) {
    src = keep ? I.kept(p) : p.src_tmp.at(base);
    p.src_r.execute(I.s, xm, src);
  }
  const memory wei = I.in(p.wei, wm, base);
  memory dst = p.dst.needed ? p.dst.slot.at(base) : ym;
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                       {DNNL_ARG_WEIGHTS, wei},
                                       {DNNL_ARG_DST, dst},
                                       {DNNL_ARG_SCRATCHPAD, p.scratch.at(base)}};
  if (b) args[DNNL_ARG_BIAS] = memory(p.b_md, cpu(), const_cast<float*>(b));
  p.fwd.execute(I.s, args);
  if (p.dst.needed) p.dst.r.execute(I.s, dst, ym);
  I.s.wait();
  I.kept_x = p.src_needed && keep ? x : nullptr;
  I.kept_n = N;
  return true;
}

bool DnnlConv::backward(int64_t N, const float* x, const float* y, const float* dy, const float* w,
                        float* dx, bool fresh, float* dw, float* db, const FusedRelu& act) {
  match_threads();
  Impl& I = *p_;
  Impl::Prims* pp = nullptr;
  try {
    pp = &I.prims(N, act);
  } catch (const dnnl::error&) {
    return false;  // no oneDNN kernel for this geometry: the caller's kernels
  }
  Impl::Prims& p = *pp;
  char* base = workspace(p.ws_bytes);
  const int64_t out_n = N * I.g.OC * I.g.OHW();
  const float* g = dy;
  if (act.on()) {
    // The fused activation's gradient: dy where the output was inside
    // (0, cap), from the output, as the ReLU and ReLU6 layers do.
    float* m = static_cast<float*>(p.masked.at(base).get_data_handle());
    parallel_for(out_n, 1 << 14,
                 [=, &act](int64_t b, int64_t e) { act.mask_grad(dy + b, y + b, m + b, e - b); });
    g = m;
  }
  memory gm(p.y_md, cpu(), const_cast<float*>(g));
  memory ddst_w = gm;  // g in the weight gradient's layout, when computed
  if (dw) {
    memory xm(p.x_md, cpu(), const_cast<float*>(x));
    // The forward's reordered input is reused when it holds this x and is
    // in the layout the weight gradient wants.
    memory src = xm;
    if (p.bw_src.needed) {
      if (p.src_needed && I.kept_x == x && I.kept_n == N && p.src_md == p.bw_src.slot.md)
        src = I.kept(p);
      else
        src = I.in(p.bw_src, xm, base);
    }
    ddst_w = I.in(p.bw_ddst, gm, base);
    memory dwm = p.bw_dw.needed ? p.bw_dw.slot.at(base) : p.dw_plain.at(base);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                         {DNNL_ARG_DIFF_DST, ddst_w},
                                         {DNNL_ARG_DIFF_WEIGHTS, dwm},
                                         {DNNL_ARG_SCRATCHPAD, p.scratch.at(base)}};
    if (I.g.bias) args[DNNL_ARG_DIFF_BIAS] = p.db_plain.at(base);
    p.bwd_w.execute(I.s, args);
    memory plain = p.dw_plain.at(base);
    if (p.bw_dw.needed) p.bw_dw.r.execute(I.s, dwm, plain);
    I.s.wait();
    // Parameter gradients accumulate (a step may run several backward
    // passes into them); oneDNN's primitives overwrite, hence the sums.
    const float* d = static_cast<const float*>(plain.get_data_handle());
    const int64_t n = I.g.OC * I.g.Kg();
    for (int64_t i = 0; i < n; ++i) dw[i] += d[i];
    if (db && I.g.bias) {
      const auto* sb = static_cast<const float*>(p.db_plain.at(base).get_data_handle());
      for (int64_t o = 0; o < I.g.OC; ++o) db[o] += sb[o];
    }
  }
  if (!dx) return true;
  const memory wm(p.w_md, cpu(), const_cast<float*>(w));
  // The weight gradient's reordered g serves here too when the layouts
  // agree (they do on AVX-512: both blocked by 16 channels).
  const memory ddst =
      p.ddst_shared ? (dw ? ddst_w : I.in(p.bw_ddst, gm, base)) : I.in(p.bd_ddst, gm, base);
  const memory wei = I.in(p.bd_wei, wm, base);
  memory dxm(p.x_md, cpu(), dx);
  // A fresh dx in plain layout is written straight; one in oneDNN's layout
  // is reordered into; an accumulated one (the input feeds other layers
  // too) needs plain values to add.
  memory plain = p.dx_plain.at(base);
  memory dsrc = p.bd_dx.needed ? p.bd_dx.slot.at(base) : fresh ? dxm : plain;
  p.bwd_d.execute(I.s, {{DNNL_ARG_DIFF_DST, ddst},
                        {DNNL_ARG_WEIGHTS, wei},
                        {DNNL_ARG_DIFF_SRC, dsrc},
                        {DNNL_ARG_SCRATCHPAD, p.scratch.at(base)}});
  if (p.bd_dx.needed) p.bd_dx.r.execute(I.s, dsrc, fresh ? dxm : plain);
  I.s.wait();
  if (fresh) return true;
  const auto* src = static_cast<const float*>(plain.get_data_handle());
  parallel_for(N * I.g.C * I.g.HW(), 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dx[i] += src[i];
  });
  return true;
}

#else  // !DC_HAVE_DNNL: every convolution unfolds; nothing here is called.

struct DnnlConv::Impl {};
DnnlConv::DnnlConv(const ConvGeom&) {}
DnnlConv::~DnnlConv() = default;
bool DnnlConv::takes(const ConvGeom&) {
  return false;
}
std::unique_ptr<DnnlConv> DnnlConv::create(const ConvGeom&) {
  return nullptr;
}
bool DnnlConv::bytes(const ConvGeom&, int64_t, bool, int, int64_t&, int64_t&, bool*, int64_t*) {
  return false;
}
bool DnnlConv::forward(int64_t, const float*, const float*, const float*, float*, const FusedRelu&,
                       bool) {
  return false;
}
bool DnnlConv::backward(int64_t, const float*, const float*, const float*, const float*, float*,
                        bool, float*, float*, const FusedRelu&) {
  return false;
}

#endif

}  // namespace dc::conv_kernels

namespace dc {

bool cpu_conv_onednn() {
#if DC_HAVE_DNNL
  return conv_kernels::wanted();
#else
  return false;
#endif
}

const char* cpu_conv_path() {
#if DC_HAVE_DNNL
  if (conv_kernels::wanted())
    return !conv_kernels::grouped_wanted()   ? "onednn (dense only; grouped on im2col/depthwise)"
           : conv_kernels::winograd_wanted() ? "onednn (Winograd for 3x3)"
                                             : "onednn (direct)";
#endif
  return "im2col";
}

void set_cpu_conv_onednn([[maybe_unused]] bool on) {
#if DC_HAVE_DNNL
  conv_kernels::g_onednn.store(on ? 1 : 0, std::memory_order_relaxed);
#endif
}

}  // namespace dc
