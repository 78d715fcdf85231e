#include <deepcanvas/errors.h>
#include <deepcanvas/metrics.h>
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
  std::vector<int64_t> idx = indices;
  if (idx.empty())
    for (int64_t i = 0; i < ds.size(); ++i) idx.push_back(i);
  const int64_t batch = plan.max_batch();
  const int c = int(plan.output_shape().numel());
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
      const float* s = y.f32() + i * c;
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
  NodeId id;
  std::string name, type;
  std::unique_ptr<Layer> layer;
  std::vector<int> inputs;
  Tensor out, grad;  // [1, ...shape]
  bool is_input = false;
};

ModelProbe::~ModelProbe() = default;

ModelProbe::ModelProbe(const Graph& g, const std::vector<std::pair<std::string, Tensor>>& state,
                       const std::string& source) {
  register_builtin_layers();
  g.validate();
  auto shapes = g.infer_shapes();
  std::map<std::string, const Tensor*> by_name;
  for (auto& [k, t] : state) by_name[k] = &t;
  std::map<NodeId, int> index;
  for (NodeId id : g.topo_order()) {
    const Node& n = g.node(id);
    auto s = std::make_unique<Step>();
    s->id = id;
    s->name = n.name;
    s->type = n.type;
    s->is_input = is_input_type(n.type);
    const Shape& out_shape = *shapes.at(id).shape;
    std::vector<Shape> in_shapes;
    for (const Edge& e : g.in_edges(id)) {
      s->inputs.push_back(index.at(e.src));
      in_shapes.push_back(steps_[index.at(e.src)]->out.shape().without_batch());
    }
    s->layer = LayerRegistry::instance().get(n.type).create(n.attrs, in_shapes, out_shape);
    for (Param* p : s->layer->params()) {
      std::string full = n.name + "." + p->name;
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
    s->out = Tensor(out_shape.with_batch(1));
    s->grad = Tensor(out_shape.with_batch(1));
    if (s->is_input) input_shape_ = out_shape;
    index[id] = int(steps_.size());
    steps_.push_back(std::move(s));
  }
  output_shape_ = steps_.back()->out.shape().without_batch();
}

const Tensor& ModelProbe::forward(const Tensor& x) {
  if (x.shape() != input_shape_.with_batch(1))
    throw DataError("the input has shape " + x.shape().str(true) + " but the network expects " +
                    input_shape_.with_batch(1).str(true));
  RunContext ctx{false, nullptr};
  std::vector<const Tensor*> ins;
  for (auto& s : steps_) {
    if (s->is_input) {
      s->out.copy_from(x);
      continue;
    }
    ins.clear();
    for (int i : s->inputs) ins.push_back(&steps_[i]->out);
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
    if (s.is_input) continue;
    ins.clear();
    dins.clear();
    for (int i : s.inputs) {
      ins.push_back(&steps_[i]->out);
      dins.push_back(&steps_[i]->grad);
    }
    s.layer->backward(ins, s.out, s.grad, dins, ctx);
  }
  for (auto& s : steps_)
    if (s->is_input) return s->grad.clone();
  throw GraphError("the network has no Input layer");
}

std::vector<ModelProbe::LayerOutput> ModelProbe::activations() const {
  std::vector<LayerOutput> v;
  for (auto& s : steps_) v.push_back({s->id, s->name, s->type, &s->out});
  return v;
}

}  // namespace dc
