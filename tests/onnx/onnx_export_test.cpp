// ONNX export: every template and layer writes a model the ONNX checker
// accepts, with the layers' names and a dynamic batch; and an independent
// runtime (OpenCV's DNN module, from Debian) computes the same outputs as
// the engine from it, at the default opset and at the old ones OpenCV 4.6
// needs for recurrent layers.
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/npy.h>
#include <deepcanvas/onnx.h>
#include <deepcanvas/project.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#ifdef DC_TEST_OPENCV_DNN
#include <opencv2/dnn.hpp>
#endif

#include "../engine/test_util.h"

namespace dc {
namespace {

namespace fs = std::filesystem;

using test::project_files;

// OpenCV 4.6's importer cannot read two forms: Gather with indices that are
// not constants (Embedding) and the RNN op (its activations attribute).
// Those models are checked with onnxruntime instead. Its recurrent layers
// also need a fixed batch (OnnxExportOptions::batch).
// OpenCV 4.6 has no LayerNormalization (opset 17), and fails in its shape
// code on the single-op form (ReduceMean over the last axis then a
// broadcast Sub) that opsets before 17 get: LayerNorm's ONNX forms are
// checked by onnxruntime and the ONNX checker instead; so are attention's
// (4-D MatMuls and Transposes that OpenCV 4.6 does not take), and the class
// token's and token pooling's (shape arithmetic, a reduction over tokens).
bool opencv_reads(const Graph& g) {
  for (const auto& [id, n] : g.nodes())
    if (n.type == "Embedding" || n.type == "SimpleRNN" || n.type == "LayerNorm" ||
        n.type == "MultiHeadAttention" || n.type == "ClassToken" || n.type == "TokenPooling" ||
        n.type == "ChannelScale")  // at batch 1 only (OpenCvReproducesSqueezeExcitationAtBatchOne)
      return false;
  return true;
}

bool recurrent(const Graph& g) {
  for (const auto& [id, n] : g.nodes())
    if (n.type == "LSTM" || n.type == "GRU" || n.type == "SimpleRNN") return true;
  return false;
}

onnx::ModelProto parsed(const std::string& bytes) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(bytes));
  return m;
}

// The vocabulary of a network that reads token ids (its Embedding's), or 0.
int64_t token_vocab(const Graph& g) {
  for (const auto& [id, n] : g.nodes())
    if (n.type == "Embedding")
      return LayerRegistry::instance().get(n.type).with_defaults(n.attrs).i("vocab_size");
  return 0;
}

// Normal values, or token ids for a network that reads them.
Tensor random_input(const Graph& g, const Plan& plan, int64_t n, uint64_t seed) {
  Tensor x(plan.input_shape().with_batch(n));
  Rng r(seed);
  const int64_t vocab = token_vocab(g);
  for (int64_t i = 0; i < x.numel(); ++i)
    x.f32()[i] = vocab ? float(r.next_u64() % uint64_t(vocab)) : r.normal();
  return x;
}

Graph chain(std::vector<std::pair<std::string, Attrs>> layers) {
  Graph g;
  NodeId prev = -1;
  for (auto& [type, a] : layers) {
    NodeId id = g.add_node(type, g.unique_name(type == "Input" ? "input" : type), a);
    if (prev >= 0) g.connect(prev, id);
    prev = id;
  }
  return g;
}

Attrs A(std::initializer_list<std::pair<const std::string, AttrValue>> kv) {
  Attrs a;
  for (auto& [k, v] : kv) a.set(k, v);
  return a;
}

// Squeeze-and-excitation as EfficientNet and MobileNetV3 have it: the
// values times a gate computed from them (pooled, Dense, Sigmoid).
Graph squeeze_excitation() {
  Graph g;
  const NodeId in = g.add_node("Input", "input", A({{"shape", std::vector<int64_t>{6, 5, 5}}}));
  const NodeId conv = g.add_node(
      "Conv2D", "conv", A({{"filters", int64_t(8)}, {"kernel", std::vector<int64_t>{3, 3}}}));
  const NodeId pool = g.add_node("GlobalAvgPool2D", "pool", {});
  const NodeId fc = g.add_node("Dense", "fc", A({{"units", int64_t(8)}}));
  const NodeId gate = g.add_node("Sigmoid", "gate", {});
  const NodeId scale = g.add_node("ChannelScale", "scale", {});
  const NodeId flat = g.add_node("Flatten", "flat", {});
  g.connect(in, conv);
  g.connect(conv, pool);
  g.connect(pool, fc);
  g.connect(fc, gate);
  g.connect(conv, scale, 0);
  g.connect(gate, scale, 1);
  g.connect(scale, flat);
  return g;
}

