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

// ONNX import: a model (as PyTorch's torch.onnx.export writes it) becomes a
// DeepCanvas graph and its weights. Subgraphs are matched to layers (Conv
// with a zero Pad before it, Gemm/MatMul+Add, the Transpose/Reshape/Gather
// around LSTM/GRU ops, the shape arithmetic of initial states); see
// docs/ARCHITECTURE.md for the list.

// Larger files are refused before they are read: protobuf cannot parse a
// message of 2 GiB or more, and such models keep their weights in external
// data, which the importer does not read.
constexpr int64_t kOnnxImportMaxBytes = (int64_t(2) << 30) - 1;

struct OnnxImport {
  Graph graph;  // laid out in columns; one Input, one output
  // Checkpoint tensors by name: "<layer>.<param>". Layers are named after
  // their PyTorch module where the model says it ("layer1.0.conv1"), so the
  // names are the initializers' ("layer1.0.conv1.weight").
  std::vector<std::pair<std::string, Tensor>> weights;
  std::string name;  // the ONNX graph's name
};

// Parses and converts a serialized ModelProto. Throws Error naming `source`:
// not ONNX or truncated, the ONNX checker's complaint, external data, an
// input without a fixed size, or every unsupported op at once, one per line
// ("Op 'node name': why").
OnnxImport onnx_import_bytes(const std::string& bytes, const std::string& source);
// The same from a file, refusing one larger than kOnnxImportMaxBytes.
OnnxImport onnx_import_file(const std::string& path);

// Imports `onnx_path` and writes the project (`project_path`, .dcproj) and
// its weights beside it (the same name with .safetensors), each atomically;
// nothing is written when the import fails, and the checkpoint is removed
// again when the project cannot be written. Returns the checkpoint's path.
std::string import_onnx(const std::string& onnx_path, const std::string& project_path);

// Where import_onnx puts the weights of `project_path`.
std::string onnx_import_checkpoint_path(const std::string& project_path);

}  // namespace dc
