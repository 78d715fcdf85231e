#pragma once
// int8 inference on the CPU: the network quantize.h calibrated, with each
// quantized Conv2D and Dense run by oneDNN's int8 convolution or inner
// product (s8 input and weights, int32 accumulation, f32 bias and output)
// and every other layer by the engine's float layers, in QuantRunner's step
// loop. Its results are the simulated QDQ arithmetic's up to float
// rounding. Also the small file an int8 model is saved as: the input scales
// and how they were calibrated; the weights are quantized again from the
// checkpoint, which is deterministic. docs/ARCHITECTURE.md,
// "Quantization", has the choices.
#include <deepcanvas/plan.h>
#include <deepcanvas/quantize.h>
#include <deepcanvas/tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dc {

// ---- The int8 model file ("deepcanvas-int8", JSON) -----------------------

// What the file records besides the scales (informative; loading does not
// need it).
struct Int8ModelInfo {
  int64_t calibration_samples = 0;
  double percentile = 99.99;
  std::string checkpoint;  // the file the scales were calibrated with
};

// The file's text. Each quantized op: its layer name and type, its input's
// scale and a fingerprint of its folded float weight and bias, which
// loading checks so that scales calibrated on one checkpoint are never
// applied to another's weights.
std::string int8_model_json(const QuantizedNetwork& q, const Int8ModelInfo& info = {});
void save_int8_model(const std::string& path, const QuantizedNetwork& q,
                     const Int8ModelInfo& info = {});

// Reads `path` against `net` (fold_batch_norms of the network and the
// checkpoint it is meant for) and quantizes its weights. Throws Error with
// the reason for a file that is not one, is of another version, or was
// written for another network or other weights.
QuantizedNetwork parse_int8_model(const std::string& text, const QuantNetwork& net,
                                  const std::string& path = "int8 model");
QuantizedNetwork load_int8_model(const std::string& path, const QuantNetwork& net);
// The same from a plan holding the trained weights (the CLI's and the
// app's loaded model).
QuantizedNetwork load_int8_model(const std::string& path, const Plan& plan);

// The file written beside an int8 ONNX model: "m.onnx" -> "m.int8.json".
std::string int8_model_path_for(const std::string& onnx_path);

// ---- The executor ---------------------------------------------------------

// Whether this build has oneDNN, which the executor needs.
bool int8_inference_available();
// The instruction set oneDNN dispatches to on this CPU ("avx512_core_amx",
// "avx512_core_vnni", "avx2", ...; "none" without oneDNN).
std::string int8_cpu_isa();
// Whether oneDNN's int8 kernels here multiply the weights as they are: on
// a CPU without VNNI (AVX-512 VNNI, AVX-VNNI or AMX) they halve them
// first, to keep the 16-bit intermediate sums of vpmaddubsw from
// saturating, and the results then differ from the simulated arithmetic by
// up to half a weight step per product.
bool int8_exact_on_this_cpu();
// What to tell a user where that is not so (empty where it is, or without
// oneDNN).
std::string int8_cpu_note();

// quantize_value(x, scale) saturated to int8, in a form loops vectorise:
// after the clamp the value is within [-128, 127], where adding and
// subtracting 1.5 * 2^23 rounds it half to even in the default rounding
// mode, as std::nearbyint does (which without SSE4.1 is a library call per
// value). NaN gives 0, as quantize_value.
inline int8_t quantize_s8_value(float x, float scale) {
  float r = x / scale;
  r = r == r ? r : 0.f;
  r = r < -128.f ? -128.f : r;
  r = r > 127.f ? 127.f : r;
  r = (r + 12582912.f) - 12582912.f;
  return int8_t(int32_t(r));
}
void quantize_s8(const float* x, int8_t* q, int64_t n, float scale);

class Int8Runner {
 public:
  // q must outlive the runner. Batches of up to max_batch samples; oneDNN's
  // primitives are created for each batch size on first use and kept.
  // Throws Error without oneDNN ("int8 inference needs oneDNN").
  Int8Runner(const QuantizedNetwork& q, int64_t max_batch);
  ~Int8Runner();
  Int8Runner(const Int8Runner&) = delete;
  Int8Runner& operator=(const Int8Runner&) = delete;

  // x: [n, ...input], n <= max_batch. observe(step, output) after every
  // step of q.net; a ReLU fused into the op before it shares that op's
  // output, so both are observed after the ReLU.
  const Tensor& forward(const Tensor& x,
                        const std::function<void(int, const Tensor&)>& observe = {});

  int64_t max_batch() const;
  const Shape& input_shape() const;   // per sample
  const Shape& output_shape() const;  // per sample
  // The oneDNN implementations that ran, one line per op ("conv1:
  // brgconv:avx512_core_amx_int8 (batch 1)"), after a forward.
  std::vector<std::string> kernels() const;
  // Names of the ReLU steps fused into the op before them.
  std::vector<std::string> fused_relus() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The median of `repeats` timed calls of fn (seconds), after `warmup`
// untimed ones: what the CLI and the app report as latency.
double median_seconds(const std::function<void()>& fn, int repeats = 10, int warmup = 2);

}  // namespace dc