// Each layer form on its own, including the ones no template uses: asymmetric
// "same" padding with stride 2, dilation and groups; padded average pooling
// (padding counted); exact GELU; LeakyReLU; a Softmax; Reshape; BatchNorm1D;
// LayerNorm (LayerNormalization from opset 17, single ops before).
std::vector<std::pair<std::string, Graph>> layer_form_cases() {
  register_builtin_layers();
  const Attrs img = A({{"shape", std::vector<int64_t>{4, 9, 9}}});
  return {
      {"conv same stride 2 groups dilation",
       chain({{"Input", img},
              {"Conv2D", A({{"filters", int64_t(6)},
                            {"kernel", std::vector<int64_t>{3, 3}},
                            {"stride", std::vector<int64_t>{2, 2}},
                            {"dilation", std::vector<int64_t>{2, 1}},
                            {"groups", int64_t(2)},
                            {"padding_mode", std::string("same")}})},
              {"Flatten", {}}})},
      {"avg pool with padding (counted, as PyTorch)",
       chain({{"Input", img},
              {"AvgPool2D", A({{"kernel", std::vector<int64_t>{3, 3}},
                               {"stride", std::vector<int64_t>{2, 2}},
                               {"padding", std::vector<int64_t>{1, 1}}})},
              {"Flatten", {}}})},
      {"leaky relu", chain({{"Input", img}, {"LeakyReLU", A({{"slope", 0.2}})}, {"Flatten", {}}})},
      {"max pool, batch norm 2d, global pool",
       chain({{"Input", img},
              {"MaxPool2D", A({{"kernel", std::vector<int64_t>{2, 2}},
                               {"stride", std::vector<int64_t>{2, 2}},
                               {"padding", std::vector<int64_t>{1, 1}}})},
              {"BatchNorm2D", {}},
              {"GlobalAvgPool2D", {}}})},
      {"gelu", chain({{"Input", A({{"shape", std::vector<int64_t>{12}}})},
                      {"Dense", A({{"units", int64_t(16)}})},
                      {"GELU", {}}})},
      {"layer norm, affine and plain",
       chain({{"Input", A({{"shape", std::vector<int64_t>{12}}})},
              {"Dense", A({{"units", int64_t(16)}})},
              {"LayerNorm", {}},
              {"LayerNorm", A({{"affine", false}, {"eps", 1e-3}})}})},
      {"layer norm over each step of a sequence",
       chain({{"SequenceInput", A({{"steps", int64_t(5)}, {"features", int64_t(6)}})},
              {"LayerNorm", {}},
              {"LastStep", A({{"index", int64_t(-1)}})}})},
      {"attention: self, then causal without biases",
       chain({{"SequenceInput", A({{"steps", int64_t(6)}, {"features", int64_t(8)}})},
              {"MultiHeadAttention", A({{"heads", int64_t(2)}})},
              {"MultiHeadAttention", A({{"heads", int64_t(4)}, {"causal", true}, {"bias", false}})},
              {"LastStep", A({{"index", int64_t(-1)}})}})},
      {"vision transformer stem: patches, class token, positions, first token",
       chain({{"Input", img},
              {"Conv2D", A({{"filters", int64_t(8)},
                            {"kernel", std::vector<int64_t>{3, 3}},
                            {"stride", std::vector<int64_t>{3, 3}}})},
              {"ImageToTokens", {}},
              {"ClassToken", {}},
              {"PositionalEmbedding", {}},
              {"PositionalEmbedding", A({{"kind", std::string("sinusoidal")}})},
              {"TokenPooling", A({{"mode", std::string("first")}})}})},
      {"mean of tokens",
       chain({{"SequenceInput", A({{"steps", int64_t(5)}, {"features", int64_t(3)}})},
              {"TokenPooling", {}}})},
      {"batch norm 1d", chain({{"Input", A({{"shape", std::vector<int64_t>{12}}})},
                               {"Dense", A({{"units", int64_t(16)}})},
                               {"BatchNorm1D", {}}})},
      {"dropout, dense without bias, sigmoid, tanh, softmax",
       chain({{"Input", A({{"shape", std::vector<int64_t>{12}}})},
              {"Dropout", A({{"rate", 0.5}})},
              {"Dense", A({{"units", int64_t(8)}, {"bias", false}})},
              {"Sigmoid", {}},
              {"Tanh", {}},
              {"Softmax", {}}})},
      {"bidirectional 2-layer GRU with sequences, time-distributed dense, last step",
       chain({{"SequenceInput", A({{"steps", int64_t(6)}, {"features", int64_t(2)}})},
              {"GRU", A({{"hidden_size", int64_t(4)},
                         {"num_layers", int64_t(2)},
                         {"bidirectional", true},
                         {"return_sequences", true}})},
              {"TimeDistributedDense", A({{"units", int64_t(3)}})},
              {"LastStep", A({{"index", int64_t(-2)}})}})},
      {"token ids, embedding, tanh SimpleRNN with sequences, last step",
       chain(
           {{"SequenceInput",
             A({{"steps", int64_t(7)}, {"features", int64_t(1)}, {"kind", std::string("tokens")}})},
            {"Embedding", A({{"vocab_size", int64_t(13)}, {"dim", int64_t(4)}})},
            {"SimpleRNN", A({{"hidden_size", int64_t(5)}, {"return_sequences", true}})},
            {"LastStep", A({{"index", int64_t(-1)}})}})},
      {"bidirectional LSTM final states, relu SimpleRNN",
       chain({{"SequenceInput", A({{"steps", int64_t(5)}, {"features", int64_t(3)}})},
              {"SimpleRNN", A({{"hidden_size", int64_t(4)},
                               {"nonlinearity", std::string("relu")},
                               {"return_sequences", true}})},
              {"LSTM", A({{"hidden_size", int64_t(6)}, {"bidirectional", true}})},
              {"Dense", A({{"units", int64_t(2)}})}})},
      {"SiLU, HardSwish, channel shuffle and slice, HardSigmoid",
       chain({{"Input", img},
              {"Conv2D", A({{"filters", int64_t(8)}, {"kernel", std::vector<int64_t>{3, 3}}})},
              {"SiLU", {}},
              {"HardSwish", {}},
              {"ChannelShuffle", A({{"groups", int64_t(4)}})},
              {"ChannelSlice", A({{"start", int64_t(2)}, {"count", int64_t(5)}})},
              {"HardSigmoid", {}},
              {"Flatten", {}},
              {"Dense", A({{"units", int64_t(3)}})}})},
      {"squeeze-and-excitation", squeeze_excitation()},
      {"reshape",
       chain({{"Input", A({{"shape", std::vector<int64_t>{36}}})},
              {"Reshape", A({{"shape", std::vector<int64_t>{1, 6, 6}}})},
              {"Conv2D", A({{"filters", int64_t(2)}, {"kernel", std::vector<int64_t>{3, 3}}})},
              {"Flatten", {}}})},
  };
}

