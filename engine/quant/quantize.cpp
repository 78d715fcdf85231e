// Post-training quantization: the QDQ arithmetic, BatchNorm folding and the
// step-by-step CPU executor that runs a network in fp32 or simulated int8.
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/quantize.h>
#include <deepcanvas/rng.h>

#include "step_loop.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace dc {

int32_t quantize_value(float x, float scale, int32_t zero_point, int32_t qmin, int32_t qmax) {
  // std::nearbyint rounds half to even in the default rounding mode, which
  // is what QuantizeLinear specifies; NaN saturates to 0 as onnxruntime does.
  const float r = std::nearbyint(x / scale);
  if (std::isnan(r)) return std::clamp(zero_point, qmin, qmax);
  const double v = double(r) + double(zero_point);
  if (v <= double(qmin)) return qmin;
  if (v >= double(qmax)) return qmax;
  return int32_t(v);
}

void fake_quantize(float* x, int64_t n, float scale) {
  for (int64_t i = 0; i < n; ++i) x[i] = dequantize_value(quantize_value(x[i], scale), scale);
}

float symmetric_scale(float amax) {
  if (!(amax > 0) || !std::isfinite(amax)) return 1.0f / float(kWeightQMax) * 1e-6f;
  return amax / float(kWeightQMax);
}

ChannelQuant quantize_per_channel(const Tensor& w) {
  ChannelQuant c;
  const int64_t out = w.dim(0), per = w.numel() / std::max<int64_t>(out, 1);
  c.q.resize(size_t(w.numel()));
  c.scale.resize(size_t(out));
  const float* p = w.f32();
  for (int64_t o = 0; o < out; ++o) {
    float amax = 0;
    for (int64_t i = 0; i < per; ++i) amax = std::max(amax, std::fabs(p[o * per + i]));
    const float s = symmetric_scale(amax);
    c.scale[size_t(o)] = s;
    for (int64_t i = 0; i < per; ++i)
      c.q[size_t(o * per + i)] =
          int8_t(quantize_value(p[o * per + i], s, 0, -kWeightQMax, kWeightQMax));
  }
  return c;
}

std::optional<CalibrationMethod> parse_calibration(const std::string& s) {
  if (s == "minmax") return CalibrationMethod::MinMax;
  if (s == "percentile") return CalibrationMethod::Percentile;
  if (s == "entropy") return CalibrationMethod::Entropy;
  return std::nullopt;
}

const char* calibration_name(CalibrationMethod m) {
  switch (m) {
    case CalibrationMethod::MinMax:
      return "minmax";
    case CalibrationMethod::Percentile:
      return "percentile";
    case CalibrationMethod::Entropy:
      return "entropy";
  }
  return "?";
}

void ActivationStats::add_range(const float* x, int64_t n) {
  float m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));
  amax = std::max(amax, double(m));
  count += n;
}

void ActivationStats::add_histogram(const float* x, int64_t n) {
  if (hist.empty()) hist.assign(kBins, 0.0);
  if (!(amax > 0)) {
    hist[0] += double(n);
    return;
  }
  const double per_bin = double(kBins) / amax;
  for (int64_t i = 0; i < n; ++i) {
    const int b = int(std::min<double>(std::fabs(x[i]) * per_bin, kBins - 1));
    hist[size_t(b)] += 1.0;
  }
}

