#pragma once
// Quantization-aware fine-tuning (QAT) of a network quantize.h folded and
// calibrated: the forward is exactly QuantRunner's simulated QDQ arithmetic
// (weights per output channel in [-127, 127] from the current weights'
// amax, inputs of the quantized ops per tensor in [-128, 127], round half
// to even, saturation), the backward passes the weights' gradient straight
// through and learns each input scale as in LSQ (Esser et al. 2019,
// "Learned Step Size Quantization"). The result is a QuantizedNetwork the
// QDQ writer and the accuracy gate take as they are, and a checkpoint that
// keeps the learned scales. docs/ARCHITECTURE.md, "Quantization-aware
// fine-tuning", has the choices.
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/data.h>
#include <deepcanvas/loss_type.h>
#include <deepcanvas/optim_config.h>
#include <deepcanvas/quantize.h>
#include <deepcanvas/tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dc {

// The network of a QuantizedNetwork with fake quantization, trainable: the
// float ("latent") weights, the other layers' parameters and one learned
// input scale per quantized op.
class QatNetwork {
 public:
  // q: the folded network and its initial scales (calibrate()'s).
  QatNetwork(const QuantizedNetwork& q, int64_t max_batch);
  ~QatNetwork();
  QatNetwork(const QatNetwork&) = delete;
  QatNetwork& operator=(const QatNetwork&) = delete;

  // x: [n, ...input]. training: Dropout active and what backward needs
  // kept; BatchNorms left unfolded always use their running statistics, as
  // the exported model does. Without training the result equals
  // QuantRunner's with quantized() loaded, bit for bit.
  const Tensor& forward(const Tensor& x, bool training, uint64_t dropout_seed = 0);
  // dout: d(loss)/d(output) of the last forward. Accumulates into grads();
  // with dinput, also writes d(loss)/d(input) there (tests).
  void backward(const Tensor& dout, Tensor* dinput = nullptr);
  void zero_grad();
  // Everything an optimizer updates: the latent weights, biases and other
  // layers' parameters (weights()) ...
  std::vector<Param*> weight_params();
  // ... and the input scales, one Param {1} per op in quantized()'s order.
  std::vector<Param*> scale_params();

  // The current state as quantize.h's network: folded latent weights, the
  // weights quantized per channel from them, the learned scales.
  QuantizedNetwork quantized() const;
  // The LSQ gradient scale of op k's input: 1 / sqrt(features · 127).
  float scale_grad_factor(size_t k) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct QatOptions {
  int epochs = 3;
  int64_t batch = 64;
  OptimizerConfig optimizer;  // Adam, AdamW or SGD, the project's
  LossType loss = LossType::SoftmaxCrossEntropy;
  double label_smoothing = 0.0;
  uint64_t seed = 42;
  int64_t steps_per_epoch_limit = 0;  // 0: the whole training set each epoch
  // With Adam or AdamW, a scale's learning rate is lr · this · the scale
  // (each step moves it by a share of itself; qat.cpp says why).
  double scale_lr_factor = 100.0;
};

struct QatEpoch {
  int epoch = 0, epochs = 0;  // epoch 0: before fine-tuning (the calibrated start)
  double train_loss = 0;      // mean over the epoch's batches (NaN for epoch 0)
  QuantAccuracy test;         // fp32 of the latent weights and simulated int8
};

// Fine-tunes `start` on `train`, measuring `test` (all of it) before and
// after each epoch with evaluate_quantized. on_epoch and progress may be
// empty; cancelled, when it returns true, stops the run after the current
// step (the state so far is returned; *was_cancelled tells).
// Throws Error for a loss that is not finite.
QuantizedNetwork train_qat(const QuantizedNetwork& start, const Dataset& train, const Dataset& test,
                           const QatOptions& o,
                           const std::function<void(const QatEpoch&)>& on_epoch = {},
                           const std::function<void(int64_t step, int64_t steps)>& progress = {},
                           const std::function<bool()>& cancelled = {},
                           bool* was_cancelled = nullptr);

// ---- The QAT checkpoint ---------------------------------------------------
//
// A DeepCanvas checkpoint of the *unfolded* network (every tensor name and
// shape of the fp32 checkpoint, so the usual loader checks the network),
// in which each folded BatchNorm is the identity (gamma 1, beta 0 or the
// folded bias, mean 0, variance 1 - eps adjusted so fold_batch_norms'
// factor is exactly 1) and its convolution holds the fine-tuned folded
// weights: folding it again gives those weights bit for bit. The learned
// scales are the metadata entry "qat" (JSON, below).

constexpr const char* kQatMetadataKey = "qat";

// The tensors of that checkpoint: `steps` and `state` are the unfolded
// network and the fp32 state it started from, q the fine-tuned network.
// Throws Error when folding them again would not give q's weights exactly.
std::vector<std::pair<std::string, Tensor>> qat_unfolded_state(
    const std::vector<PlanStep>& steps, const std::vector<std::pair<std::string, Tensor>>& state,
    const QuantizedNetwork& q);
// The "qat" metadata's text: format "deepcanvas-qat", version, the ops
// (layer, type, input, input_scale) and how the start was calibrated.
std::string qat_metadata_json(const QuantizedNetwork& q, const std::string& source_checkpoint,
                              int epochs);
// Writes the checkpoint: `base` is the fp32 checkpoint's metadata (input
// shape, classes, normalisation), kept; test_accuracy is the int8 one.
void write_qat_checkpoint(const std::string& path, const std::vector<PlanStep>& steps,
                          const std::vector<std::pair<std::string, Tensor>>& fp32_state,
                          const QuantizedNetwork& q, std::map<std::string, std::string> base,
                          const std::string& source_checkpoint, int epochs,
                          double int8_test_accuracy);

// Whether a checkpoint's metadata marks it as a QAT checkpoint.
bool is_qat_checkpoint(const std::map<std::string, std::string>& metadata);
// The QuantizedNetwork a QAT checkpoint holds: `net` is fold_batch_norms of
// the project's network and the checkpoint's tensors; the scales come from
// the metadata, the int8 weights are quantized from net's weights. Throws
// Error naming `path` and the reason when the metadata is damaged or names
// other layers than net quantizes (a checkpoint for another network).
QuantizedNetwork load_qat_scales(const std::map<std::string, std::string>& metadata,
                                 const QuantNetwork& net, const std::string& path);

}  // namespace dc