#ifdef DC_TEST_OPENCV_DNN
// max |a - b| / max(1, max |a|): relative to the output's scale.
double relative_difference(const Tensor& ours, const cv::Mat& theirs) {
  EXPECT_EQ(int64_t(theirs.total()), ours.numel());
  double diff = 0, scale = 1;
  const float* t = theirs.ptr<float>();
  for (int64_t i = 0; i < std::min<int64_t>(ours.numel(), int64_t(theirs.total())); ++i) {
    diff = std::max(diff, double(std::fabs(ours.f32()[i] - t[i])));
    scale = std::max(scale, double(std::fabs(ours.f32()[i])));
  }
  return diff / scale;
}

// The engine's output and OpenCV DNN's from the exported model, batch nb.
double opencv_vs_engine(const Graph& g, int opset, uint64_t seed, int64_t nb = 3) {
  Plan plan(g, nb);
  plan.init_params(seed);
  // BatchNorm's running statistics start at 0/1; make them matter.
  for (auto& [name, t] : plan.state())
    if (name.find("running_") != std::string::npos)
      for (int64_t i = 0; i < t.numel(); ++i)
        const_cast<float*>(t.f32())[i] = name.find("var") != std::string::npos
                                             ? 0.5f + 0.1f * float(i % 7)
                                             : 0.05f * float(i % 5);
  OnnxExportOptions o;
  o.opset = opset;
  if (recurrent(g)) o.batch = 3;
  const std::string bytes = onnx_model_bytes(g, plan, o);
  cv::dnn::Net net = cv::dnn::readNetFromONNX(bytes.data(), bytes.size());
  Tensor x = random_input(g, plan, nb, seed + 1);
  std::vector<int> dims;
  for (int64_t d : x.shape().dims()) dims.push_back(int(d));
  cv::Mat in(int(dims.size()), dims.data(), CV_32F, x.f32());
  net.setInput(in);
  cv::Mat out = net.forward().clone();
  RunContext ctx{false, nullptr};
  return relative_difference(plan.forward(x, ctx), out);
}
#endif

