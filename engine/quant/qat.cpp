// Quantization-aware fine-tuning: the folded network with QuantRunner's QDQ
// arithmetic in its forward, a straight-through weight gradient and LSQ's
// learned input scales, and the checkpoint that keeps those scales.
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/next_token.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/qat.h>
#include <deepcanvas/rng.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

namespace dc {

namespace {

const Tensor& need(const std::map<std::string, Tensor>& w, const std::string& name) {
  auto it = w.find(name);
  if (it == w.end()) throw Error("quantization-aware training: no tensor '" + name + "'");
  return it->second;
}

// The smallest scale a step may leave: ONNX requires scale > 0, and LSQ's
// update can overshoot zero when a gradient is large.
constexpr float kMinScale = 1e-8f;

}  // namespace

struct QatNetwork::Impl {
  QuantizedNetwork q;
  int64_t max_batch;
  std::vector<std::unique_ptr<Layer>> layers;  // null for inputs
  std::vector<int> op_of;                      // step -> index into q.ops, or -1
  std::vector<Tensor> out, grad;               // per step, at max_batch
  std::vector<Tensor> staged, dstaged;         // quantized ops' fake-quantized inputs
  std::vector<Tensor> cur, gcur;               // views for the current batch
  std::vector<Param> latent;                   // per op: the float weight
  std::vector<Param> scale;                    // per op: the input scale, {1}
  std::vector<Param*> weight_layer_param;      // per op: its layer's "weight"
  std::vector<float> grad_factor;              // per op: LSQ's 1 / sqrt(features · Qp)
  int64_t n = 0;
  Rng rng;

  // The weight the forward uses: per channel from the latent weight's
  // current amax, as quantize_per_channel and QuantRunner do.
  void quantize_weights() {
    for (size_t k = 0; k < q.ops.size(); ++k) {
      const ChannelQuant c = quantize_per_channel(latent[k].value);
      Tensor& w = weight_layer_param[k]->value;
      const int64_t C = int64_t(c.scale.size()), per = w.numel() / C;
      float* p = w.f32();
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t i = 0; i < per; ++i)
          p[ch * per + i] = dequantize_value(c.q[size_t(ch * per + i)], c.scale[size_t(ch)]);
    }
  }
};

QatNetwork::QatNetwork(const QuantizedNetwork& q, int64_t max_batch)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.q = q;
  m.max_batch = max_batch;
  const std::vector<PlanStep>& steps = m.q.net.steps;
  m.op_of.assign(steps.size(), -1);
  for (size_t k = 0; k < m.q.ops.size(); ++k) m.op_of[size_t(m.q.ops[k].step)] = int(k);
  m.staged.resize(steps.size());
  m.dstaged.resize(steps.size());
  m.latent.resize(m.q.ops.size());
  m.scale.resize(m.q.ops.size());
  m.weight_layer_param.resize(m.q.ops.size(), nullptr);
  m.grad_factor.resize(m.q.ops.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    const PlanStep& s = steps[i];
    m.out.emplace_back(s.out_shape.with_batch(max_batch));
    m.grad.emplace_back(s.out_shape.with_batch(max_batch));
    if (s.is_input) {
      m.layers.emplace_back();
      continue;
    }
    m.layers.push_back(s.desc->create(s.attrs, s.in_shapes, s.out_shape));
    for (Param* p : m.layers.back()->params()) {
      const std::string name = s.name + "." + p->name;
      const Tensor& t = need(m.q.net.weights, name);
      if (t.numel() != p->value.numel())
        throw Error("quantization-aware training: tensor '" + name +
                    "' has another size than its layer");
      p->value.copy_from(t);
    }
    const int k = m.op_of[i];
    if (k < 0) continue;
    const PlanStep& in = steps[size_t(s.inputs.at(0))];
    m.staged[i] = Tensor(in.out_shape.with_batch(max_batch));
    m.dstaged[i] = Tensor(in.out_shape.with_batch(max_batch));
    for (Param* p : m.layers.back()->params())
      if (p->name == "weight") m.weight_layer_param[size_t(k)] = p;
    Param* w = m.weight_layer_param[size_t(k)];
    if (!w || !w->grad.defined())
      throw Error("quantization-aware training: " + s.type + " '" + s.name +
                  "' has no trainable weight");
    Param& lat = m.latent[size_t(k)];
    lat.name = "weight";
    lat.value = w->value.clone();
    lat.grad = w->grad;  // shared: the straight-through estimator
    Param& sc = m.scale[size_t(k)];
    sc.name = "input_scale";
    sc.value = Tensor::from(Shape{1}, {m.q.ops[size_t(k)].input_scale});
    sc.grad = Tensor(Shape{1});
    sc.decay = false;
    m.grad_factor[size_t(k)] = float(1.0 / std::sqrt(double(in.out_shape.numel()) * double(kQMax)));
  }
}

