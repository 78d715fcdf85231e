#pragma once
// The layer registry. Each layer type registers one LayerDescriptor: its
// ports, attribute schema, shape rule, cost rule and a factory for the
// runtime Layer that owns parameters and CPU kernels. Adding a layer means
// adding one file in engine/layers; the editor, project loader, summary and
// execution plan all read the descriptor.
#include <deepcanvas/attrs.h>
#include <deepcanvas/tensor.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dc {

class Rng;

// A learnable tensor (or a non-trainable buffer such as BatchNorm's running
// statistics, which is saved in checkpoints but not updated by optimizers).
// The plan also marks the parameters of a frozen node not trainable and
// releases their grad; kernels then skip the parameter gradients (an
// undefined grad) and only pass the gradient on to their input.
struct Param {
  std::string name;  // "weight", "bias", "running_mean", ...
  Tensor value;
  Tensor grad;  // undefined for buffers
  bool trainable = true;
  bool decay = true;  // false for biases and norm scales: no weight decay
};

// Per-step context handed to kernels.
struct RunContext {
  bool training = true;
  Rng* rng = nullptr;  // for Dropout; seeded by the Trainer per step
  // Set by the plan while it runs a frozen node (Node::trainable false):
  // BatchNorm then uses and keeps its running statistics. Other layers run
  // as usual (Dropout stays active, as in Keras and PyTorch).
  bool frozen = false;
  // Set by the plan for backward, bit i for input i: din[i] has not been
  // written in this backward pass and holds garbage, so a layer that says
  // overwrites_din() writes it instead of accumulating into it. Saves
  // zeroing the gradient buffer first (a pass over every activation).
  uint32_t fresh_din = 0;
  bool fresh(size_t i) const { return i < 32 && (fresh_din >> i) & 1u; }
  // When set, the plan adds the wall time of each of its steps (forward and
  // backward, indexed like Plan::steps()) here: what the advisor's
  // per-layer predictions are checked against. Two clock reads per layer.
  std::vector<double>* layer_seconds = nullptr;
};

// The runtime half of a layer: parameters plus CPU forward/backward.
//   forward:  in[i] is [N, ...in_shape[i]], out is [N, ...out_shape], already
//             allocated by the plan.
//   backward: dout like out; din[i] like in[i] and zero-filled by the plan
//             (nullptr where no gradient is needed, e.g. the network input);
//             kernels ACCUMULATE (+=) into din and into Param::grad.
// Layers may keep per-step state between forward and backward (masks,
// argmax indices, batch statistics); forward always precedes backward.
class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::vector<Param*> params() { return {}; }
  // Initialises parameters (PyTorch's defaults unless the layer says why not).
  virtual void init(Rng& /*rng*/) {}
  virtual void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext& ctx) = 0;
  virtual void backward(const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                        const std::vector<Tensor*>& din, RunContext& ctx) = 0;
  // True when backward needs `out` (e.g. ReLU, Sigmoid); lets the plan know
  // which activations stay alive.
  virtual bool backward_needs_output() const { return false; }
  // Asks the layer to apply a ReLU to its own output (the plan then skips
  // the ReLU node, whose output is this layer's): forward writes max(y, 0),
  // capped at `cap` when it is finite (ReLU6: 6), and backward gets the
  // gradient of that and masks it with 0 < out (< cap). Returns false when
  // the layer cannot.
  virtual bool fuse_relu(float cap = std::numeric_limits<float>::infinity()) {
    (void)cap;
    return false;
  }
  // True when backward honours RunContext::fresh_din (else the plan zeroes
  // the gradient buffers before the call).
  virtual bool overwrites_din() const { return false; }
};

struct Cost {
  int64_t params = 0;  // learnable scalars
  int64_t macs = 0;    // multiply-accumulates per sample, forward
};

struct LayerDescriptor {
  std::string type;      // "Conv2D"
  std::string category;  // "Convolution", "Pooling", "Core", "Activation", ...
  std::string help;      // one line for the palette tooltip
  std::vector<AttrSpec> attrs;
  // Number of input ports given the attributes (Add/Concat: attribute
  // "inputs"); Input has 0.
  std::function<int(const Attrs&)> num_inputs;
  // Per-sample output shape from per-sample input shapes. Throws ShapeError
  // with a message that does not repeat the node's name (the graph adds it).
  std::function<Shape(const std::vector<Shape>& in, const Attrs& a)> infer;
  std::function<Cost(const std::vector<Shape>& in, const Shape& out, const Attrs& a)> cost;
  std::function<std::unique_ptr<Layer>(const Attrs& a, const std::vector<Shape>& in,
                                       const Shape& out)>
      create;