TEST(OnnxExport, EveryLayerFormPassesTheChecker) {
  for (const auto& [what, g] : layer_form_cases()) {
    Plan plan(g, 1);
    plan.init_params(1);
    for (int opset : {17, 11}) {
      OnnxExportOptions o;
      o.opset = opset;
      onnx::ModelProto m = parsed(onnx_model_bytes(g, plan, o));
      EXPECT_NO_THROW(onnx::checker::check_model(m)) << what << " " << opset;
      bool layer_normalization = false;
      for (const auto& n : m.graph().node())
        layer_normalization |= n.op_type() == "LayerNormalization";
      if (what.find("layer norm") != std::string::npos) {
        EXPECT_EQ(layer_normalization, opset >= 17) << what << " " << opset;
      }
    }
  }
}

TEST(OnnxExport, EveryTemplatePassesTheCheckerAtEveryOpset) {
  register_builtin_layers();
  int exported = 0;
  for (const std::string& path : project_files()) {
    SCOPED_TRACE(path);
    Project p = load_project(path);
    Plan plan(p.graph, 1);
    plan.init_params(1);
    for (int opset : {17, 13, 12, 11, 10}) {
      OnnxExportOptions o;
      o.opset = opset;
      o.model_name = p.name;
      onnx::ModelProto m = parsed(onnx_model_bytes(p.graph, plan, o));
      EXPECT_NO_THROW(onnx::checker::check_model(m)) << opset;
      EXPECT_EQ(m.opset_import(0).version(), opset);
      ASSERT_EQ(m.graph().input_size(), 1);
      EXPECT_EQ(m.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "N");
      // Initializers keep the checkpoints' names, every parameter once.
      std::set<std::string> names;
      for (const auto& t : m.graph().initializer()) names.insert(t.name());
      // Recurrent weights are restacked per layer in ONNX's gate order
      // (lstm.W_l0 from lstm.weight_ih_l0 and _reverse).
      for (const auto& [name, t] : plan.state()) {
        const auto at = name.find("_ih_l");
        if (at != std::string::npos) {
          EXPECT_TRUE(
              names.count(name.substr(0, name.find(".") + 1) + "W" + name.substr(at + 3, 3)))
              << name;
        } else if (name.find("_hh_l") == std::string::npos) {
          EXPECT_TRUE(names.count(name)) << name;
        }
      }
    }
    ++exported;
  }
  EXPECT_GE(exported, 9);
}

#ifdef DC_TEST_OPENCV_DNN
// OpenCV 4.6 reads convolutional networks at any opset, recurrent ones only
// up to opset 12.
TEST(OnnxExport, OpenCvReproducesTheEngineOnEveryTemplate) {
  for (const std::string& path : project_files()) {
    SCOPED_TRACE(path);
    Project p = load_project(path);
    if (!opencv_reads(p.graph)) continue;
    const std::vector<int> opsets =
        recurrent(p.graph) ? std::vector<int>{12, 11} : std::vector<int>{17, 11};
    for (int opset : opsets)
      EXPECT_LT(opencv_vs_engine(p.graph, opset, 7), 1e-4) << path << " " << opset;
  }
}