// TensorRT's entropy calibration ("8-bit Inference with TensorRT", Migacz
// 2017): for each candidate threshold i (in bins, 128..2048) the reference
// P is the histogram up to i with everything beyond folded into its last
// bin; Q merges those i bins into 128 levels and spreads each level back
// over its non-empty bins. The threshold with the least KL(P || Q) wins.
double entropy_threshold(const std::vector<double>& counts, double bin_width) {
  const int bins = int(counts.size()), levels = 128;
  // The exact zeros a ReLU leaves (a spike in the first bin, often most of
  // the values) would otherwise dominate both distributions and pull the
  // threshold far down; NVIDIA's pytorch-quantization levels that bin with
  // its neighbour before the search, and so does this.
  std::vector<double> hist = counts;
  if (bins > 1) hist[0] = hist[1];
  if (bins <= levels) return bins * bin_width;
  double best = std::numeric_limits<double>::infinity();
  int best_i = bins;
  // The outliers beyond i, folded into P's last bin.
  double outliers = 0;
  for (int k = levels; k < bins; ++k) outliers += hist[size_t(k)];
  std::vector<double> p, q;
  for (int i = levels; i <= bins; ++i) {
    if (i > levels) outliers -= hist[size_t(i - 1)];
    p.assign(hist.begin(), hist.begin() + i);
    p[size_t(i - 1)] += outliers;
    q.assign(size_t(i), 0.0);
    const double per = double(i) / levels;
    for (int j = 0; j < levels; ++j) {
      const int start = int(std::floor(j * per)),
                stop = j == levels - 1 ? i : int(std::floor((j + 1) * per));
      double sum = 0;
      int nonzero = 0;
      for (int k = start; k < stop; ++k) {
        sum += hist[size_t(k)];
        nonzero += hist[size_t(k)] != 0;
      }
      if (nonzero == 0) continue;
      for (int k = start; k < stop; ++k)
        if (hist[size_t(k)] != 0) q[size_t(k)] = sum / nonzero;
    }
    double ps = 0, qs = 0;
    for (int k = 0; k < i; ++k) {
      ps += p[size_t(k)];
      qs += q[size_t(k)];
    }
    if (ps <= 0) continue;
    double kl = 0;
    for (int k = 0; k < i; ++k) {
      if (p[size_t(k)] == 0) continue;
      const double pk = p[size_t(k)] / ps;
      // A bin P has and Q lost (only P's last one, which gained the
      // outliers) gets a tiny mass rather than an infinite divergence.
      const double qk = q[size_t(k)] > 0 ? q[size_t(k)] / qs : 1e-12;
      kl += pk * std::log(pk / qk);
    }
    if (kl < best) {
      best = kl;
      best_i = i;
    }
  }
  return (best_i + 0.5) * bin_width;
}

double calibrated_amax(const ActivationStats& s, CalibrationMethod m, double percentile) {
  if (m == CalibrationMethod::MinMax || s.hist.empty() || !(s.amax > 0)) return s.amax;
  const double width = s.amax / ActivationStats::kBins;
  if (m == CalibrationMethod::Entropy) return std::min(s.amax, entropy_threshold(s.hist, width));
  double total = 0;
  for (double h : s.hist) total += h;
  const double want = total * std::clamp(percentile, 0.0, 100.0) / 100.0;
  double cum = 0;
  for (size_t b = 0; b < s.hist.size(); ++b) {
    cum += s.hist[b];
    if (cum >= want) return double(b + 1) * width;
  }
  return s.amax;
}

bool quantizable_type(const std::string& type) {
  return type == "Conv2D" || type == "Dense";
}

namespace {

bool is_batch_norm(const std::string& type) {
  return type == "BatchNorm2D" || type == "BatchNorm1D";
}

const Tensor& need(const std::map<std::string, Tensor>& w, const std::string& name) {
  auto it = w.find(name);
  if (it == w.end()) throw Error("quantization: the weights have no tensor '" + name + "'");
  return it->second;
}

}  // namespace

QuantNetwork fold_batch_norms(const std::vector<PlanStep>& steps,
                              const std::vector<std::pair<std::string, Tensor>>& state) {
  QuantNetwork net;
  for (const auto& [name, t] : state) net.weights[name] = t.clone();
  std::vector<int> readers(steps.size(), 0);
  for (const PlanStep& s : steps)
    for (int i : s.inputs) ++readers[size_t(i)];
  // fold_into[bn] = the conv folded into it (it takes the BatchNorm's place
  // in the order, so everything after still comes after what it reads).
  std::vector<int> fold_into(steps.size(), -1);
  std::vector<bool> dropped(steps.size(), false);
  for (size_t j = 0; j < steps.size(); ++j) {
    const PlanStep& bn = steps[j];
    if (!is_batch_norm(bn.type) || bn.inputs.size() != 1) continue;
    const int p = bn.inputs[0];
    const PlanStep& conv = steps[size_t(p)];
    if (!quantizable_type(conv.type) || readers[size_t(p)] != 1) continue;
    if (conv.out_shape.rank() < 1 || bn.in_shapes[0] != conv.out_shape) continue;
    const int64_t C = conv.out_shape[0];
    Tensor& w = net.weights.at(conv.name + ".weight");
    if (w.dim(0) != C) continue;
    const Tensor& g = need(net.weights, bn.name + ".weight");
    const Tensor& beta = need(net.weights, bn.name + ".bias");
    const Tensor& mean = need(net.weights, bn.name + ".running_mean");
    const Tensor& var = need(net.weights, bn.name + ".running_var");
    const double eps = bn.attrs.f("eps");
    Tensor bias(Shape{C});
    auto it = net.weights.find(conv.name + ".bias");
    if (it != net.weights.end()) bias.copy_from(it->second);
    const int64_t per = w.numel() / C;
    for (int64_t c = 0; c < C; ++c) {
      // The engine's BatchNorm rounds inv * gamma to float before it
      // multiplies; the fold does the same so the results agree.
      const float s = float(1.0 / std::sqrt(double(var.f32()[c]) + eps) * g.f32()[c]);
      for (int64_t i = 0; i < per; ++i) w.f32()[c * per + i] *= s;
      bias.f32()[c] = (bias.f32()[c] - mean.f32()[c]) * s + beta.f32()[c];
    }
    net.weights[conv.name + ".bias"] = bias;
    for (const char* k : {".weight", ".bias", ".running_mean", ".running_var"})
      net.weights.erase(bn.name + k);
    fold_into[j] = p;
    dropped[size_t(p)] = true;
    net.folded.push_back(bn.name + " into " + conv.name);
  }
  std::vector<int> where(steps.size(), -1);
  for (size_t j = 0; j < steps.size(); ++j) {
    if (dropped[j]) continue;
    PlanStep s = fold_into[j] >= 0 ? steps[size_t(fold_into[j])] : steps[j];
    if (fold_into[j] >= 0) s.attrs.set("bias", AttrValue(true));
    for (int& i : s.inputs) i = where[size_t(i)];
    where[j] = int(net.steps.size());
    net.steps.push_back(std::move(s));
  }
  return net;
}

