#include <deepcanvas/errors.h>
#include <deepcanvas/metrics.h>
#include <deepcanvas/next_token.h>
#include <deepcanvas/probe.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace dc {

std::vector<float> softmax(const float* scores, int n) {
  std::vector<float> p(n);
  if (n == 0) return p;
  float mx = *std::max_element(scores, scores + n);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += p[i] = std::exp(scores[i] - mx);
  for (auto& v : p) v = float(v / sum);
  return p;
}

std::vector<SamplePrediction> predict_samples(Plan& plan, const Dataset& ds,
                                              const std::vector<int64_t>& indices) {
  const std::vector<int64_t> idx = indices_or_all(indices, ds.size());
  const int64_t batch = plan.max_batch();
  // A network that scores every step of a text is judged at its last step.
  const int64_t per_sample = plan.output_shape().numel();
  const int c = int(scored_classes(ds.sample_shape, plan.output_shape(), ds.tokens));
  Tensor x(plan.input_shape().with_batch(batch));
  std::vector<int32_t> labels(batch);
  RunContext ctx{false, nullptr};
  std::vector<SamplePrediction> out;
  out.reserve(idx.size());
  for (size_t b = 0; b < idx.size(); b += batch) {
    int64_t n = std::min<int64_t>(batch, int64_t(idx.size() - b));
    Tensor xb = x.narrow_batch(n);
    ds.gather(idx.data() + b, n, xb.f32(), labels.data());
    const Tensor& y = plan.forward(xb, ctx);
    for (int64_t i = 0; i < n; ++i) {
      const float* s = y.f32() + (i + 1) * per_sample - c;
      auto p = softmax(s, c);
      SamplePrediction sp;
      sp.index = idx[b + i];
      sp.label = labels[i];
      sp.predicted = argmax(s, c);
      sp.confidence = p[sp.predicted];
      sp.label_prob = sp.label >= 0 && sp.label < c ? p[sp.label] : 0.f;
      out.push_back(sp);
    }
  }
  return out;
}

struct ModelProbe::Step {
  PlanStep lowered;
  std::unique_ptr<Layer> layer;
  Tensor out, grad;  // [1, ...shape]
};

ModelProbe::~ModelProbe() = default;

ModelProbe::ModelProbe(const Graph& g, const std::vector<std::pair<std::string, Tensor>>& state,
                       const std::string& source) {
  std::map<std::string, const Tensor*> by_name;
  for (auto& [k, t] : state) by_name[k] = &t;
  for (PlanStep& ls : lower_graph(g)) {
    auto s = std::make_unique<Step>();
    s->layer = ls.desc->create(ls.attrs, ls.in_shapes, ls.out_shape);
    for (Param* p : s->layer->params()) {
      std::string full = ls.name + "." + p->name;
      auto it = by_name.find(full);
      if (it == by_name.end())
        throw IoError(source + ": has no tensor '" + full +
                      "'; it was made for a different network");
      if (it->second->shape() != p->value.shape())
        throw IoError(source + ": tensor '" + full + "' is " + it->second->shape().str(true) +
                      " but this network needs " + p->value.shape().str(true));
      p->value.copy_from(*it->second);
      // Layers accumulate parameter gradients in backward; they are unused here.
      if (!p->grad.defined()) p->grad = Tensor(p->value.shape());
    }
    s->out = Tensor(ls.out_shape.with_batch(1));
    s->grad = Tensor(ls.out_shape.with_batch(1));
    if (ls.is_input) input_shape_ = ls.out_shape;
    s->lowered = std::move(ls);
    steps_.push_back(std::move(s));
  }
  output_shape_ = steps_.back()->lowered.out_shape;
}

const Tensor& ModelProbe::forward(const Tensor& x) {
  if (x.shape() != input_shape_.with_batch(1))
    throw DataError("the input has shape " + x.shape().str(true) + " but the network expects " +
                    input_shape_.with_batch(1).str(true));
  RunContext ctx{false, nullptr};
  std::vector<const Tensor*> ins;
  for (auto& s : steps_) {
    if (s->lowered.is_input) {
      s->out.copy_from(x);
      continue;
    }
    ins.clear();
    for (int i : s->lowered.inputs) ins.push_back(&steps_[size_t(i)]->out);
    s->layer->forward(ins, s->out, ctx);
  }
  return steps_.back()->out;
}

Tensor ModelProbe::input_gradient(int cls) {
  if (cls < 0 || cls >= output_shape_.numel())
    throw Error("class " + std::to_string(cls) + " is outside the network's " +
                std::to_string(output_shape_.numel()) + " outputs");
  for (auto& s : steps_) s->grad.zero();
  steps_.back()->grad.f32()[cls] = 1.f;
  RunContext ctx{false, nullptr};
  std::vector<const Tensor*> ins;
  std::vector<Tensor*> dins;
  for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) {
    Step& s = **it;
    if (s.lowered.is_input) continue;
    ins.clear();
    dins.clear();
    for (int i : s.lowered.inputs) {
      ins.push_back(&steps_[size_t(i)]->out);
      dins.push_back(&steps_[size_t(i)]->grad);
    }
    s.layer->backward(ins, s.out, s.grad, dins, ctx);
  }
  for (auto& s : steps_)
    if (s->lowered.is_input) return s->grad.clone();
  throw GraphError("the network has no Input layer");
}

std::vector<ModelProbe::LayerOutput> ModelProbe::activations() const {
  std::vector<LayerOutput> v;
  for (auto& s : steps_) v.push_back({s->lowered.id, s->lowered.name, s->lowered.type, &s->out});
  return v;
}

}  // namespace dc
