// int8 CPU inference: the quantized Conv2D and Dense steps through oneDNN's
// int8 convolution and inner product, the rest through QuantRunner's step
// loop and the engine's float layers.
#include <deepcanvas/errors.h>
#include <deepcanvas/int8_inference.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "step_loop.h"

#if DC_HAVE_DNNL
#include <dnnl.hpp>
#endif

namespace dc {

bool int8_inference_available() {
#if DC_HAVE_DNNL
  return true;
#else
  return false;
#endif
}

std::string int8_cpu_isa() {
#if DC_HAVE_DNNL
  using dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case cpu_isa::sse41:
      return "sse41";
    case cpu_isa::avx:
      return "avx";
    case cpu_isa::avx2:
      return "avx2";
    case cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case cpu_isa::avx512_mic:
    case cpu_isa::avx512_mic_4ops:
      return "avx512_mic";
    case cpu_isa::avx512_core:
      return "avx512_core";
    case cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    case cpu_isa::all:
      break;
  }
  return "unknown";
#else
  return "none";
#endif
}

bool int8_exact_on_this_cpu() {
  // Measured with DNNL_MAX_CPU_ISA on a Sapphire Rapids Xeon (oneDNN 2.6.3):
  // avx2 and avx512_core (jit_uni_int8:avx2, jit_int8:avx512_core) return a
  // weight of 1 times an input of 2 as 0, the weight halved and rounded;
  // avx2_vnni, avx512_core_vnni and AMX return 2.
  const std::string isa = int8_cpu_isa();
  return isa == "avx2_vnni" || isa == "avx512_core_vnni" || isa == "avx512_core_bf16" ||
         isa == "avx512_core_amx";
}

std::string int8_cpu_note() {
  if (!int8_inference_available() || int8_exact_on_this_cpu()) return "";
  return "oneDNN runs int8 here with " + int8_cpu_isa() +
         " (no VNNI), whose kernels halve the weights first: the outputs are not the int8 "
         "arithmetic export measured, and some predictions may change";
}

void quantize_s8(const float* x, int8_t* q, int64_t n, float scale) {
  for (int64_t i = 0; i < n; ++i) q[i] = quantize_s8_value(x[i], scale);
}

double median_seconds(const std::function<void()>& fn, int repeats, int warmup) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < std::max(repeats, 1); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

namespace {

// A ReLU or ReLU6 step reading only `op`, which feeds nothing else, is
// applied by the int8 kernel as a post-op (the rule of relu_fusions, for
// Dense as well as Conv2D).
[[maybe_unused]] std::vector<int> int8_relu_fusions(const QuantizedNetwork& q) {
  return relu_fusions_into(q.net.steps, [&](int i) { return q.op_for(i) != nullptr; });
}

}  // namespace

#if DC_HAVE_DNNL

namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

// One batch size's primitive and its memories. The input is quantized
// into the primitive's src when that is plain NCHW, else into src_user and
// reordered by oneDNN (to NHWC for the AMX and VNNI kernels: a transposing
// loop of ours, quantizing as it went, measured no faster than the
// vectorised quantization plus oneDNN's s8 reorder); dst likewise.
struct Prim {
  dnnl::primitive prim;
  memory src, wei, bias, dst;
  memory src_user, dst_user;  // only when the primitive's layout is not plain
  dnnl::reorder src_reorder, dst_reorder;
  bool src_direct = false, dst_direct = false;
  std::string impl;
};

struct Int8Op {
  int step = -1;
  const QuantOp* q = nullptr;
  bool conv = false;
  memory::dims wei_dims, strides, dilates, pad_l, pad_r;
  tag wei_tag = tag::oi;
  int64_t C = 0, H = 1, W = 1, OC = 0, OH = 1, OW = 1;
  std::vector<float> scales;       // input_scale * weight scale, per output channel
  std::vector<float> bias_scaled;  // bias / scales: oneDNN 2.x adds it before scaling
  dnnl::algorithm post = dnnl::algorithm::undef;
  float cap = 0;
  std::map<int64_t, Prim> prims;
  const std::string* last_impl = nullptr;  // Prim::impl of the last run
  int64_t last_batch = 0;
};