QatNetwork::~QatNetwork() = default;

float QatNetwork::scale_grad_factor(size_t k) const {
  return impl_->grad_factor.at(k);
}

const Tensor& QatNetwork::forward(const Tensor& x, bool training, uint64_t dropout_seed) {
  Impl& m = *impl_;
  const int64_t n = x.dim(0);
  if (n > m.max_batch)
    throw Error("quantization-aware training: a batch larger than the network's");
  m.n = n;
  m.quantize_weights();
  m.rng.reseed(dropout_seed);
  // frozen: the BatchNorms that were not folded keep their running
  // statistics, as they run in the exported model.
  RunContext ctx{training, &m.rng, true};
  const std::vector<PlanStep>& steps = m.q.net.steps;
  m.cur.assign(steps.size(), Tensor());
  std::vector<const Tensor*> in;
  for (size_t i = 0; i < steps.size(); ++i) {
    const PlanStep& s = steps[i];
    m.cur[i] = m.out[i].narrow_batch(n);
    if (s.is_input) {
      m.cur[i].copy_from(x);
      continue;
    }
    in.clear();
    const int k = m.op_of[i];
    if (k >= 0) {
      Tensor st = m.staged[i].narrow_batch(n);
      st.copy_from(m.cur[size_t(s.inputs[0])]);
      fake_quantize(st.f32(), st.numel(), m.scale[size_t(k)].value.f32()[0]);
      m.layers[i]->forward({&st}, m.cur[i], ctx);
      continue;
    }
    for (int j : s.inputs) in.push_back(&m.cur[size_t(j)]);
    m.layers[i]->forward(in, m.cur[i], ctx);
  }
  return m.cur.back();
}

void QatNetwork::backward(const Tensor& dout, Tensor* dinput) {
  Impl& m = *impl_;
  const int64_t n = m.n;
  const std::vector<PlanStep>& steps = m.q.net.steps;
  if (dout.numel() != m.cur.back().numel())
    throw Error("quantization-aware training: the output gradient has another size");
  m.gcur.assign(steps.size(), Tensor());
  for (size_t i = 0; i < steps.size(); ++i) {
    m.gcur[i] = m.grad[i].narrow_batch(n);
    m.gcur[i].zero();
  }
  m.gcur.back().copy_from(dout);
  RunContext ctx{true, &m.rng, true};
  std::vector<const Tensor*> in;
  std::vector<Tensor*> din;
  for (size_t i = steps.size(); i-- > 0;) {
    const PlanStep& s = steps[i];
    if (s.is_input) continue;
    in.clear();
    din.clear();
    const int k = m.op_of[i];
    if (k >= 0) {
      const Tensor st = m.staged[i].narrow_batch(n);
      Tensor dst = m.dstaged[i].narrow_batch(n);
      dst.zero();
      m.layers[i]->backward({&st}, m.cur[i], m.gcur[i], {&dst}, ctx);
      // LSQ: with v = x / s, q = s · clamp(round(v), Qn, Qp). Inside the
      // range the rounding passes the gradient straight through (dq/dx =
      // 1, dq/ds = round(v) - v); outside, q is s · Qn or s · Qp (dq/dx =
      // 0, dq/ds = Qn or Qp).
      const int j = s.inputs[0];
      const Tensor& x = m.cur[size_t(j)];
      Tensor& dx = m.gcur[size_t(j)];
      const float sv = m.scale[size_t(k)].value.f32()[0];
      const float* xp = x.f32();
      const float* dq = dst.f32();
      float* dxp = dx.f32();
      double ds = 0;
      for (int64_t e = 0; e < x.numel(); ++e) {
        const float v = xp[e] / sv;
        if (std::isnan(v)) continue;
        if (v <= float(kQMin)) {
          ds += double(dq[e]) * kQMin;
        } else if (v >= float(kQMax)) {
          ds += double(dq[e]) * kQMax;
        } else {
          dxp[e] += dq[e];
          ds += double(dq[e]) * (double(std::nearbyint(v)) - double(v));
        }
      }
      m.scale[size_t(k)].grad.f32()[0] += float(ds * m.grad_factor[size_t(k)]);
      continue;
    }
    for (int j : s.inputs) {
      in.push_back(&m.cur[size_t(j)]);
      din.push_back(steps[size_t(j)].is_input && !dinput ? nullptr : &m.gcur[size_t(j)]);
    }
    m.layers[i]->backward(in, m.cur[i], m.gcur[i], din, ctx);
  }
  if (dinput) dinput->copy_from(m.gcur.front());
}

