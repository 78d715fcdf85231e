#pragma once
// The plugin's layers. Each Op mirrors one engine layer type (op_registry.h
// maps types to ops): forward writes its output, backward ACCUMULATES into
// input and parameter gradients (the engine's convention), so the plan can
// add the gradients of branches.
#include <deepcanvas/attrs.h>
#include <deepcanvas/tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "allocator.h"
#include "common.h"
#include "kernels.h"

namespace dc::cuda {

struct OpContext {
  // Counts the workspace's reallocations: a captured graph holds the
  // address it had, so the plan drops its graph when this moves.
  uint64_t ws_generation = 0;
  cudaStream_t stream = nullptr;
  cudnnHandle_t dnn = nullptr;
  cublasHandle_t blas = nullptr;
  Allocator* alloc = nullptr;
  bool training = true;
  bool tf32 = false;  // tensor-core float32 (off: bit-for-bit float32 arithmetic)
  uint64_t seed = 0;  // per step, for Dropout
  // The same seed in device memory in graph-capable training steps (null
  // otherwise): kernels that read it stay correct when a captured graph is
  // replayed for a later step.
  const uint64_t* dseed = nullptr;
  // False for pure inference (predict): recurrent layers then skip keeping
  // what backward would need. Tests run backward after an evaluation-mode
  // forward, so it is not the same as !training.
  bool need_backward = true;
  // Mixed precision (bf16/fp16): Conv2D, Dense, TimeDistributedDense and
  // (in bf16) attention compute on tensor cores with 16-bit operands (cuDNN
  // on 16-bit copies, cuBLAS on 16-bit copies or, in bf16, with a 16-bit
  // compute type on the float32 tensors) and keep float32 results;
  // everything else stays float32 (docs/ARCHITECTURE.md, "Mixed precision").
  bool reduced = false;
  Low low = Low::Bf16;
  // cuBLAS's compute type for GEMMs on the float32 tensors (pointwise
  // convolutions, Dense, attention): in bf16 the operands rounded to 16 bits
  // inside the GEMM (float32 sums). Only bf16: it has float32's range, so
  // rounding inside cuBLAS or in a copy is the same. fp16's ends at 65504,
  // and its loss scaling relies on a value past that becoming inf in the
  // 16-bit operands so that the step is skipped; CUBLAS_COMPUTE_32F_FAST_16F
  // leaves it to cuBLAS whether a GEMM rounds at all (a small one stayed
  // float32 on an H200, and an overflowing fp16 step was applied). So fp16
  // keeps 16-bit copies where a layer has them (Dense, convolutions) and
  // float32 arithmetic in attention.
  bool low_on_float32() const { return reduced && low == Low::Bf16; }
  cublasComputeType_t low_compute() const {
    return low_on_float32() ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F;
  }
  // cuDNN scratch space, grown on demand and shared by every layer.
  DeviceBuffer* workspace = nullptr;
  float* ws(size_t bytes, const std::string& what);
};

struct ParamSlot {
  std::string name;  // as the CPU layer names it: "weight", "bias", "running_mean"
  Shape shape;
  bool trainable = true;
  float* value = nullptr;  // set by the plan
  float* grad = nullptr;   // trainable parameters of a node that is not frozen
  // Reduced precision: a 16-bit copy of value, refreshed by the plan before
  // every forward (learnable parameters, frozen or not).
  void* value_low = nullptr;
};

class Op {
 public:
  virtual ~Op() = default;
  std::string label;  // "Conv2D 'conv1'" for messages
  std::vector<Shape> in_shapes;
  Shape out_shape;  // per sample
  std::vector<ParamSlot> params;
  // A frozen node (Node::trainable false): the plan leaves its parameters'
  // grad null, so backward skips the parameter gradients and only passes
  // the gradient on to the input; BatchNorm uses and keeps its running
  // statistics even in training steps (the CPU layers' RunContext::frozen).
  bool frozen = false;
  // Whether backward ever reaches this node (the plan's requires_grad): if
  // not, it keeps nothing for backward (cuDNN algorithms, reserve space,
  // 16-bit gradient copies).
  bool needs_backward = true;
  // Layers that only regroup values (Flatten, Reshape) share their input's
  // buffers instead of copying.
  virtual bool is_view() const { return false; }
  // A ReLU/ReLU6 after this op folded into it (relu_fusions): the op
  // clamps its output and masks the incoming gradient from then on. Ops that
  // cannot return false and stay as they are.
  virtual bool fold_relu(FusedRelu) { return false; }
  // Called before a batch of n is queued (cuDNN algorithm choice, scratch).
  virtual void prepare(OpContext&, int /*n*/) {}
  // For layers fed straight from the network input (Embedding): throws
  // DataError when host values x[0..count) are not valid for this layer, so
  // bad data is refused once, up front, instead of inside a kernel.
  virtual void check_input(const float* /*x*/, int64_t /*count*/) const {}
  virtual bool validates_input() const { return false; }
  // Whether a training step with this op may be captured into a CUDA graph
  // and replayed: false for ops whose launches carry per-step host values or
  // that call libraries not known to be capture-safe. (Dropout reads its
  // step seed from OpContext::dseed, so it is safe.)
  virtual bool graph_safe() const { return true; }
  virtual void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) = 0;
  virtual void backward(OpContext& c, const std::vector<const float*>& in, const float* out,
                        const float* dout, const std::vector<float*>& din, int n) = 0;
};

// "64x1x28x28": a batch of n samples of shape s, for launch messages.
inline std::string dims(int n, const Shape& s) {
  return std::to_string(n) + "x" + s.str(true);
}

}  // namespace dc::cuda
