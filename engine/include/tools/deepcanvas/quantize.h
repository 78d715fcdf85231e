#pragma once
// Post-training quantization without protobuf: BatchNorm folding, the
// calibration of activation ranges, the int8 arithmetic of ONNX's
// QuantizeLinear/DequantizeLinear, and a CPU executor that runs a network in
// fp32 or with that arithmetic simulated exactly (engine/quant/). The QDQ
// ONNX writer (deepcanvas/onnx_quantize.h) and int8 CPU inference write and
// run what this decides; docs/ARCHITECTURE.md, "Quantization", has the
// choices.
#include <deepcanvas/data.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dc {

// ---- The arithmetic (int8, symmetric: the zero point is always 0) --------

constexpr int32_t kQMin = -128, kQMax = 127;  // QuantizeLinear's int8 saturation
constexpr int32_t kWeightQMax = 127;          // weights use [-127, 127] (TensorRT's range)

// saturate(round_half_to_even(x / scale) + zero_point), as QuantizeLinear.
int32_t quantize_value(float x, float scale, int32_t zero_point = 0, int32_t qmin = kQMin,
                       int32_t qmax = kQMax);
// (q - zero_point) * scale, as DequantizeLinear.
inline float dequantize_value(int32_t q, float scale, int32_t zero_point = 0) {
  return float(q - zero_point) * scale;
}
// Both in one, over n values in place.
void fake_quantize(float* x, int64_t n, float scale);
// The scale that maps [-amax, amax] onto [-127, 127]; a tiny positive scale
// for amax 0 (ONNX requires scale > 0).
float symmetric_scale(float amax);

// A weight [out, ...] quantized per output channel (axis 0).
struct ChannelQuant {
  std::vector<int8_t> q;     // same layout as the weight
  std::vector<float> scale;  // one per output channel
};
ChannelQuant quantize_per_channel(const Tensor& w);

// ---- Calibration statistics ---------------------------------------------

enum class CalibrationMethod { MinMax, Percentile, Entropy };
std::optional<CalibrationMethod> parse_calibration(const std::string& s);
const char* calibration_name(CalibrationMethod m);

// |x| of one tensor over the calibration set: the largest value, then (in a
// second pass over the same samples) a histogram of 2048 bins over [0, amax].
struct ActivationStats {
  static constexpr int kBins = 2048;
  double amax = 0;
  std::vector<double> hist;  // empty until the second pass
  int64_t count = 0;
  void add_range(const float* x, int64_t n);
  void add_histogram(const float* x, int64_t n);
};
// The clipping threshold each method chooses (its scale is amax / 127).
// percentile: the |x| below which that percentage of the values lie (upper
// bin edge). entropy: TensorRT's, the threshold whose 128-level
// quantization of the histogram has the least KL divergence to it.
double calibrated_amax(const ActivationStats& s, CalibrationMethod m, double percentile = 99.99);
double entropy_threshold(const std::vector<double>& hist, double bin_width);

// ---- The network being quantized ----------------------------------------

// A lowered network with its weights, BatchNorms folded where they can be.
struct QuantNetwork {
  std::vector<PlanStep> steps;            // lower_graph's order; inputs index into steps
  std::map<std::string, Tensor> weights;  // "conv1.weight" -> tensor (copies)
  std::vector<std::string> folded;        // "bn1 into conv1"
};

// The network of `steps` with `state` (Plan::state()). A BatchNorm1D/2D
// whose only input is a Conv2D or Dense that nothing else reads is folded
// into it: w' = w * g / sqrt(v + eps) per output channel, b' = (b - m) *
// g / sqrt(v + eps) + beta; the convolution gains a bias when it had none.
QuantNetwork fold_batch_norms(const std::vector<PlanStep>& steps,
                              const std::vector<std::pair<std::string, Tensor>>& state);

// Whether a step of this type gets int8 weights and a QDQ input.
bool quantizable_type(const std::string& type);

// One quantized op: its input's scale (per tensor) and its weight per channel.
struct QuantOp {
  int step = -1;            // index into QuantNetwork::steps
  int input_step = -1;      // the step producing its input
  float input_scale = 1.f;  // zero point 0
  ChannelQuant weight;
};

struct QuantizedNetwork {
  QuantNetwork net;
  std::vector<QuantOp> ops;
  // Layers with weights that have no int8 form here, left in float:
  // "lstm1 (LSTM)".
  std::vector<std::string> left_in_float;
  CalibrationMethod method = CalibrationMethod::Percentile;
  const QuantOp* op_for(int step) const;
};

// Runs a QuantNetwork on the CPU, step by step, keeping every activation:
// fp32, or with QDQ applied to the quantized ops' inputs and weights.
class QuantRunner {
 public:
  QuantRunner(const QuantNetwork& net, int64_t max_batch);
  ~QuantRunner();
  QuantRunner(const QuantRunner&) = delete;
  QuantRunner& operator=(const QuantRunner&) = delete;
  // Loads q's dequantized weights into the quantized layers (nullptr: the
  // float weights again).
  void set_quantized(const QuantizedNetwork* q);
  // x: [n, ...input]. observe(step, output) is called after every step
  // (inputs included); it sees the fp32 or simulated value.
  const Tensor& forward(const Tensor& x,
                        const std::function<void(int, const Tensor&)>& observe = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct QuantizeOptions {
  CalibrationMethod method = CalibrationMethod::Percentile;
  double percentile = 99.99;
  int64_t calibrate = 256;  // samples
  int64_t batch = 32;
  uint64_t seed = 1;  // which training samples calibrate
};

// Calibration samples of `ds`: `count` of them in a seeded shuffle, so
// classes mix. Throws Error when they hold a single class (see the body).
std::vector<int64_t> calibration_indices(const Dataset& ds, int64_t count, uint64_t seed);

// Calibrates on `indices` of `ds` and quantizes the weights. Throws Error
// naming the layer when an activation is NaN or infinite.
QuantizedNetwork calibrate(const QuantNetwork& net, const Dataset& ds,
                           const std::vector<int64_t>& indices, const QuantizeOptions& o,
                           const std::function<void(int64_t done, int64_t total)>& progress = {});

struct QuantAccuracy {
  double fp32 = 0, int8 = 0;  // top-1, 0..1
  double agreement = 0;       // fraction of samples whose argmax is the same
  int64_t samples = 0;
  double drop_points() const { return 100.0 * (fp32 - int8); }
};
// fp32 and simulated int8 accuracy over indices of ds (all when empty).
QuantAccuracy evaluate_quantized(const QuantizedNetwork& q, const Dataset& ds,
                                 const std::vector<int64_t>& indices, int64_t batch);

// What to try when the gate refuses, for the CLI and the app to word with
// their own controls: the other calibration methods, and a larger number
// of calibration samples. (fp16 and quantization-aware fine-tuning,
// qat.h, are the other ways out.)
struct GateAdvice {
  std::vector<std::string> other_methods;  // "entropy", "minmax"
  int64_t more_samples = 512;
};
GateAdvice quantization_gate_advice(CalibrationMethod used, int64_t calibrate);

}  // namespace dc