void QatNetwork::zero_grad() {
  for (auto& l : impl_->layers)
    if (l)
      for (Param* p : l->params())
        if (p->grad.defined()) p->grad.zero();
  for (Param& s : impl_->scale) s.grad.zero();
}

std::vector<Param*> QatNetwork::weight_params() {
  Impl& m = *impl_;
  std::vector<Param*> r;
  for (size_t i = 0; i < m.layers.size(); ++i) {
    if (!m.layers[i]) continue;
    const int k = m.op_of[i];
    for (Param* p : m.layers[i]->params()) {
      if (k >= 0 && p == m.weight_layer_param[size_t(k)])
        r.push_back(&m.latent[size_t(k)]);
      else if (p->trainable && p->grad.defined())
        r.push_back(p);
    }
  }
  return r;
}

std::vector<Param*> QatNetwork::scale_params() {
  std::vector<Param*> r;
  for (Param& s : impl_->scale) r.push_back(&s);
  return r;
}

QuantizedNetwork QatNetwork::quantized() const {
  const Impl& m = *impl_;
  QuantizedNetwork r;
  r.net.steps = m.q.net.steps;
  r.net.folded = m.q.net.folded;
  r.left_in_float = m.q.left_in_float;
  r.method = m.q.method;
  r.ops = m.q.ops;
  for (size_t i = 0; i < m.layers.size(); ++i) {
    if (!m.layers[i]) continue;
    const int k = m.op_of[i];
    for (Param* p : m.layers[i]->params()) {
      const std::string name = m.q.net.steps[i].name + "." + p->name;
      const bool w = k >= 0 && p == m.weight_layer_param[size_t(k)];
      r.net.weights[name] = (w ? m.latent[size_t(k)].value : p->value).clone();
    }
  }
  for (size_t k = 0; k < r.ops.size(); ++k) {
    QuantOp& op = r.ops[k];
    op.input_scale = m.scale[k].value.f32()[0];
    op.weight = quantize_per_channel(m.latent[k].value);
  }
  return r;
}

namespace {

// The test set's accuracy, fp32 and simulated int8, as the export's gate
// measures it.
QuantAccuracy measure(const QatNetwork& net, const Dataset& test) {
  if (test.size() == 0) return {};
  return evaluate_quantized(net.quantized(), test, {}, 64);
}

}  // namespace