  const AttrSpec* find_attr(const std::string& name) const;
  // Attributes with every missing value filled from its default.
  Attrs with_defaults(const Attrs& a) const;
};

class LayerRegistry {
 public:
  static LayerRegistry& instance();
  void add(LayerDescriptor d);
  const LayerDescriptor* find(const std::string& type) const;  // nullptr if unknown
  const LayerDescriptor& get(const std::string& type) const;   // throws GraphError
  std::vector<const LayerDescriptor*> all() const;             // sorted by category, type

 private:
  std::vector<std::unique_ptr<LayerDescriptor>> items_;
};

// Conv2D's padding_mode "same", TensorFlow's rule: output = ceil(in / stride);
// the total padding needed is split with the odd pixel after (bottom/right),
// which is also PyTorch's padding="same" for stride 1 and ONNX's SAME_UPPER.
// Exporters that write explicit padding use it too.
// Throws ShapeError naming the attribute and `axis` for a kernel, stride or
// dilation below 1 or a size that overflows (dc::conv_window's checks).
void same_padding(int64_t in, int64_t k, int64_t s, int64_t d, int64_t& before, int64_t& after,
                  std::string_view axis = "height or width");

// Which CPU kernel a Conv2D runs, the rule conv.cpp runs by, for the
// advisor's memory and step-time models. `a` with defaults filled in.
enum class ConvKernel {
  OneDnn,  // oneDNN's kernels (Winograd or direct; depthwise too), reordered to its layout and back
  // Without oneDNN (or with it switched off: DC_CONV=im2col, and for
  // grouped convolutions DC_CONV=dense):
  Im2col,     // unfolds C·kh·kw × OH·OW columns per sample, then GEMMs
  Pointwise,  // a 1×1, stride-1, unpadded convolution: a GEMM on the input in place
  Depthwise,  // one input channel per group: a direct kernel, no scratch buffers
};
ConvKernel conv_cpu_kernel(const std::vector<Shape>& in, const Attrs& a);
// Whether convolutions created from now on run on oneDNN's kernels (the
// default where oneDNN is built in; DC_CONV=im2col turns it off), and
// the switch for tests and A/B runs. Without oneDNN: false, and the setter
// does nothing.
bool cpu_conv_onednn();
void set_cpu_conv_onednn(bool on);
// The convolutions' path for --version: "im2col", "onednn (direct)"
// (DC_CONV=direct), "onednn (dense only; …)" (DC_CONV=dense) or "onednn
// (Winograd for 3x3)".
const char* cpu_conv_path();
// For ConvKernel::OneDnn at batch n on `threads` threads: the bytes the
// layer keeps from forward to backward (kept) and the workspace all such
// convolutions share (the largest layer's); relu when a ReLU is fused into
// it; *forward_only (when given), the workspace a forward that keeps nothing
// needs (inference, a frozen prefix). False otherwise.
bool conv_onednn_bytes(const std::vector<Shape>& in, const Attrs& a, int64_t n, bool relu,
                       int threads, int64_t& kept, int64_t& workspace,
                       int64_t* forward_only = nullptr);
// A 1×1, stride-1, unpadded convolution (by its geometry alone, whichever
// kernel the CPU runs it on).
bool conv_is_pointwise(const std::vector<Shape>& in, const Attrs& a);
// One input channel per group, more than one group, not 1×1: the CPU's
// depthwise geometry (its own kernels', and oneDNN's where it has any), by
// the geometry alone. The CUDA plugin's rule differs (cuda/depthwise.h).
bool conv_is_depthwise(const std::vector<Shape>& in, const Attrs& a);
// Whether such a convolution runs on oneDNN's Winograd kernels (3×3, stride
// 1, channels in blocks of 16, a CPU that has them).
bool conv_onednn_winograd(const std::vector<Shape>& in, const Attrs& a);

// Registers every built-in layer exactly once. Explicit (not static
// initialisers) so that linking the engine as a static library keeps them.
void register_builtin_layers();

// Whether nodes of this type are where data enters the network (Input,
// SequenceInput): they take no inputs and the plan feeds them the batch.
bool is_input_type(const std::string& type);

}  // namespace dc
