#pragma once
// Losses over the network's output [N, C]. Each returns the mean loss over
// the batch and WRITES (not accumulates) d(mean loss)/d(output) into dout.
#include <deepcanvas/loss_type.h>
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
  // Labels below 0 mark rows that are not scored (padding: PyTorch's
  // ignore_index): they add no loss and get a zero gradient, and the mean
  // is over the other rows. Softmax cross-entropy only.
  bool skip_negative = false;
};

class Loss {
 public:
  virtual ~Loss() = default;
  virtual float compute(const Tensor& out, const Targets& t, Tensor& dout) = 0;
  virtual const char* name() const = 0;
  // Whether predictions are class scores (accuracy makes sense).
  virtual bool classification() const { return true; }
};

// Label smoothing applies to softmax cross-entropy only (as in PyTorch);
// throws dc::Error when it is outside [0, 1).
std::unique_ptr<Loss> make_loss(LossType type, float label_smoothing = 0.0f);

}  // namespace dc