const QuantOp* QuantizedNetwork::op_for(int step) const {
  for (const QuantOp& o : ops)
    if (o.step == step) return &o;
  return nullptr;
}

namespace quant_detail {

StepLoop::StepLoop(const QuantNetwork& net, int64_t max_batch, const std::vector<bool>& own,
                   const std::vector<int>& alias)
    : net_(net), max_batch_(max_batch), alias_(alias) {
  alias_.resize(net.steps.size(), -1);
  for (size_t i = 0; i < net.steps.size(); ++i) {
    const PlanStep& s = net.steps[i];
    const bool owned = i < own.size() && own[i];
    const bool aliased = alias_[i] >= 0;
    out_.emplace_back(aliased ? Tensor() : Tensor(s.out_shape.with_batch(max_batch)));
    if (s.is_input || owned || aliased) {
      layers_.emplace_back();
      continue;
    }
    layers_.push_back(s.desc->create(s.attrs, s.in_shapes, s.out_shape));
  }
  load_float();
}

void StepLoop::load_float() {
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (!layers_[i]) continue;
    for (Param* p : layers_[i]->params()) {
      const std::string name = net_.steps[i].name + "." + p->name;
      const Tensor& t = need(net_.weights, name);
      if (t.numel() != p->value.numel())
        throw Error("quantization: tensor '" + name + "' has another size than its layer");
      p->value.copy_from(t);
    }
  }
}

const Tensor& StepLoop::forward(const Tensor& x, const Hook& hook,
                                const std::function<void(int, const Tensor&)>& observe) {
  const int64_t n = x.dim(0);
  if (n > max_batch_) throw Error("quantization: a batch larger than the runner's");
  RunContext ctx{false, nullptr};
  cur_.assign(out_.size(), Tensor());
  std::vector<const Tensor*> in;
  for (size_t i = 0; i < net_.steps.size(); ++i) {
    const PlanStep& s = net_.steps[i];
    if (alias_[i] >= 0) {
      cur_[i] = cur_[size_t(alias_[i])];
    } else {
      cur_[i] = out_[i].narrow_batch(n);
      if (s.is_input) {
        cur_[i].copy_from(x);
      } else {
        in.clear();
        for (int k : s.inputs) in.push_back(&cur_[size_t(k)]);
        if (!(hook && hook(i, in, cur_[i]))) layers_[i]->forward(in, cur_[i], ctx);
      }
    }
    if (observe) observe(int(i), cur_[i]);
  }
  return cur_.back();
}

}  // namespace quant_detail

struct QuantRunner::Impl {
  quant_detail::StepLoop loop;
  std::vector<Tensor> qin;  // fake-quantized inputs of quantized ops, at max_batch
  const QuantizedNetwork* q = nullptr;

  Impl(const QuantNetwork& n, int64_t mb) : loop(n, mb), qin(n.steps.size()) {}