memory::dims src_dims(const Int8Op& o, int64_t n) {
  return o.conv ? memory::dims{n, o.C, o.H, o.W} : memory::dims{n, o.C};
}
memory::dims dst_dims(const Int8Op& o, int64_t n) {
  return o.conv ? memory::dims{n, o.OC, o.OH, o.OW} : memory::dims{n, o.OC};
}

}  // namespace

struct Int8Runner::Impl {
  const QuantizedNetwork& q;
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  std::vector<int> alias;
  std::vector<Int8Op> ops;
  std::vector<int> op_at;  // step -> index into ops, or -1
  quant_detail::StepLoop loop;

  static std::vector<bool> owned(const QuantizedNetwork& q) {
    std::vector<bool> own(q.net.steps.size(), false);
    for (const QuantOp& o : q.ops) own[size_t(o.step)] = true;
    return own;
  }

  Impl(const QuantizedNetwork& qn, int64_t max_batch)
      : q(qn), alias(int8_relu_fusions(qn)), loop(qn.net, max_batch, owned(qn), alias) {
    op_at.assign(q.net.steps.size(), -1);
    for (const QuantOp& qo : q.ops) {
      op_at[size_t(qo.step)] = int(ops.size());
      ops.push_back(make_op(qo));
    }
    for (size_t j = 0; j < alias.size(); ++j) {
      if (alias[j] < 0) continue;
      Int8Op& o = ops[size_t(op_at[size_t(alias[j])])];
      if (q.net.steps[j].type == "ReLU6") {
        o.post = dnnl::algorithm::eltwise_clip;
        o.cap = 6.f;
      } else {
        o.post = dnnl::algorithm::eltwise_relu;
      }
    }
  }

  Int8Op make_op(const QuantOp& qo) {
    const PlanStep& s = q.net.steps[size_t(qo.step)];
    Int8Op o;
    o.step = qo.step;
    o.q = &qo;
    o.conv = s.type == "Conv2D";
    const Shape& in = s.in_shapes.at(0);
    if (o.conv) {
      const Attrs& a = s.attrs;
      o.C = in[0];
      o.H = in[1];
      o.W = in[2];
      o.OC = s.out_shape[0];
      o.OH = s.out_shape[1];
      o.OW = s.out_shape[2];
      const auto& k = a.ints("kernel");
      const auto& st = a.ints("stride");
      const auto& dl = a.ints("dilation");
      const int64_t G = a.i("groups");
      int64_t pt = 0, pb = 0, pl = 0, pr = 0;
      const std::string& mode = a.s("padding_mode");
      if (mode == "same") {
        same_padding(o.H, k[0], st[0], dl[0], pt, pb, "height");
        same_padding(o.W, k[1], st[1], dl[1], pl, pr, "width");
      } else if (mode == "explicit") {
        const auto& p = a.ints("padding");
        pt = pb = p[0];
        pl = pr = p[1];
      }
      o.strides = {st[0], st[1]};
      o.dilates = {dl[0] - 1, dl[1] - 1};
      o.pad_l = {pt, pl};
      o.pad_r = {pb, pr};
      if (G == 1) {
        o.wei_dims = {o.OC, o.C, k[0], k[1]};
        o.wei_tag = tag::oihw;
      } else {
        o.wei_dims = {G, o.OC / G, o.C / G, k[0], k[1]};
        o.wei_tag = tag::goihw;
      }
    } else {
      o.C = in[0];
      o.OC = s.out_shape[0];
      o.wei_dims = {o.OC, o.C};
      o.wei_tag = tag::oi;
    }
    if (int64_t(qo.weight.scale.size()) != o.OC)
      throw Error("int8 inference: " + s.label + " has " + std::to_string(o.OC) +
                  " output channels but " + std::to_string(qo.weight.scale.size()) +
                  " weight scales");
    o.scales.resize(size_t(o.OC));
    o.bias_scaled.assign(size_t(o.OC), 0.f);
    auto b = q.net.weights.find(s.name + ".bias");
    for (int64_t c = 0; c < o.OC; ++c) {
      o.scales[size_t(c)] = qo.input_scale * qo.weight.scale[size_t(c)];
      if (b != q.net.weights.end())
        o.bias_scaled[size_t(c)] = b->second.f32()[c] / o.scales[size_t(c)];
    }
    return o;
  }