QuantizedNetwork train_qat(const QuantizedNetwork& start, const Dataset& train, const Dataset& test,
                           const QatOptions& o,
                           const std::function<void(const QatEpoch&)>& on_epoch,
                           const std::function<void(int64_t, int64_t)>& progress,
                           const std::function<bool()>& cancelled, bool* was_cancelled) {
  if (was_cancelled) *was_cancelled = false;
  if (train.size() == 0) throw Error("quantization-aware training: the training set is empty");
  if (o.batch < 1 || o.epochs < 0) throw Error("quantization-aware training: bad batch or epochs");
  if (scores_every_step(train, start.net.steps.back().out_shape))
    throw Error(
        "quantization-aware training: this network predicts the next token at every step of a "
        "text; quantization covers classifiers that give one prediction per sample");
  QatNetwork net(start, o.batch);
  const std::vector<Param*> weights = net.weight_params();
  const std::vector<Param*> scales = net.scale_params();
  std::unique_ptr<Optimizer> opt = make_optimizer(o.optimizer);
  // Adam's step is about lr whatever the gradient's size, so a scale (often
  // 0.01 to 0.1, or 2 where an outlier set it) would move by a fixed amount
  // each step, too much for small scales and far too little for large
  // ones: its learning rate is lr · scale_lr_factor times its current
  // value, so each step changes it by a share of itself. SGD keeps LSQ's
  // own gradient scaling and the plain lr. Each scale has its own
  // optimizer, so its moments are its own.
  OptimizerConfig sc = o.optimizer;
  sc.weight_decay = 0;
  const bool adaptive = o.optimizer.type != OptimizerType::Sgd;
  std::vector<std::unique_ptr<Optimizer>> scale_opt;
  for (size_t k = 0; k < scales.size(); ++k) scale_opt.push_back(make_optimizer(sc));
  std::unique_ptr<Loss> loss = make_loss(o.loss, float(o.label_smoothing));
  const Shape in_shape = start.net.steps.front().out_shape;
  Tensor x(in_shape.with_batch(o.batch));
  Tensor dout(start.net.steps.back().out_shape.with_batch(o.batch));
  std::vector<int32_t> labels(size_t(o.batch));
  std::vector<int64_t> order;
  int64_t per_epoch = (train.size() + o.batch - 1) / o.batch;
  if (o.steps_per_epoch_limit > 0) per_epoch = std::min(per_epoch, o.steps_per_epoch_limit);
  const int64_t total = per_epoch * o.epochs;
  int64_t step = 0;

  QatEpoch e0;
  e0.epochs = o.epochs;
  e0.train_loss = std::numeric_limits<double>::quiet_NaN();
  e0.test = measure(net, test);
  if (on_epoch) on_epoch(e0);
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    order = all_indices(train.size());
    Rng rng(o.seed * 1000003ull + uint64_t(epoch));
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[size_t(rng.below(i))]);
    double sum = 0;
    int64_t batches = 0;
    for (int64_t b = 0; b < per_epoch; ++b) {
      if (cancelled && cancelled()) {
        if (was_cancelled) *was_cancelled = true;
        return net.quantized();
      }
      const int64_t first = b * o.batch;
      const int64_t want = std::min<int64_t>(o.batch, train.size() - first);
      Tensor xb = x.narrow_batch(want);
      const int64_t n = train.gather(order.data() + first, want, xb.f32(), labels.data(), 0);
      if (n == 0) continue;
      const Tensor& y = net.forward(x.narrow_batch(n), true, o.seed * 7919ull + uint64_t(step));
      Tensor dy = dout.narrow_batch(n);
      Targets t;
      t.labels = labels.data();
      const float l = loss->compute(y, t, dy);
      if (!std::isfinite(l))
        throw Error("quantization-aware training: the loss is not finite at step " +
                    std::to_string(step + 1) + "; lower the learning rate (--lr)");
      net.zero_grad();
      net.backward(dy);
      opt->step(weights, o.optimizer.lr);
      for (size_t k = 0; k < scales.size(); ++k) {
        float& s = scales[k]->value.f32()[0];
        scale_opt[k]->step({scales[k]}, adaptive ? o.optimizer.lr * o.scale_lr_factor * double(s)
                                                 : o.optimizer.lr);
        if (!(s > kMinScale)) s = kMinScale;
      }
      sum += l;
      ++batches;
      ++step;
      if (progress) progress(step, total);
    }
    QatEpoch e;
    e.epoch = epoch;
    e.epochs = o.epochs;
    e.train_loss = batches > 0 ? sum / double(batches) : std::numeric_limits<double>::quiet_NaN();
    e.test = measure(net, test);
    if (on_epoch) on_epoch(e);
  }
  return net.quantized();
}

// ---- The checkpoint ---------------------------------------------------------

