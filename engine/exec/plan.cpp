#include <deepcanvas/blocks.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/plan.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <set>

namespace dc {

std::vector<PlanStep> lower_graph(const Graph& g) {
  register_builtin_layers();
  // Training, the exports and the summaries all lower here: they see the
  // blocks' layers, never a Block node.
  if (has_block_nodes(g)) return lower_graph(flatten_blocks(g));
  g.validate();
  const auto shapes = g.infer_shapes();
  std::vector<PlanStep> steps;
  std::map<NodeId, int> index;
  for (NodeId id : g.topo_order()) {
    const Node& n = g.node(id);
    PlanStep s;
    s.id = id;
    s.name = n.name;
    s.type = n.type;
    s.label = node_label(n);
    s.desc = &LayerRegistry::instance().get(n.type);
    s.attrs = s.desc->with_defaults(n.attrs);
    s.out_shape = *shapes.at(id).shape;
    s.is_input = is_input_type(n.type);
    s.frozen = !n.trainable;
    // in_edges comes sorted by port, which is the order layers take inputs in.
    for (const Edge& e : g.in_edges(id)) {
      s.inputs.push_back(index.at(e.src));
      s.in_shapes.push_back(steps[size_t(index.at(e.src))].out_shape);
    }
    index[id] = int(steps.size());
    steps.push_back(std::move(s));
  }
  // validate() allows exactly one node without consumers, and nothing after
  // it in topological order can feed it, so it must come last.
  if (steps.empty() || steps.back().id != g.outputs().at(0))
    throw GraphError("internal: output node is not last in the plan");
  return steps;
}

bool input_is_tokens(const std::vector<PlanStep>& steps) {
  for (const PlanStep& s : steps)
    if (s.is_input) return is_token_input(s.type, s.attrs);
  return false;
}

std::vector<int> relu_fusions_into(const std::vector<PlanStep>& steps,
                                   const std::function<bool(int)>& folds) {
  std::vector<int> consumers(steps.size(), 0), fused(steps.size(), -1);
  for (const PlanStep& s : steps)
    for (int i : s.inputs) ++consumers[size_t(i)];
  for (size_t j = 0; j < steps.size(); ++j) {
    const PlanStep& s = steps[j];
    if ((s.type != "ReLU" && s.type != "ReLU6") || s.inputs.size() != 1) continue;
    const int i = s.inputs[0];
    if (!steps[size_t(i)].is_input && folds(i) && consumers[size_t(i)] == 1) fused[j] = i;
  }
  return fused;
}

std::vector<int> relu_fusions(const std::vector<PlanStep>& steps) {
  return relu_fusions_into(steps, [&](int i) {
    const std::string& t = steps[size_t(i)].type;
    return t == "BatchNorm2D" || t == "BatchNorm1D" || t == "Add" || t == "Conv2D";
  });
}

namespace {
// Where the inference pool's buffer k starts in its allocation: k * 320
// bytes (mod 16). Large allocations all start at the same offset within a
// page, so without it a layer's output lay a multiple of 4 KiB from its
// input, and loops reading one while writing the other stalled on false
// load-store dependences (4K aliasing): the shared buffers ran 5 % slower
// than a training plan's separate ones (EfficientNet-Lite0 at batch 16)
// until they were staggered. Staggering a training plan's buffers changed
// nothing measurable, so they are left as they are.
int64_t stagger(size_t k) {
  return int64_t(k % 16) * 80;
}
}  // namespace

std::vector<bool> backward_reach(const std::vector<PlanStep>& steps, bool ignore_frozen) {
  std::vector<bool> reach(steps.size(), false);
  for (size_t i = 0; i < steps.size(); ++i) {
    const PlanStep& s = steps[i];
    bool r = !s.is_input && (ignore_frozen || !s.frozen) &&
             s.desc->cost(s.in_shapes, s.out_shape, s.attrs).params > 0;
    for (int j : s.inputs) r = r || reach[size_t(j)];
    reach[i] = r;
  }
  return reach;
}

struct Plan::Step {
  const PlanStep* lowered = nullptr;
  std::unique_ptr<Layer> layer;
  Tensor out_buf, grad_buf;          // [max_batch, ...out_shape]
  Tensor out, grad;                  // views for the current batch
  bool needs_grad = false;           // whether anything upstream has trainable parameters
  bool needs_grad_unfrozen = false;  // the same if nothing were frozen (for savings)
  bool input_grad_unfrozen = false;  // an input would need a gradient if nothing were frozen
  bool grad_ready = false;           // grad zeroed (or seeded) for this backward pass
  // A ReLU fused into its producer: runs nothing, its output is the
  // producer's buffer. The producer then takes this step's gradient.
  int fused_into = -1;
  int fused_relu = -1;  // on the producer: the ReLU step fused into it
  const std::vector<int>& inputs() const { return lowered->inputs; }
  bool is_input() const { return lowered->is_input; }
};

Plan::~Plan() = default;

Plan::Plan(const Graph& g, int64_t max_batch, Use use) : max_batch_(max_batch), use_(use) {
  if (max_batch < 1) throw Error("batch size must be at least 1");
  lowered_ = lower_graph(g);
  // A frozen node's parameters are not trainable and get no gradient
  // buffer; its kernels then skip their parameter gradients. So backward
  // stops below the first trainable layer when everything before it is
  // frozen: nothing there needs a gradient.
  const std::vector<bool> reach = backward_reach(lowered_);
  const std::vector<bool> reach_unfrozen = backward_reach(lowered_, true);
  for (const PlanStep& ls : lowered_) {
    const size_t k = steps_.size();
    auto s = std::make_unique<Step>();
    s->lowered = &ls;
    s->layer = ls.desc->create(ls.attrs, ls.in_shapes, ls.out_shape);
    s->needs_grad = reach[k];
    s->needs_grad_unfrozen = reach_unfrozen[k];
    for (int i : ls.inputs)
      s->input_grad_unfrozen = s->input_grad_unfrozen || reach_unfrozen[size_t(i)];
    for (Param* p : s->layer->params()) {
      const bool frozen = ls.frozen && p->trainable;
      if (ls.frozen) {
        p->trainable = false;
        p->grad = Tensor();
      } else if (p->trainable && !p->grad.defined()) {
        p->grad = Tensor(p->value.shape());
      }
      params_.push_back({ls.name + "." + p->name, p, frozen});
    }
    if (ls.is_input) input_shape_ = ls.out_shape;
    steps_.push_back(std::move(s));
  }
  output_shape_ = lowered_.back().out_shape;
  const std::vector<int> fused = relu_fusions(lowered_);
  for (size_t j = 0; j < steps_.size(); ++j) {
    const int i = fused[j];
    const float cap = lowered_[j].type == "ReLU6" ? 6.0f : std::numeric_limits<float>::infinity();
    if (i < 0 || !steps_[size_t(i)]->layer->fuse_relu(cap)) continue;
    steps_[j]->fused_into = i;
    steps_[size_t(i)]->fused_relu = int(j);
  }
  // Output buffers once the fusions are known: a fused ReLU shares its
  // producer's, and never has one of its own even for a moment (allocated
  // and dropped, it set the peak of a network trained with a frozen base,
  // whose training needs little more than its activations).
  if (use_ == Use::Inference) {
    share_output_buffers();
    return;
  }
  for (size_t j = 0; j < steps_.size(); ++j) {
    Step& s = *steps_[j];
    s.out_buf = s.fused_into >= 0 ? steps_[size_t(s.fused_into)]->out_buf
                                  : Tensor(s.lowered->out_shape.with_batch(max_batch));
  }
}

// Inference: each output buffer goes back to a pool after the last layer
// that reads it, and a later layer takes the smallest free one that is
// large enough (allocated before the layer's own inputs are released, so
// an output never overwrites what its layer reads). A fused ReLU's
// readers count as its producer's; the network's output is never
// released. In topological order, so a chain holds about two buffers.
void Plan::share_output_buffers() {
  const size_t n = steps_.size();
  auto owner = [&](size_t j) {
    return steps_[j]->fused_into >= 0 ? size_t(steps_[j]->fused_into) : j;
  };
  std::vector<size_t> last(n, 0);
  for (size_t j = 0; j < n; ++j)
    for (int i : steps_[j]->inputs()) last[owner(size_t(i))] = std::max(last[owner(size_t(i))], j);
  last[owner(n - 1)] = n;             // the output
  std::vector<Tensor> pool;           // flat buffers
  std::vector<size_t> free_list;      // indices into pool
  std::vector<int64_t> taken(n, -1);  // the pool buffer a step's output is in
  for (size_t j = 0; j < n; ++j) {
    Step& s = *steps_[j];
    if (s.is_input()) continue;
    const Shape shape = s.lowered->out_shape.with_batch(max_batch_);
    if (s.fused_into >= 0) {
      s.out_buf = steps_[size_t(s.fused_into)]->out_buf;
      continue;
    }
    size_t best = pool.size();
    for (size_t k : free_list)
      if (pool[k].numel() >= shape.numel() + stagger(k) &&
          (best == pool.size() || pool[k].numel() < pool[best].numel()))
        best = k;
    if (best == pool.size())
      pool.push_back(Tensor(Shape{shape.numel() + stagger(pool.size())}));
    else
      free_list.erase(std::find(free_list.begin(), free_list.end(), best));
    taken[j] = int64_t(best);
    s.out_buf = pool[best].view(stagger(best), shape);
    // Inputs read for the last time here go back to the pool.
    for (int i : s.inputs()) {
      const size_t o = owner(size_t(i));
      if (last[o] == j && taken[o] >= 0 &&
          std::find(free_list.begin(), free_list.end(), size_t(taken[o])) == free_list.end())
        free_list.push_back(size_t(taken[o]));
    }
  }
}

int64_t Plan::output_buffer_bytes() const {
  std::set<const void*> seen;
  int64_t b = 0;
  for (const auto& s : steps_)
    if (s->out_buf.defined() && seen.insert(s->out_buf.storage_id()).second)
      b += int64_t(s->out_buf.storage_bytes());
  return b;
}

void Plan::init_params(uint64_t seed) {
  Rng rng(seed);
  for (auto& s : steps_) s->layer->init(rng);
}

namespace {

// Adds the scope's wall time to ctx.layer_seconds[i] when profiling.
class LayerClock {
 public:
  LayerClock(RunContext& ctx, size_t i, size_t n) : out_(ctx.layer_seconds), i_(i) {
    if (!out_) return;
    if (out_->size() < n) out_->resize(n, 0.0);
    start_ = std::chrono::steady_clock::now();
  }
  ~LayerClock() {
    if (out_)
      (*out_)[i_] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  LayerClock(const LayerClock&) = delete;
  LayerClock& operator=(const LayerClock&) = delete;

 private:
  std::vector<double>* out_;
  size_t i_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

const Tensor& Plan::forward(const Tensor& x, RunContext& ctx) {
  if (x.shape().rank() != input_shape_.rank() + 1 || x.shape().without_batch() != input_shape_)
    throw DataError("the input batch has shape " + x.shape().str(true) +
                    " but the network's Input is " + input_shape_.str(true) + " per sample");
  int64_t n = x.shape()[0];
  if (n > max_batch_ || n < 1)
    throw Error("batch of " + std::to_string(n) + " samples exceeds the plan's " +
                std::to_string(max_batch_));
  cur_n_ = n;
  std::vector<const Tensor*> ins;
  for (auto& s : steps_) {
    if (s->is_input()) {
      s->out = x;
      continue;
    }
    s->out = s->out_buf.narrow_batch(n);
    if (s->fused_into >= 0) continue;  // the producer applied the ReLU
    ins.clear();
    for (int i : s->inputs()) ins.push_back(&steps_[size_t(i)]->out);
    ctx.frozen = s->lowered->frozen;
    const LayerClock clock(ctx, size_t(&s - steps_.data()), steps_.size());
    s->layer->forward(ins, s->out, ctx);
  }
  ctx.frozen = false;
  return steps_.back()->out;
}

void Plan::backward(const Tensor& dout, RunContext& ctx) {
  if (use_ == Use::Inference)
    throw Error("backward on a plan made for inference: its layers' outputs are reused");
  int64_t n = cur_n_;
  if (dout.shape() != output_shape_.with_batch(n))
    throw Error("backward: gradient shape " + dout.shape().str(true) + " does not match output " +
                output_shape_.with_batch(n).str(true));
  // Gradient buffers are allocated on first use: inference-only plans (the
  // inference panel, eval) never pay for them.
  for (auto& s : steps_) {
    if (!s->needs_grad || s->is_input() || s->fused_relu >= 0) continue;
    if (!s->grad_buf.defined()) s->grad_buf = Tensor(s->lowered->out_shape.with_batch(max_batch_));
    s->grad = s->grad_buf.narrow_batch(n);
    s->grad_ready = false;
  }
  steps_.back()->grad.copy_from(dout);
  steps_.back()->grad_ready = true;
  // Layers accumulate into their inputs' gradients, so each is zeroed before
  // its first consumer runs: just in time, so it is still in cache when the
  // consumer writes it, and split over the threads (zeroing them all up
  // front was a serial memset of every activation, 4 % of a CNN's step).
  auto ready = [](Step& src) {
    if (src.grad_ready) return;
    float* p = src.grad.f32();
    parallel_for(src.grad.numel(), int64_t(1) << 15, [p](int64_t b, int64_t e) {
      std::memset(p + b, 0, size_t(e - b) * sizeof(float));
    });
    src.grad_ready = true;
  };
  std::vector<const Tensor*> ins;
  std::vector<Tensor*> dins;
  for (auto it = steps_.rbegin(); it != steps_.rend(); ++it) {
    Step& s = **it;
    if (s.is_input() || !s.needs_grad || s.fused_into >= 0) continue;
    // Zeroing an input's gradient just in time counts to its consumer.
    const LayerClock clock(ctx, size_t(steps_.rend() - it - 1), steps_.size());
    ins.clear();
    dins.clear();
    const bool overwrite = s.layer->overwrites_din() && s.inputs().size() <= 32;
    ctx.fresh_din = 0;
    for (size_t k = 0; k < s.inputs().size(); ++k) {
      Step& src = *steps_[size_t(s.inputs()[k])];
      ins.push_back(&src.out);
      const bool wants = src.needs_grad && !src.is_input();
      // A layer that can write its input's gradient outright gets the
      // buffer unzeroed, unless the same input feeds it twice.
      const int uses = int(std::count(s.inputs().begin(), s.inputs().end(), s.inputs()[k]));
      if (wants && !src.grad_ready && overwrite && uses == 1)
        ctx.fresh_din |= 1u << k;
      else if (wants)
        ready(src);
      dins.push_back(wants ? &src.grad : nullptr);
    }
    ctx.frozen = s.lowered->frozen;
    // A producer with a fused ReLU gets the ReLU's gradient (and masks it).
    const Tensor& dy = s.fused_relu >= 0 ? steps_[size_t(s.fused_relu)]->grad : s.grad;
    s.layer->backward(ins, s.out, dy, dins, ctx);
    for (size_t k = 0; k < s.inputs().size(); ++k)
      if (ctx.fresh(k)) steps_[size_t(s.inputs()[k])]->grad_ready = true;
  }
  ctx.frozen = false;
  ctx.fresh_din = 0;
}

void Plan::zero_grad() {
  for (auto& p : params_)
    if (p.param->trainable) p.param->grad.zero();
}

std::vector<Param*> Plan::trainable() const {
  std::vector<Param*> v;
  for (auto& p : params_)
    if (p.param->trainable) v.push_back(p.param);
  return v;
}

int64_t Plan::num_parameters() const {
  int64_t n = 0;
  for (auto& p : params_)
    if (p.param->trainable) n += p.param->value.numel();
  return n;
}

int64_t Plan::num_frozen_parameters() const {
  int64_t n = 0;
  for (auto& p : params_)
    if (p.frozen) n += p.param->value.numel();
  return n;
}

bool Plan::has_frozen() const {
  for (const PlanStep& s : lowered_)
    if (s.frozen) return true;
  return false;
}

FreezeSavings Plan::freeze_savings() const {
  FreezeSavings f;
  f.trainable_params = num_parameters();
  f.frozen_params = num_frozen_parameters();
  // Gradient and Adam's two moments per frozen scalar.
  f.parameter_state_bytes = f.frozen_params * 4 * 3;
  for (const auto& s : steps_) {
    const PlanStep& ls = *s->lowered;
    if (ls.frozen) ++f.frozen_nodes;
    if (ls.is_input) continue;
    // A layer with a fused ReLU has no gradient buffer: the ReLU's serves.
    if (s->needs_grad_unfrozen && !s->needs_grad && s->fused_relu < 0)
      f.activation_grad_bytes_per_sample += ls.out_shape.numel() * 4;
    if (!ls.desc->cost) continue;
    const int64_t macs = ls.desc->cost(ls.in_shapes, ls.out_shape, ls.attrs).macs;
    const bool has_params = !s->layer->params().empty();
    if (s->needs_grad_unfrozen && !s->needs_grad) {
      // No backward at all: neither its weight nor its input gradient.
      f.backward_macs_saved += (has_params ? macs : 0) + (s->input_grad_unfrozen ? macs : 0);
    } else if (ls.frozen && has_params) {
      f.backward_macs_saved += macs;  // only its weight gradient
    }
  }
  return f;
}

std::vector<std::pair<std::string, Tensor>> Plan::state() const {
  std::vector<std::pair<std::string, Tensor>> v;
  for (auto& p : params_) v.emplace_back(p.name, p.param->value);
  return v;
}

void Plan::load_state(const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::string& source) {
  std::map<std::string, const Tensor*> by_name;
  for (auto& [k, t] : tensors) by_name[k] = &t;
  // Check everything before copying anything so a bad checkpoint leaves the
  // current weights intact.
  for (auto& p : params_) {
    auto it = by_name.find(p.name);
    if (it == by_name.end())
      throw IoError(source + ": has no tensor '" + p.name +
                    "'; it was made for a different network");
    if (it->second->shape() != p.param->value.shape() || it->second->dtype() != DType::F32)
      throw IoError(source + ": tensor '" + p.name + "' is " + it->second->shape().str(true) +
                    " but this network needs " + p.param->value.shape().str(true) +
                    "; it was made for a different network");
  }
  for (auto& p : params_) p.param->value.copy_from(*by_name[p.name]);
}

int64_t count_parameters(const Graph& g) {
  return count_parameters(g, false);
}

int64_t count_parameters(const Graph& g, bool trainable_only) {
  const auto shapes = g.infer_shapes();
  int64_t total = 0;
  for (const auto& [id, node] : g.nodes()) {
    if (trainable_only && !node.trainable) continue;
    auto it = shapes.find(id);
    if (it == shapes.end() || !it->second.ok()) return -1;
    const LayerDescriptor& d = LayerRegistry::instance().get(node.type);
    if (!d.cost) continue;
    std::vector<Shape> in;
    for (const Edge& e : g.in_edges(id)) {
      auto src = shapes.find(e.src);
      if (src == shapes.end() || !src->second.ok()) return -1;
      in.push_back(*src->second.shape);
    }
    total += d.cost(in, *it->second.shape, node.attrs).params;
  }
  return total;
}

std::vector<LayerSummary> Plan::summary() const {
  std::vector<LayerSummary> v;
  for (size_t i = 0; i < lowered_.size(); ++i) {
    const PlanStep& s = lowered_[i];
    LayerSummary l;
    l.id = s.id;
    l.name = s.name;
    l.type = s.type;
    l.out = s.out_shape;
    if (s.desc->cost) l.cost = s.desc->cost(s.in_shapes, s.out_shape, s.attrs);
    // A fused ReLU writes its producer's buffer: no activation of its own,
    // so the summary's total is what the plan holds.
    const int producer = steps_[i]->fused_into;
    l.activation_bytes = producer >= 0 ? 0 : s.out_shape.numel() * 4;
    if (producer >= 0) l.fused_into = lowered_[size_t(producer)].name;
    l.frozen = s.frozen;
    v.push_back(l);
  }
  return v;
}

int64_t Plan::activation_bytes(int64_t batch, bool training) const {
  int64_t b = 0;
  for (auto& s : steps_) {
    if (s->is_input()) continue;
    int64_t per = s->lowered->out_shape.numel() * 4 * batch;
    if (s->fused_into < 0) b += per;  // a fused ReLU writes its producer's buffer
    if (training && s->needs_grad && s->fused_relu < 0) b += per;
  }
  return b;
}

int64_t Plan::parameter_bytes() const {
  int64_t b = 0;
  for (auto& p : params_) b += static_cast<int64_t>(p.param->value.bytes());
  return b;
}

const Tensor* Plan::activation(NodeId id) const {
  for (size_t j = 0; j < steps_.size(); ++j)
    if (steps_[j]->lowered->id == id)
      return use_ == Use::Training || j + 1 == steps_.size() ? &steps_[j]->out : nullptr;
  return nullptr;
}

}  // namespace dc
