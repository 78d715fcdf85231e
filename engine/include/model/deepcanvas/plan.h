#pragma once
// A Graph compiled for execution: layers instantiated in topological order,
// activation and gradient buffers allocated up front for the largest batch,
// so memory is known (and reported) before the first step. Backward walks the
// plan in reverse and accumulates gradients; the graph is static, so no tape.
#include <deepcanvas/graph.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/rng.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dc {

struct NamedParam {
  std::string name;  // "<node name>.<param name>", e.g. "conv1.weight"
  Param* param = nullptr;
  // A learnable parameter of a frozen node (param->trainable is then false);
  // buffers such as running statistics are never marked.
  bool frozen = false;
};

// What freezing saves in a plan (all zero when nothing is frozen).
struct FreezeSavings {
  int64_t trainable_params = 0;  // learnable scalars the optimizer updates
  int64_t frozen_params = 0;     // learnable scalars of frozen nodes
  // Bytes per sample of activation gradients that freezing leaves out (the
  // frozen prefix gets no backward pass), and bytes of parameter gradients
  // and Adam's two moments that the frozen parameters do not need.
  int64_t activation_grad_bytes_per_sample = 0;
  int64_t parameter_state_bytes = 0;
  // Backward multiply-adds per sample not done: a skipped layer's backward
  // costs about twice its forward (input and weight gradients), a frozen
  // layer that still passes the gradient on saves its weight gradient (about
  // one forward). An estimate from the layers' cost rules.
  int64_t backward_macs_saved = 0;
  int64_t frozen_nodes = 0;
  int64_t bytes_saved(int64_t batch) const {
    return activation_grad_bytes_per_sample * batch + parameter_state_bytes;
  }
};

struct LayerSummary {
  NodeId id = -1;
  std::string name, type;
  Shape out;                 // per sample
  Cost cost;                 // parameters and MACs per sample
  int64_t activation_bytes;  // per sample, forward output (0: a fused ReLU, shares its producer's)
  std::string fused_into;    // a fused ReLU: the convolution whose buffer it writes
  bool frozen = false;       // Node::trainable is false
};

// The parameter count of a valid graph from the layers' cost rules, without
// allocating anything (a Plan allocates every weight); -1 when some node's
// shape cannot be inferred. Lets a caller refuse a network too large for the
// machine before building its Plan.
int64_t count_parameters(const Graph& g);
// The same, leaving out frozen nodes (Node::trainable false) when asked.
int64_t count_parameters(const Graph& g, bool trainable_only);

// One node of a validated graph, resolved once for every backend: the CPU
// Plan, the activation probe (probe.h) and the CUDA plan build their ops from
// these instead of walking the graph again, so port order, shapes and
// attribute defaults cannot differ between them.
struct PlanStep {
  NodeId id = -1;
  std::string name, type;
  std::string label;  // "Conv2D 'conv1'", for messages
  const LayerDescriptor* desc = nullptr;
  Attrs attrs;                   // every attribute, defaults filled in
  std::vector<int> inputs;       // indices of the producing steps, in port order
  std::vector<Shape> in_shapes;  // per sample, in port order
  Shape out_shape;               // per sample
  bool is_input = false;         // fed the batch by the plan; no op runs
  bool frozen = false;           // Node::trainable is false
};

// Validates the graph (throws GraphError listing every problem) and returns
// its steps in a stable topological order (Kahn with ascending ids) that
// ends with the network's output.
std::vector<PlanStep> lower_graph(const Graph& g);

// Whether the lowered network's input is token ids (is_token_input, graph.h).
bool input_is_tokens(const std::vector<PlanStep>& steps);

// Which steps backward reaches: those with learnable parameters that are not
// frozen, and every step downstream of one (ignore_frozen: as if nothing
// were frozen). The one rule the CPU Plan, the CUDA plan and the advisor's
// memory model follow: a frozen prefix runs no backward and keeps no
// activation gradients.
std::vector<bool> backward_reach(const std::vector<PlanStep>& steps, bool ignore_frozen = false);

// Both plans, the CPU's and the CUDA one (cuda/plan.cpp, CudaPlan::lower),
// fold a ReLU or ReLU6 whose only input is a BatchNorm1D/2D, an Add or a
// Conv2D that feeds nothing else into that layer (Layer::fuse_relu): it
// clamps its own output and masks the incoming gradient, and the ReLU step
// shares its buffer and runs nothing. So a pass over the activation and a
// gradient buffer are saved per pair (VGG-BN and ResNet are made of
// BatchNorm/Add pairs, MobileNetV2 and EfficientNet-Lite0 of Conv2D ones
// once their BatchNorms are folded); on the CPU, ResNet's training step
// ran 15 % faster once BatchNorm and Add took them too (docs/BENCHMARKS.md).
// For each step, the index of the step a ReLU is folded into, else -1. The
// advisor's memory and step-time models use the same rule; DC_CUDA_FUSE=0
// turns it off in the CUDA plugin.
std::vector<int> relu_fusions(const std::vector<PlanStep>& steps);

