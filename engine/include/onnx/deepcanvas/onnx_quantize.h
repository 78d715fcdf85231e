#pragma once
// ONNX models for deployment: fp16, and int8 in the QDQ form
// (QuantizeLinear/DequantizeLinear around the quantized ops) that
// onnxruntime and TensorRT's explicit quantization read; optionally with the
// input preprocessing inside, so a device feeds the picture's bytes. The
// quantization itself (folding, calibration, the arithmetic) is
// deepcanvas/quantize.h's, which needs no protobuf.
#include <deepcanvas/onnx.h>
#include <deepcanvas/quantize.h>

#include <map>
#include <string>
#include <vector>

namespace dc {

// The preprocessing written into the model: a uint8 picture of the Input's
// size in, normalised as the dataset does ((p/255 - mean) / stddev, or per
// channel). No resize: the device delivers the Input's size, because
// resizing inside the model would not reproduce the project's (OpenCV's)
// interpolation.
struct OnnxPreprocessing {
  bool enabled = false;
  bool nhwc = false;  // the picture as [N, H, W, C] (cameras, most image libraries)
  float mean = 0, stddev = 1;
  std::vector<float> channel_mean, channel_std;  // per channel when set
};

// The lowest opset that has per-axis DequantizeLinear.
constexpr int kOnnxQdqMinOpset = 13;

// fp32 (fp16 false) or fp16 model of `steps` and `weights`. fp16 stores
// every float initializer as float16 and computes in it, with a Cast after
// the input and before the output, so callers still feed and read float32.
std::string onnx_float_model_bytes(const std::vector<PlanStep>& steps,
                                   const std::map<std::string, Tensor>& weights,
                                   const OnnxExportOptions& o, bool fp16,
                                   const OnnxPreprocessing& pre = {});

// The QDQ model of q: int8 weights per output channel behind a
// DequantizeLinear (axis 0), and a QuantizeLinear/DequantizeLinear pair
// (int8, zero point 0, q's calibrated scale) on each quantized op's input.
// Everything else, biases included, stays float. Throws Error for an opset
// below kOnnxQdqMinOpset.
std::string onnx_qdq_model_bytes(const QuantizedNetwork& q, const OnnxExportOptions& o,
                                 const OnnxPreprocessing& pre = {});

}  // namespace dc