// OpenCV 4.6 multiplies every sample by the first sample's gate (a Mul
// of [N, C, H, W] by [N, C, 1, 1] is 0.14 off at batch 3), so the
// squeeze-and-excitation form is checked at batch 1 only.
TEST(OnnxExport, OpenCvReproducesSqueezeExcitationAtBatchOne) {
  for (int opset : {17, 11}) EXPECT_LT(opencv_vs_engine(squeeze_excitation(), opset, 3, 1), 1e-4);
}
TEST(OnnxExport, OpenCvReproducesEveryLayerForm) {
  for (const auto& [what, g] : layer_form_cases()) {
    if (!opencv_reads(g)) continue;
    for (int opset : recurrent(g) ? std::vector<int>{12, 11} : std::vector<int>{17, 11}) {
      EXPECT_LT(opencv_vs_engine(g, opset, 3), 1e-4) << what << " " << opset;
    }
  }
}

#endif

// onnxruntime (PyPI, in the virtual environment installer/verify-venv.sh
// makes): the reference runtime for every template, with a dynamic batch.
std::string verify_python() {
  const char* env = std::getenv("DC_VERIFY_VENV");
  const std::string venv = env ? env : std::string(DC_SOURCE_DIR) + "/.venv-verify";
  return fs::exists(venv + "/bin/python") ? venv + "/bin/python" : "";
}

double onnxruntime_vs_engine(const Graph& g, int opset, uint64_t seed, const fs::path& dir) {
  Plan plan(g, 3);
  plan.init_params(seed);
  OnnxExportOptions o;
  o.opset = opset;
  write_file_atomic((dir / "m.onnx").string(), onnx_model_bytes(g, plan, o));
  Tensor x = random_input(g, plan, 3, seed + 1);
  save_npy((dir / "x.npy").string(), x);
  const std::string cmd = verify_python() + " " + DC_SOURCE_DIR + "/tests/onnx/ort_run.py " +
                          (dir / "m.onnx").string() + " " + (dir / "x.npy").string() + " " +
                          (dir / "y.npy").string() + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  EXPECT_EQ(p ? ::pclose(p) : -1, 0) << out;
  NpyArray y = load_npy((dir / "y.npy").string());
  RunContext ctx{false, nullptr};
  const Tensor& ours = plan.forward(x, ctx);
  EXPECT_EQ(y.data.numel(), ours.numel());
  double diff = 0, scale = 1;
  for (int64_t i = 0; i < std::min(ours.numel(), y.data.numel()); ++i) {
    diff = std::max(diff, double(std::fabs(ours.f32()[i] - y.data.f32()[i])));
    scale = std::max(scale, double(std::fabs(ours.f32()[i])));
  }
  return diff / scale;
}

TEST(OnnxExport, OnnxRuntimeReproducesTheEngineOnEveryTemplate) {
  if (verify_python().empty())
    GTEST_SKIP() << "onnxruntime is not installed: run installer/verify-venv.sh (downloads it "
                    "from PyPI into .venv-verify)";
  const fs::path dir = fs::temp_directory_path() / ("dc_ort_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  int checked = 0;
  for (const std::string& path : project_files()) {
    SCOPED_TRACE(path);
    Project p = load_project(path);
    for (int opset : {17, 12}) {
      EXPECT_LT(onnxruntime_vs_engine(p.graph, opset, 11, dir), 1e-4) << opset;
      ++checked;
    }
  }
  for (const auto& [what, g] : layer_form_cases())
    for (int opset : {17, 11}) EXPECT_LT(onnxruntime_vs_engine(g, opset, 5, dir), 1e-4) << what;
  fs::remove_all(dir);
  EXPECT_GE(checked, 18);
}

TEST(OnnxExport, UnsupportedOpsetsAndLayersAreNamed) {
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/resources/templates/lstm_rows.dcproj");
  EXPECT_TRUE(onnx_unsupported(p.graph, 12).empty());
  for (auto& [id, n] : p.graph.nodes())
    if (n.type == "LSTM") p.graph.set_attr(id, "initial_state", std::string("learned"));
  auto why = onnx_unsupported(p.graph, 9);
  ASSERT_EQ(why.size(), 2u);
  EXPECT_NE(why[0].find("opset 9 is not supported (use 10 to 18)"), std::string::npos) << why[0];
  EXPECT_NE(why[1].find("LSTM '"), std::string::npos) << why[1];
  EXPECT_NE(why[1].find("learned initial state"), std::string::npos) << why[1];
  Plan plan(p.graph, 1);
  OnnxExportOptions o;
  o.opset = 9;
  try {
    onnx_model_bytes(p.graph, plan, o);
    ADD_FAILURE() << "exported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(why[1]), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dc
