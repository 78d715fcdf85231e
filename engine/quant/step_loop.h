#pragma once
// The step loop QuantRunner (the fp32 and simulated-int8 executor) and
// Int8Runner (oneDNN's int8 kernels) share, so both run the layers left in
// float exactly alike and differ only in what a quantized op computes.
#include <deepcanvas/layer.h>
#include <deepcanvas/quantize.h>

#include <functional>
#include <memory>
#include <vector>

namespace dc::quant_detail {

class StepLoop {
 public:
  // Computes step i from its inputs into out (already sized for the batch)
  // and returns true, or returns false to let the loop run the layer.
  using Hook = std::function<bool(size_t i, const std::vector<const Tensor*>& in, Tensor& out)>;

  // own[i]: the hook always computes step i, so it gets no float layer and
  // no weights. alias[i] >= 0: step i (a ReLU fused into the op it reads)
  // shares step alias[i]'s output and runs nothing. Both may be empty.
  StepLoop(const QuantNetwork& net, int64_t max_batch, const std::vector<bool>& own = {},
           const std::vector<int>& alias = {});

  const QuantNetwork& net() const { return net_; }
  int64_t max_batch() const { return max_batch_; }
  Layer* layer(size_t i) { return layers_[i].get(); }
  // The float weights (QuantNetwork::weights) into every layer.
  void load_float();

  // x: [n, ...input], n <= max_batch. observe(step, output) after every
  // step, inputs and aliases included.
  const Tensor& forward(const Tensor& x, const Hook& hook,
                        const std::function<void(int, const Tensor&)>& observe);

 private:
  const QuantNetwork& net_;
  int64_t max_batch_;
  std::vector<int> alias_;
  std::vector<std::unique_ptr<Layer>> layers_;  // null for inputs, owned and aliased steps
  std::vector<Tensor> out_;                     // at max_batch; undefined for aliases
  std::vector<Tensor> cur_;                     // views of out_ for the current batch
};

}  // namespace dc::quant_detail
