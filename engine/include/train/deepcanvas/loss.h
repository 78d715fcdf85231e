#pragma once
// Losses over the network's output [N, C]. Each returns the mean loss over
// the batch and WRITES (not accumulates) d(mean loss)/d(output) into dout.
#include <deepcanvas/enum_names.h>
#include <deepcanvas/tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dc {

// What a batch is scored against: class labels (classification) and/or
// float targets shaped like the output (regression). BCE and MSE use
// `values` when given, otherwise one-hot labels (C > 1) or the label itself
// as a 0/1 target (C == 1).
struct Targets {
  const int32_t* labels = nullptr;  // N entries
  const Tensor* values = nullptr;   // [N, ...] like the output
};

class Loss {
 public:
  virtual ~Loss() = default;
  virtual float compute(const Tensor& out, const Targets& t, Tensor& dout) = 0;
  virtual const char* name() const = 0;
  // Whether predictions are class scores (accuracy makes sense).
  virtual bool classification() const { return true; }
};

enum class LossType { SoftmaxCrossEntropy, BinaryCrossEntropy, Mse };
template <>
struct EnumNames<LossType> {
  static constexpr std::array<std::pair<LossType, const char*>, 3> table{{
      {LossType::SoftmaxCrossEntropy, "softmax_cross_entropy"},
      {LossType::BinaryCrossEntropy, "binary_cross_entropy"},
      {LossType::Mse, "mse"},
  }};
};

// Label smoothing applies to softmax cross-entropy only (as in PyTorch);
// throws dc::Error when it is outside [0, 1).
std::unique_ptr<Loss> make_loss(LossType type, float label_smoothing = 0.0f);

}  // namespace dc