  void load_quantized() {
    loop.load_float();
    const QuantNetwork& net = loop.net();
    for (const QuantOp& o : q->ops) {
      for (Param* p : loop.layer(size_t(o.step))->params()) {
        if (p->name != "weight") continue;
        const int64_t C = int64_t(o.weight.scale.size()), per = p->value.numel() / C;
        float* w = p->value.f32();
        for (int64_t c = 0; c < C; ++c)
          for (int64_t i = 0; i < per; ++i)
            w[c * per + i] =
                dequantize_value(o.weight.q[size_t(c * per + i)], o.weight.scale[size_t(c)]);
      }
      const PlanStep& in = net.steps[size_t(o.input_step)];
      if (!qin[size_t(o.step)].defined())
        qin[size_t(o.step)] = Tensor(in.out_shape.with_batch(loop.max_batch()));
    }
  }
};

QuantRunner::QuantRunner(const QuantNetwork& net, int64_t max_batch)
    : impl_(std::make_unique<Impl>(net, max_batch)) {}
QuantRunner::~QuantRunner() = default;

void QuantRunner::set_quantized(const QuantizedNetwork* q) {
  impl_->q = q;
  if (q)
    impl_->load_quantized();
  else
    impl_->loop.load_float();
}

const Tensor& QuantRunner::forward(const Tensor& x,
                                   const std::function<void(int, const Tensor&)>& observe) {
  Impl& m = *impl_;
  if (!m.q) return m.loop.forward(x, {}, observe);
  RunContext ctx{false, nullptr};
  return m.loop.forward(
      x,
      [&](size_t i, const std::vector<const Tensor*>& in, Tensor& out) {
        const QuantOp* op = m.q->op_for(int(i));
        if (!op) return false;
        // The QDQ pair on the op's (single) input, then the float layer
        // with the dequantized weights set_quantized loaded.
        Tensor staged = m.qin[i].narrow_batch(in[0]->dim(0));
        staged.copy_from(*in[0]);
        fake_quantize(staged.f32(), staged.numel(), op->input_scale);
        m.loop.layer(i)->forward({&staged}, out, ctx);
        return true;
      },
      observe);
}

std::vector<int64_t> calibration_indices(const Dataset& ds, int64_t count, uint64_t seed) {
  std::vector<int64_t> all = all_indices(ds.size());
  Rng rng(seed);
  for (size_t i = all.size(); i > 1; --i) std::swap(all[i - 1], all[size_t(rng.below(i))]);
  all.resize(size_t(std::min<int64_t>(count, ds.size())));
  if (all.empty()) throw Error("the calibration set is empty");
  // Ranges calibrated on one class describe that class's activations only,
  // and such a set is nearly always a mistake (--data naming one class's
  // folder), so it is refused rather than warned about.
  if (ds.num_classes > 1) {
    bool one = true;
    for (int64_t i : all) one = one && ds.labels[size_t(i)] == ds.labels[size_t(all[0])];
    if (one) {
      const int32_t c = ds.labels[size_t(all[0])];
      const std::string name = c >= 0 && size_t(c) < ds.class_names.size()
                                   ? "'" + ds.class_names[size_t(c)] + "'"
                                   : std::to_string(c);
      throw Error("the " + std::to_string(all.size()) + " calibration samples (" + ds.source +
                  ") are all of class " + name + ", one of " + std::to_string(ds.num_classes) +
                  " classes: ranges calibrated on them would not fit the others; calibrate on "
                  "samples of every class (the project's training set, or --data DIR)");
    }
  }
  return all;
}

namespace {

// Gathers batches of `indices` and runs `fn(x, n)` on each.
void for_batches(const Dataset& ds, const Shape& input, const std::vector<int64_t>& indices,
                 int64_t batch, const std::function<void(const Tensor&, const int32_t*)>& fn) {
  Tensor x(input.with_batch(batch));
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (size_t b = 0; b < indices.size(); b += size_t(batch)) {
    const int64_t n = std::min<int64_t>(batch, int64_t(indices.size() - b));
    Tensor xb = x.narrow_batch(n);
    const int64_t got = ds.gather(indices.data() + b, n, xb.f32(), labels.data(), 0);
    fn(x.narrow_batch(got), labels.data());
  }
}

int64_t argmax_row(const float* p, int64_t k) {
  return std::max_element(p, p + k) - p;
}

}  // namespace

