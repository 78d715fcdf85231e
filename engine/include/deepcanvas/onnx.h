#pragma once
// ONNX export: a network and its weights as an ONNX model that onnxruntime,
// OpenCV DNN, TensorRT and Netron read. Built only where Debian's ONNX
// library is installed (DC_HAVE_ONNX); it writes the protobuf through that
// library and runs its checker on every model before writing it.
#include <deepcanvas/graph.h>
#include <deepcanvas/plan.h>

#include <string>
#include <vector>

namespace dc {

struct OnnxExportOptions {
  // 17 by default; 10 to 12 for OpenCV 4.6's importer, which reads
  // recurrent layers only up to opset 12.
  int opset = 17;
  std::string model_name;  // the graph's name (the project's)
  // 0: the batch dimension is dynamic ("N"). A fixed batch is for runtimes
  // that need one, such as OpenCV 4.6 with recurrent layers; it also gives
  // GRU and LSTM an explicit zero initial state, which OpenCV's GRU requires.
  int64_t batch = 0;
};

constexpr int kOnnxMinOpset = 10, kOnnxMaxOpset = 18;

// Every layer of g that cannot be written at `opset`, as "LSTM 'lstm1': why".
// Empty when the whole network exports.
std::vector<std::string> onnx_unsupported(const Graph& g, int opset);

// The serialized ModelProto of g with plan's weights (plan was built from g).
// The batch dimension is dynamic ("N"); values and initializers keep the
// layers' names ("conv1", "conv1.weight"). Throws Error listing every layer
// that cannot be exported, or the checker's message.
std::string onnx_model_bytes(const Graph& g, const Plan& plan, const OnnxExportOptions& o);

// Writes it atomically.
void export_onnx(const std::string& path, const Graph& g, const Plan& plan,
                 const OnnxExportOptions& o);

}  // namespace dc