  Prim& prim_for(Int8Op& o, int64_t n) {
    auto it = o.prims.find(n);
    if (it != o.prims.end()) return it->second;
    Prim p;
    const memory::desc wei_any(o.wei_dims, dt::s8, tag::any);
    const memory::desc bias_md({o.OC}, dt::f32, tag::x);
    dnnl::primitive_attr attr;
    attr.set_output_scales(1 << 1, o.scales);
    if (o.post != dnnl::algorithm::undef) {
      dnnl::post_ops po;
      po.append_eltwise(1.f, o.post, 0.f, o.cap);
      attr.set_post_ops(po);
    }
    memory::desc src_md, wei_md, dst_md;
    if (o.conv) {
      dnnl::convolution_forward::desc d(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
          memory::desc(src_dims(o, n), dt::s8, tag::any), wei_any, bias_md,
          memory::desc(dst_dims(o, n), dt::f32, tag::any), o.strides, o.dilates, o.pad_l, o.pad_r);
      dnnl::convolution_forward::primitive_desc pd(d, attr, eng);
      src_md = pd.src_desc();
      wei_md = pd.weights_desc();
      dst_md = pd.dst_desc();
      p.impl = pd.impl_info_str();
      p.prim = dnnl::convolution_forward(pd);
    } else {
      dnnl::inner_product_forward::desc d(dnnl::prop_kind::forward_inference,
                                          memory::desc(src_dims(o, n), dt::s8, tag::nc), wei_any,
                                          bias_md, memory::desc(dst_dims(o, n), dt::f32, tag::nc));
      dnnl::inner_product_forward::primitive_desc pd(d, attr, eng);
      src_md = pd.src_desc();
      wei_md = pd.weights_desc();
      dst_md = pd.dst_desc();
      p.impl = pd.impl_info_str();
      p.prim = dnnl::inner_product_forward(pd);
    }
    const tag plain = o.conv ? tag::nchw : tag::nc;
    const memory::desc src_plain(src_dims(o, n), dt::s8, plain);
    p.src = memory(src_md, eng);
    p.src_direct = src_md == src_plain;
    if (!p.src_direct) {
      p.src_user = memory(src_plain, eng);
      p.src_reorder = dnnl::reorder(p.src_user, p.src);
    }
    const memory::desc dst_plain(dst_dims(o, n), dt::f32, plain);
    p.dst_direct = dst_md == dst_plain;
    if (p.dst_direct) {
      p.dst = memory(dst_md, eng, DNNL_MEMORY_NONE);
    } else {
      p.dst = memory(dst_md, eng);
      p.dst_user = memory(dst_plain, eng, DNNL_MEMORY_NONE);
      p.dst_reorder = dnnl::reorder(p.dst, p.dst_user);
    }
    // The weights once per primitive, into its layout (which may carry
    // the compensation oneDNN needs for a signed input).
    memory w_user(memory::desc(o.wei_dims, dt::s8, o.wei_tag), eng,
                  const_cast<int8_t*>(o.q->weight.q.data()));
    p.wei = memory(wei_md, eng);
    dnnl::reorder(w_user, p.wei).execute(strm, w_user, p.wei);
    p.bias = memory(bias_md, eng);
    std::copy(o.bias_scaled.begin(), o.bias_scaled.end(),
              static_cast<float*>(p.bias.get_data_handle()));
    strm.wait();
    return o.prims.emplace(n, std::move(p)).first->second;
  }