namespace {

using json = nlohmann::json;

constexpr const char* kQatFormat = "deepcanvas-qat";
constexpr int kQatVersion = 1;

bool is_batch_norm(const std::string& type) {
  return type == "BatchNorm2D" || type == "BatchNorm1D";
}

// The variance that makes fold_batch_norms' factor float(1 / sqrt(var +
// eps) · 1) exactly 1: 1 - eps, nudged by ulps where rounding misses.
float identity_variance(double eps) {
  float v = float(1.0 - eps);
  for (int i = 0; i < 64; ++i) {
    const float s = float(1.0 / std::sqrt(double(v) + eps) * 1.0);
    if (s == 1.0f) return v;
    v = std::nextafter(v, s > 1.0f ? std::numeric_limits<float>::infinity() : 0.0f);
  }
  throw Error("quantization-aware training: no BatchNorm variance folds to 1 for eps " +
              std::to_string(eps));
}

// The quantized ops fold_batch_norms' network has, in order: what the
// metadata must name.
std::vector<int> expected_ops(const QuantNetwork& net) {
  std::vector<int> r;
  for (size_t i = 0; i < net.steps.size(); ++i) {
    const PlanStep& s = net.steps[i];
    if (!s.is_input && quantizable_type(s.type) && s.inputs.size() == 1) r.push_back(int(i));
  }
  return r;
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> qat_unfolded_state(
    const std::vector<PlanStep>& steps, const std::vector<std::pair<std::string, Tensor>>& state,
    const QuantizedNetwork& q) {
  std::set<std::string> kept;
  for (const PlanStep& s : q.net.steps) kept.insert(s.name);
  std::set<std::string> names;
  for (const auto& [name, t] : state) names.insert(name);
  // bn name -> (its convolution, its eps)
  std::map<std::string, std::pair<std::string, double>> folded;
  for (const PlanStep& s : steps)
    if (is_batch_norm(s.type) && s.inputs.size() == 1 && !kept.count(s.name))
      folded[s.name] = {steps[size_t(s.inputs[0])].name, s.attrs.f("eps")};
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, t] : state) {
    const size_t dot = name.rfind('.');
    const std::string layer = name.substr(0, dot), field = name.substr(dot + 1);
    auto f = folded.find(layer);
    if (f != folded.end()) {
      const std::string& conv = f->second.first;
      Tensor v(t.shape());
      if (field == "weight") {
        v.fill(1.0f);
      } else if (field == "bias") {
        // The folded bias lives here when the convolution has none.
        if (!names.count(conv + ".bias")) v.copy_from(need(q.net.weights, conv + ".bias"));
      } else if (field == "running_var") {
        v.fill(identity_variance(f->second.second));
      } else if (field != "running_mean") {
        v = t.clone();
      }
      out.emplace_back(name, v);
      continue;
    }
    auto w = q.net.weights.find(name);
    if (w == q.net.weights.end()) {
      out.emplace_back(name, t.clone());
      continue;
    }
    if (w->second.shape() != t.shape())
      throw Error("quantization-aware training: tensor '" + name + "' changed its shape");
    out.emplace_back(name, w->second.clone());
  }
  // What export and run --int8 will compute from this file.
  const QuantNetwork again = fold_batch_norms(steps, out);
  bool same = again.weights.size() == q.net.weights.size();
  for (const auto& [name, t] : q.net.weights) {
    auto it = again.weights.find(name);
    same = same && it != again.weights.end() && it->second.numel() == t.numel() &&
           std::equal(t.f32(), t.f32() + t.numel(), it->second.f32());
    if (!same) break;
  }
  if (!same)
    throw Error(
        "quantization-aware training: the fine-tuned weights would not fold back exactly from a "
        "checkpoint; nothing written");
  return out;
}

std::string qat_metadata_json(const QuantizedNetwork& q, const std::string& source_checkpoint,
                              int epochs) {
  json ops = json::array();
  for (const QuantOp& o : q.ops)
    ops.push_back({{"layer", q.net.steps[size_t(o.step)].name},
                   {"type", q.net.steps[size_t(o.step)].type},
                   {"input", q.net.steps[size_t(o.input_step)].name},
                   {"input_scale", double(o.input_scale)}});
  json j = {{"format", kQatFormat},
            {"version", kQatVersion},
            {"scheme",
             "int8 symmetric (zero point 0): inputs per tensor in [-128, 127] with learned "
             "scales, weights per output channel in [-127, 127] from the folded weights"},
            {"calibration", calibration_name(q.method)},
            {"epochs", epochs},
            {"folded", q.net.folded},
            {"ops", ops}};
  if (!source_checkpoint.empty()) j["source_checkpoint"] = source_checkpoint;
  return j.dump();
}