// The rule under it (and the int8 runtime's post-op ReLU): for each ReLU or
// ReLU6 step whose only input is a step (not an Input) that `folds(index)`
// accepts and that feeds nothing else, that step's index; else -1.
std::vector<int> relu_fusions_into(const std::vector<PlanStep>& steps,
                                   const std::function<bool(int)>& folds);

class Plan {
 public:
  // Validates the graph (throws GraphError listing every problem) and builds
  // the layers for batches of up to max_batch samples. An Inference plan
  // (run, predict, eval) lets layers share output buffers once nothing
  // reads them any more, so it holds a few layers' outputs instead of every
  // one: it cannot run backward, and activation() has the output only.
  enum class Use { Training, Inference };
  Plan(const Graph& g, int64_t max_batch, Use use = Use::Training);
  ~Plan();
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  // Initialises every parameter from the seed, in topological order.
  void init_params(uint64_t seed);
  // x is [n, ...input_shape] with n <= max_batch. Returns the output
  // [n, ...output_shape]; valid until the next forward.
  const Tensor& forward(const Tensor& x, RunContext& ctx);
  // Gradient of the loss w.r.t. the output of the last forward (training).
  // Accumulates into every parameter's grad.
  void backward(const Tensor& dout, RunContext& ctx);
  void zero_grad();

  const Shape& input_shape() const { return input_shape_; }
  const Shape& output_shape() const { return output_shape_; }
  int64_t max_batch() const { return max_batch_; }
  std::vector<NamedParam>& params() { return params_; }
  // Learnable parameters of nodes that are not frozen: what an optimizer
  // updates, and what optimizer state is indexed by.
  std::vector<Param*> trainable() const;
  int64_t num_parameters() const;         // learnable scalars the optimizer updates
  int64_t num_frozen_parameters() const;  // learnable scalars of frozen nodes
  // Counts and what freezing saves against the same network unfrozen.
  FreezeSavings freeze_savings() const;
  bool has_frozen() const;

  // Everything needed to reproduce the model's outputs: parameters and
  // buffers (BatchNorm running statistics), by name.
  std::vector<std::pair<std::string, Tensor>> state() const;
  // Copies tensors in by name. Throws IoError when a name is missing or a
  // shape differs (a checkpoint made for another graph), naming the tensor.
  void load_state(const std::vector<std::pair<std::string, Tensor>>& tensors,
                  const std::string& source);

  // What load_matching found: layers (node names) whose every tensor came
  // from the file, layers left as initialised, and file tensors no layer
  // uses (e.g. the replaced classifier of a pretrained base).
  struct MatchReport {
    std::vector<std::string> loaded_layers, fresh_layers, unused;
    int64_t loaded_tensors = 0;
    std::string summary() const;  // one line for logs and the app
  };
  // Copies in the tensors whose names match a parameter or buffer and leaves
  // the others as they are. Throws IoError naming the tensor when a match
  // has another shape, and when nothing matches at all (another network).
  MatchReport load_matching(const std::vector<std::pair<std::string, Tensor>>& tensors,
                            const std::string& source);

  // The lowered graph this plan runs, for backends that shadow it.
  const std::vector<PlanStep>& steps() const { return lowered_; }

  std::vector<LayerSummary> summary() const;
  // Bytes of activations (+ their gradients when training) for a batch.
  int64_t activation_bytes(int64_t batch, bool training) const;
  int64_t parameter_bytes() const;
  // Memory a training step needs at `batch`: activations and their
  // gradients, weights, their gradients and Adam's two moments (what the
  // summaries show and what a run is checked against before it starts).
  // Frozen parameters need neither gradients nor moments.
  int64_t training_bytes(int64_t batch) const {
    return activation_bytes(batch, true) + parameter_bytes() * 4 -
           freeze_savings().parameter_state_bytes;
  }
  // The output of a node from the last forward (for activation views);
  // null for an Inference plan's inner nodes, whose buffers are reused.
  const Tensor* activation(NodeId id) const;
  // Bytes of the layers' output buffers at max_batch (what sharing saves).
  int64_t output_buffer_bytes() const;

 private:
  struct Step;
  std::vector<PlanStep> lowered_;
  std::vector<std::unique_ptr<Step>> steps_;  // one per lowered_ entry
  std::vector<NamedParam> params_;
  Shape input_shape_, output_shape_;
  int64_t max_batch_ = 0;
  Use use_ = Use::Training;
  void share_output_buffers();
  int64_t cur_n_ = 0;
};

}  // namespace dc