  void run(Int8Op& o, const Tensor& x, Tensor& y) {
    const int64_t n = x.dim(0);
    Prim& p = prim_for(o, n);
    const float scale = o.q->input_scale;
    int8_t* s = static_cast<int8_t*>((p.src_direct ? p.src : p.src_user).get_data_handle());
    const float* xf = x.f32();
    const int64_t C = o.C, HW = o.conv ? o.H * o.W : 1;
    parallel_for(n * C * HW, 4096,
                 [&](int64_t b, int64_t e) { quantize_s8(xf + b, s + b, e - b, scale); });
    if (!p.src_direct) p.src_reorder.execute(strm, p.src_user, p.src);
    if (p.dst_direct)
      p.dst.set_data_handle(y.f32());
    else
      p.dst_user.set_data_handle(y.f32());
    p.prim.execute(strm, {{DNNL_ARG_SRC, p.src},
                          {DNNL_ARG_WEIGHTS, p.wei},
                          {DNNL_ARG_BIAS, p.bias},
                          {DNNL_ARG_DST, p.dst}});
    if (!p.dst_direct) p.dst_reorder.execute(strm, p.dst, p.dst_user);
    strm.wait();
    o.last_impl = &p.impl;
    o.last_batch = n;
  }
};

Int8Runner::Int8Runner(const QuantizedNetwork& q, int64_t max_batch) {
  if (max_batch < 1) throw Error("int8 inference: the batch must be at least 1");
  try {
    impl_ = std::make_unique<Impl>(q, max_batch);
  } catch (const dnnl::error& e) {
    throw Error(std::string("int8 inference: oneDNN refused the network (") + e.what() + ")");
  }
}

const Tensor& Int8Runner::forward(const Tensor& x,
                                  const std::function<void(int, const Tensor&)>& observe) {
  Impl& m = *impl_;
  try {
    return m.loop.forward(
        x,
        [&](size_t i, const std::vector<const Tensor*>& in, Tensor& out) {
          const int k = m.op_at[i];
          if (k < 0) return false;
          m.run(m.ops[size_t(k)], *in[0], out);
          return true;
        },
        observe);
  } catch (const dnnl::error& e) {
    throw Error(std::string("int8 inference: oneDNN failed (") + e.what() + ")");
  }
}

int64_t Int8Runner::max_batch() const {
  return impl_->loop.max_batch();
}

std::vector<std::string> Int8Runner::kernels() const {
  std::vector<std::string> r;
  for (const Int8Op& o : impl_->ops)
    if (o.last_impl)
      r.push_back(impl_->q.net.steps[size_t(o.step)].name + ": " + *o.last_impl + " (batch " +
                  std::to_string(o.last_batch) + ")");
  return r;
}

#else  // no oneDNN

struct Int8Runner::Impl {
  const QuantizedNetwork& q;
  std::vector<int> alias;
};

Int8Runner::Int8Runner(const QuantizedNetwork&, int64_t) {
  throw Error(
      "int8 inference needs oneDNN, and this build has none (install libdnnl-dev and "
      "rebuild); the simulated int8 arithmetic (export --precision int8) does not");
}

const Tensor& Int8Runner::forward(const Tensor&, const std::function<void(int, const Tensor&)>&) {
  throw Error("int8 inference needs oneDNN");
}

int64_t Int8Runner::max_batch() const {
  return 0;
}

std::vector<std::string> Int8Runner::kernels() const {
  return {};
}

#endif

Int8Runner::~Int8Runner() = default;

const Shape& Int8Runner::input_shape() const {
  return impl_->q.net.steps.front().out_shape;
}

const Shape& Int8Runner::output_shape() const {
  return impl_->q.net.steps.back().out_shape;
}

std::vector<std::string> Int8Runner::fused_relus() const {
  std::vector<std::string> r;
  for (size_t j = 0; j < impl_->alias.size(); ++j)
    if (impl_->alias[j] >= 0) r.push_back(impl_->q.net.steps[j].name);
  return r;
}

}  // namespace dc