void write_qat_checkpoint(const std::string& path, const std::vector<PlanStep>& steps,
                          const std::vector<std::pair<std::string, Tensor>>& fp32_state,
                          const QuantizedNetwork& q, std::map<std::string, std::string> base,
                          const std::string& source_checkpoint, int epochs,
                          double int8_test_accuracy) {
  const auto tensors = qat_unfolded_state(steps, fp32_state, q);
  base["format"] = "deepcanvas-checkpoint";
  base["format_version"] = std::to_string(kCheckpointFormatVersion);
  base["step"] = "0";
  // Every tensor was fine-tuned, whatever the fp32 run froze.
  base.erase("frozen_params");
  base.erase("test_accuracy");
  if (std::isfinite(int8_test_accuracy)) base["test_accuracy"] = std::to_string(int8_test_accuracy);
  base[kQatMetadataKey] = qat_metadata_json(q, source_checkpoint, epochs);
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  save_safetensors(path, tensors, base);
}

bool is_qat_checkpoint(const std::map<std::string, std::string>& metadata) {
  return metadata.count(kQatMetadataKey) > 0;
}

QuantizedNetwork load_qat_scales(const std::map<std::string, std::string>& metadata,
                                 const QuantNetwork& net, const std::string& path) {
  auto it = metadata.find(kQatMetadataKey);
  if (it == metadata.end())
    throw Error(path +
                " is not a quantization-aware training checkpoint (its metadata has no \"qat\" "
                "entry)");
  const json j = json::parse(it->second, nullptr, false);
  if (!j.is_object() || j.value("format", "") != kQatFormat || !j.contains("ops") ||
      !j["ops"].is_array())
    throw Error(path + ": the \"qat\" metadata is damaged (not a deepcanvas-qat object)");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"] != kQatVersion)
    throw Error(path + ": the \"qat\" metadata is of version " +
                (j.contains("version") ? j["version"].dump() : std::string("?")) +
                "; this DeepCanvas reads version " + std::to_string(kQatVersion));
  const std::vector<int> want = expected_ops(net);
  const json& ops = j["ops"];
  auto layers_text = [&] {
    std::string s;
    for (int i : want) s += (s.empty() ? "" : ", ") + net.steps[size_t(i)].name;
    return s.empty() ? std::string("none") : s;
  };
  if (ops.size() != want.size())
    throw Error(path + ": its int8 scales were learned for another network (" +
                std::to_string(ops.size()) + " quantized layers; this one has " +
                std::to_string(want.size()) + ": " + layers_text() + ")");
  QuantizedNetwork q;
  q.net = net;
  q.method =
      parse_calibration(j.value("calibration", "minmax")).value_or(CalibrationMethod::MinMax);
  for (size_t k = 0; k < want.size(); ++k) {
    const PlanStep& s = net.steps[size_t(want[k])];
    const json& o = ops[k];
    const std::string layer = o.is_object() ? o.value("layer", "") : "";
    const std::string type = o.is_object() ? o.value("type", "") : "";
    const std::string input = o.is_object() ? o.value("input", "") : "";
    const std::string in_name = net.steps[size_t(s.inputs[0])].name;
    if (layer != s.name || type != s.type || input != in_name)
      throw Error(path + ": its int8 scales were learned for another network (it names " + type +
                  " '" + layer + "' reading '" + input + "' where this one has " + s.type + " '" +
                  s.name + "' reading '" + in_name + "')");
    const double sc = o.contains("input_scale") && o["input_scale"].is_number()
                          ? o["input_scale"].get<double>()
                          : -1.0;
    if (!(sc > 0) || !std::isfinite(sc))
      throw Error(path + ": the learned input scale of '" + layer +
                  "' is not a positive finite number");
    QuantOp op;
    op.step = want[k];
    op.input_step = s.inputs[0];
    op.input_scale = float(sc);
    op.weight = quantize_per_channel(need(net.weights, s.name + ".weight"));
    q.ops.push_back(std::move(op));
  }
  // As calibrate() names them: layers with weights and no int8 form.
  for (const PlanStep& s : net.steps) {
    if (s.is_input || (quantizable_type(s.type) && s.inputs.size() == 1)) continue;
    bool weights = false;
    for (const auto& [name, t] : net.weights) weights = weights || name.rfind(s.name + ".", 0) == 0;
    if (weights) q.left_in_float.push_back(s.name + " (" + s.type + ")");
  }
  return q;
}

}  // namespace dc