QuantizedNetwork calibrate(const QuantNetwork& net, const Dataset& ds,
                           const std::vector<int64_t>& indices, const QuantizeOptions& o,
                           const std::function<void(int64_t, int64_t)>& progress) {
  QuantizedNetwork q;
  q.net = net;
  q.method = o.method;
  std::vector<int> observed(net.steps.size(), 0);  // 1: the input of a quantized op
  for (size_t i = 0; i < net.steps.size(); ++i) {
    const PlanStep& s = net.steps[i];
    if (s.is_input) continue;
    if (quantizable_type(s.type) && s.inputs.size() == 1) {
      observed[size_t(s.inputs[0])] = 1;
      continue;
    }
    bool weights = false;
    for (const auto& [name, t] : net.weights) weights = weights || name.rfind(s.name + ".", 0) == 0;
    if (weights) q.left_in_float.push_back(s.name + " (" + s.type + ")");
  }
  QuantRunner run(q.net, o.batch);
  std::vector<ActivationStats> stats(net.steps.size());
  const int64_t passes = o.method == CalibrationMethod::MinMax ? 1 : 2;
  const int64_t total = passes * int64_t(indices.size());
  int64_t done = 0;
  for (int64_t pass = 0; pass < passes; ++pass) {
    for_batches(
        ds, net.steps.front().out_shape, indices, o.batch, [&](const Tensor& x, const int32_t*) {
          run.forward(x, [&](int step, const Tensor& t) {
            const float* p = t.f32();
            if (pass == 0)
              for (int64_t k = 0; k < t.numel(); ++k)
                if (!std::isfinite(p[k])) {
                  const PlanStep& s = net.steps[size_t(step)];
                  throw Error("calibration: " + s.type + " '" + s.name +
                              "' produced NaN or infinite values on the calibration samples; the "
                              "checkpoint's weights or the input data are broken there (check "
                              "the training run's loss, and the data)");
                }
            if (!observed[size_t(step)]) return;
            if (pass == 0)
              stats[size_t(step)].add_range(p, t.numel());
            else
              stats[size_t(step)].add_histogram(p, t.numel());
          });
          done += x.dim(0);
          if (progress) progress(done, total);
        });
  }
  for (size_t i = 0; i < net.steps.size(); ++i) {
    const PlanStep& s = net.steps[i];
    if (s.is_input || !quantizable_type(s.type) || s.inputs.size() != 1) continue;
    QuantOp op;
    op.step = int(i);
    op.input_step = s.inputs[0];
    op.input_scale = symmetric_scale(
        float(calibrated_amax(stats[size_t(op.input_step)], o.method, o.percentile)));
    op.weight = quantize_per_channel(need(net.weights, s.name + ".weight"));
    q.ops.push_back(std::move(op));
  }
  return q;
}

QuantAccuracy evaluate_quantized(const QuantizedNetwork& q, const Dataset& ds,
                                 const std::vector<int64_t>& indices, int64_t batch) {
  const std::vector<int64_t> idx = indices_or_all(indices, ds.size());
  QuantRunner fp(q.net, batch), i8(q.net, batch);
  i8.set_quantized(&q);
  QuantAccuracy r;
  int64_t right_fp = 0, right_i8 = 0, same = 0;
  const int64_t k = q.net.steps.back().out_shape.numel();
  for_batches(ds, q.net.steps.front().out_shape, idx, batch,
              [&](const Tensor& x, const int32_t* labels) {
                const Tensor& a = fp.forward(x);
                const Tensor& b = i8.forward(x);
                for (int64_t n = 0; n < x.dim(0); ++n) {
                  const int64_t pa = argmax_row(a.f32() + n * k, k);
                  const int64_t pb = argmax_row(b.f32() + n * k, k);
                  right_fp += pa == labels[n];
                  right_i8 += pb == labels[n];
                  same += pa == pb;
                }
                r.samples += x.dim(0);
              });
  if (r.samples > 0) {
    r.fp32 = double(right_fp) / double(r.samples);
    r.int8 = double(right_i8) / double(r.samples);
    r.agreement = double(same) / double(r.samples);
  }
  return r;
}

GateAdvice quantization_gate_advice(CalibrationMethod used, int64_t calibrate) {
  GateAdvice a;
  for (CalibrationMethod m :
       {CalibrationMethod::Entropy, CalibrationMethod::Percentile, CalibrationMethod::MinMax})
    if (m != used) a.other_methods.push_back(calibration_name(m));
  a.more_samples = std::max<int64_t>(2 * calibrate, 512);
  return a;
}

}  // namespace dc
