// ONNX import: models exported by PyTorch (Debian's python3-torch and
// python3-torchvision, run by tests/onnx/make_import_fixtures.py into a
// temporary folder) import and reproduce PyTorch's outputs; an unsupported
// model fails with every unsupported op named; bad files fail clearly and
// write nothing; import -> export -> import gives the same graph and outputs.
#include <deepcanvas/blocks.h>
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/npy.h>
#include <deepcanvas/onnx.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/project.h>
#include <deepcanvas/pytorch_export.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include <onnx/onnx_pb.h>

#include "../engine/test_util.h"
#include "../engine/torch_ref_util.h"

namespace dc {
namespace {

namespace fs = std::filesystem;

using test::error_of;
using test::kPython;
using test::run_command;

// The fixtures, made once per test process; "" and the reason when
// PyTorch/torchvision are missing.
// Why PyTorch cannot make fixtures here, or "" (asked once per process).
const std::string& torch_missing() {
  static const std::string why = [] {
    int code = 0;
    std::string out = run_command(kPython + " -c 'import torch, torchvision, onnx, numpy'", &code);
    return code == 0 ? std::string()
                     : "python3-torch, python3-torchvision or python3-onnx is not importable by " +
                           kPython + ": " + out;
  }();
  return why;
}

// Fixtures are cached in the build tree, in a folder named after the
// script's contents (an edited script makes new ones): ctest runs every test
// in a process of its own, and exporting them all each time would take
// minutes on CI's two cores.
fs::path fixture_dir() {
  static const fs::path dir = [] {
    const std::string script =
        read_file(std::string(DC_SOURCE_DIR) + "/tests/onnx/make_import_fixtures.py");
    return fs::path(DC_BINARY_DIR) / "onnx_import_fixtures" /
           std::to_string(std::hash<std::string>{}(script));
  }();
  return dir;
}

// Makes the named fixtures where missing; "" or why they cannot be made.
std::string need(const std::vector<std::string>& names) {
  if (!torch_missing().empty()) return torch_missing();
  const fs::path dir = fixture_dir();
  std::string todo;
  for (const std::string& n : names)
    if (!fs::exists(dir / (n + ".output.npy"))) todo += " " + n;  // written last
  if (todo.empty()) return "";
  // Made aside and moved in, so a concurrent test never reads half a file.
  const fs::path tmp = dir / (".tmp-" + std::to_string(::getpid()));
  int code = 0;
  const std::string out = run_command(
      kPython + " " + DC_SOURCE_DIR + "/tests/onnx/make_import_fixtures.py " + tmp.string() + todo,
      &code);
  if (code != 0) return "make_import_fixtures.py failed: " + out;
  for (const auto& e : fs::directory_iterator(tmp))
    if (e.path().extension() != ".npy") fs::rename(e.path(), dir / e.path().filename());
  for (const auto& e : fs::directory_iterator(tmp))  // the outputs last
    if (e.path().extension() == ".npy") fs::rename(e.path(), dir / e.path().filename());
  fs::remove_all(tmp);
  return "";
}

#define REQUIRE_FIXTURES(...)                    \
  do {                                           \
    const std::string why = need({__VA_ARGS__}); \
    if (!why.empty()) GTEST_SKIP() << why;       \
  } while (0)

// max|ours - ref| / max(1, max|ref|)
double relative_diff(const Tensor& ours, const Tensor& ref) {
  EXPECT_EQ(ours.numel(), ref.numel());
  double diff = 0, scale = 1;
  for (int64_t i = 0; i < std::min(ours.numel(), ref.numel()); ++i) {
    diff = std::max(diff, double(std::fabs(ours.f32()[i] - ref.f32()[i])));
    scale = std::max(scale, double(std::fabs(ref.f32()[i])));
  }
  return diff / scale;
}

Tensor run(const Graph& g, const std::vector<std::pair<std::string, Tensor>>& weights,
           const Tensor& x) {
  Plan plan(g, x.dim(0));
  plan.load_state(weights, "imported");
  RunContext ctx{false, nullptr};
  return plan.forward(x, ctx).clone();
}

double imported_vs_pytorch(const std::string& name, OnnxImport* keep = nullptr) {
  const fs::path d = fixture_dir();
  OnnxImport im = onnx_import_file((d / (name + ".onnx")).string());
  const NpyArray x = load_npy((d / (name + ".input.npy")).string());
  const NpyArray y = load_npy((d / (name + ".output.npy")).string());
  Tensor ours = run(im.graph, im.weights, x.data);
  const double r = relative_diff(ours, y.data);
  if (keep) *keep = std::move(im);
  return r;
}

bool has_type(const Graph& g, const std::string& type) {
  for (const auto& [id, n] : g.nodes())
    if (n.type == type) return true;
  return false;
}

int count_type(const Graph& g, const std::string& type) {
  int k = 0;
  for (const auto& [id, n] : g.nodes()) k += n.type == type;
  return k;
}

bool has_weight(const OnnxImport& im, const std::string& name) {
  for (const auto& [n, t] : im.weights)
    if (n == name) return true;
  return false;
}

TEST(OnnxImport, ResNet18MatchesPyTorchWithPyTorchNames) {
  REQUIRE_FIXTURES("resnet18");
  OnnxImport im;
  EXPECT_LT(imported_vs_pytorch("resnet18", &im), 1e-4);
  EXPECT_TRUE(has_weight(im, "fc.weight"));
  EXPECT_TRUE(has_weight(im, "fc.bias"));
  // BatchNorm folded by the exporter: the convolution keeps its module's name.
  EXPECT_TRUE(has_weight(im, "layer1.0.conv1.weight"));
  EXPECT_TRUE(has_weight(im, "layer4.1.conv2.bias"));
  EXPECT_NE(im.graph.find_by_name("layer2.0.downsample.0"), nullptr);
}

TEST(OnnxImport, ResNet18WithBatchNormOpsMatchesPyTorch) {
  REQUIRE_FIXTURES("resnet18_bn");
  OnnxImport im;
  EXPECT_LT(imported_vs_pytorch("resnet18_bn", &im), 1e-4);
  EXPECT_TRUE(has_type(im.graph, "BatchNorm2D"));
  EXPECT_TRUE(has_weight(im, "layer1.0.bn1.running_var"));
  EXPECT_TRUE(has_weight(im, "conv1.weight"));
}

TEST(OnnxImport, MobileNetV2MatchesPyTorch) {
  REQUIRE_FIXTURES("mobilenet_v2");
  OnnxImport im;
  EXPECT_LT(imported_vs_pytorch("mobilenet_v2", &im), 1e-4);
  EXPECT_TRUE(has_type(im.graph, "ReLU6"));
}

TEST(OnnxImport, SqueezeNetWithCeilModePoolingMatchesPyTorch) {
  REQUIRE_FIXTURES("squeezenet1_1");
  OnnxImport im;
  EXPECT_LT(imported_vs_pytorch("squeezenet1_1", &im), 1e-4);
  int ceil = 0;
  for (const auto& [id, n] : im.graph.nodes())
    if (n.type == "MaxPool2D" && n.attrs.b("ceil_mode")) ++ceil;
  EXPECT_EQ(ceil, 3);
  EXPECT_TRUE(has_type(im.graph, "Concat"));
}

TEST(OnnxImport, EfficientNetLiteWithTfSamePaddingMatchesPyTorch) {
  REQUIRE_FIXTURES("efficientnet_lite");
  OnnxImport im;
  EXPECT_LT(imported_vs_pytorch("efficientnet_lite", &im), 1e-4);
  int same = 0, depthwise = 0;
  for (const auto& [id, n] : im.graph.nodes()) {
    if (n.type != "Conv2D") continue;
    if (n.attrs.s("padding_mode") == "same") ++same;
    if (n.attrs.i("groups") > 1) ++depthwise;
  }
  EXPECT_EQ(same, 4);  // the stem and the three strided depthwise convolutions
  EXPECT_GE(depthwise, 6);
}

// nn.LSTM/GRU(2 layers, bidirectional, batch_first) + Linear on y[:, -1]:
// the two ONNX ops become one layer named and weighted as in PyTorch.
void check_stacked_rnn(const std::string& fixture, const std::string& type) {
  OnnxImport im;
  EXPECT_LT(imported_vs_pytorch(fixture, &im), 1e-4);
  const Node* rnn = im.graph.find_by_name("rnn");
  ASSERT_NE(rnn, nullptr);
  EXPECT_EQ(rnn->type, type);
  EXPECT_EQ(rnn->attrs.i("num_layers"), 2);
  EXPECT_TRUE(rnn->attrs.b("bidirectional"));
  EXPECT_TRUE(has_weight(im, "rnn.weight_hh_l1_reverse"));
  EXPECT_TRUE(has_type(im.graph, "LastStep"));
}

// LayerNormalization (opset 17), and torch's ReduceMean/Sub/Pow/Sqrt/Div
// form before it (opset 13).
TEST(OnnxImport, LayerNormalizationMatchesPyTorch) {
  REQUIRE_FIXTURES("layernorm_mlp", "layernorm_mlp_opset13");
  for (const char* name : {"layernorm_mlp", "layernorm_mlp_opset13"}) {
    SCOPED_TRACE(name);
    OnnxImport im;
    EXPECT_LT(imported_vs_pytorch(name, &im), 1e-4);
    const Node* norm = im.graph.find_by_name("norm");
    ASSERT_NE(norm, nullptr);
    EXPECT_EQ(norm->type, "LayerNorm");
    EXPECT_DOUBLE_EQ(norm->attrs.f("eps"), 1e-3);
    EXPECT_EQ(im.graph.nodes().size(), 5u);  // input, fc1, norm, ReLU, fc2
    EXPECT_TRUE(has_weight(im, "norm.weight"));
    EXPECT_TRUE(has_weight(im, "norm.bias"));
  }
}

// nn.Embedding on int64 token ids: a SequenceInput of kind tokens and one
// Embedding named after the module.
TEST(OnnxImport, TokenIdsIntoAnEmbeddingMatchPyTorch) {
  REQUIRE_FIXTURES("token_lstm");
  OnnxImport im;
  EXPECT_LT(imported_vs_pytorch("token_lstm", &im), 1e-4);
  const Node* in = im.graph.find_by_name("input");
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(in->type, "SequenceInput");
  EXPECT_EQ(in->attrs.s("kind"), "tokens");
  EXPECT_EQ(in->attrs.i("steps"), 10);
  const Node* e = im.graph.find_by_name("embed");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->type, "Embedding");
  EXPECT_EQ(e->attrs.i("vocab_size"), 20);
  EXPECT_EQ(e->attrs.i("dim"), 8);
  EXPECT_TRUE(has_weight(im, "embed.weight"));
}

// torchvision's own VisionTransformer (vit_b_16's code, small): its class
// token and pos_embedding keep their parameter names as layer names.
TEST(OnnxImportAttention, TorchvisionVisionTransformerMatchesPyTorch) {
  REQUIRE_FIXTURES("torchvision_vit");
  OnnxImport im;
  EXPECT_LT(imported_vs_pytorch("torchvision_vit", &im), 1e-4);
  EXPECT_EQ(count_type(im.graph, "MultiHeadAttention"), 2);
  EXPECT_EQ(count_type(im.graph, "LayerNorm"), 5);
  const Node* cls = im.graph.find_by_name("class_token");
  ASSERT_NE(cls, nullptr);
  EXPECT_EQ(cls->type, "ClassToken");
  const Node* pos = im.graph.find_by_name("encoder.pos_embedding");
  ASSERT_NE(pos, nullptr);
  EXPECT_EQ(pos->type, "PositionalEmbedding");
}

// A ViT as people write it in PyTorch (strided-Conv patches, flatten(2).
// transpose(1, 2), a class token expanded over a dynamic batch and
// concatenated first, learned positions, a pre-norm encoder layer with
// GELU, the class token's output) imports as DeepCanvas's own token layers.
TEST(OnnxImportAttention, VisionTransformerAsPeopleWriteItMatchesPyTorch) {
  REQUIRE_FIXTURES("tiny_vit");
  OnnxImport im;
  EXPECT_LT(imported_vs_pytorch("tiny_vit", &im), 1e-4);
  for (const char* type : {"ImageToTokens", "ClassToken", "PositionalEmbedding",
                           "MultiHeadAttention", "GELU", "TokenPooling"})
    EXPECT_EQ(count_type(im.graph, type), 1) << type;
  EXPECT_EQ(count_type(im.graph, "LayerNorm"), 3);
  const Node* cls = im.graph.find_by_name("cls");
  ASSERT_NE(cls, nullptr);
  EXPECT_EQ(cls->type, "ClassToken");
  const Node* pos = im.graph.find_by_name("pos");
  ASSERT_NE(pos, nullptr);
  EXPECT_EQ(pos->attrs.s("kind"), "learned");
  for (const auto& [id, n] : im.graph.nodes()) {
    if (n.type == "TokenPooling") {
      EXPECT_EQ(n.attrs.s("mode"), "first");
    }
  }
}

TEST(OnnxImport, StackedBidirectionalLstmMatchesPyTorch) {
  REQUIRE_FIXTURES("lstm");
  check_stacked_rnn("lstm", "LSTM");
}

TEST(OnnxImport, StackedBidirectionalGruMatchesPyTorch) {
  REQUIRE_FIXTURES("gru");
  check_stacked_rnn("gru", "GRU");
}

TEST(OnnxImport, OlderAndNewerOpsetsMatchPyTorch) {
  REQUIRE_FIXTURES("gru_opset11", "efficientnet_lite_opset11", "efficientnet_lite_opset17");
  for (const char* name : {"gru_opset11", "efficientnet_lite_opset11", "efficientnet_lite_opset17"})
    EXPECT_LT(imported_vs_pytorch(name), 1e-4) << name;
}

// max|ours - ref| / max|ref|: randomly initialised classifiers give small
// logits, which relative_diff's floor of 1 would hide.
double error_of_scale(const std::string& name, OnnxImport* keep) {
  const fs::path d = fixture_dir();
  *keep = onnx_import_file((d / (name + ".onnx")).string());
  const NpyArray x = load_npy((d / (name + ".input.npy")).string());
  const NpyArray y = load_npy((d / (name + ".output.npy")).string());
  const Tensor ours = run(keep->graph, keep->weights, x.data);
  EXPECT_EQ(ours.numel(), y.data.numel());
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < std::min(ours.numel(), y.data.numel()); ++i) {
    diff = std::max(diff, double(std::fabs(ours.f32()[i] - y.data.f32()[i])));
    scale = std::max(scale, double(std::fabs(y.data.f32()[i])));
  }
  std::printf("%s: max error %.3g, %.3g of the largest output (%.3g)\n", name.c_str(), diff,
              diff / scale, scale);
  return scale > 0 ? diff / scale : diff;
}

// torchvision's mobile bases, random weights, 2×3×64×64: EfficientNet-B0's
// SiLU (x·Sigmoid(x)) and squeeze-and-excitation (a [C, 1, 1] gate times
// the values), MobileNetV3's HardSwish (x·HardSigmoid(x) before opset 14,
// the op from 14) and HardSigmoid gates, ShuffleNetV2's channel split
// (Slice), shuffle (Reshape, Transpose, Reshape) and Concat.
TEST(OnnxImport, MobileCnnBasesMatchPyTorch) {
  REQUIRE_FIXTURES("efficientnet_b0", "mobilenet_v3_small", "mobilenet_v3_small_opset14",
                   "shufflenet_v2_x0_5");
  OnnxImport im;
  EXPECT_LT(error_of_scale("efficientnet_b0", &im), 1e-3);
  EXPECT_EQ(count_type(im.graph, "ChannelScale"), 16);  // one per MBConv block
  EXPECT_EQ(count_type(im.graph, "Sigmoid"), 16);       // their gates
  EXPECT_EQ(count_type(im.graph, "SiLU"), 49);
  EXPECT_TRUE(has_weight(im, "features.1.0.block.1.fc1.weight"));

  for (const char* name : {"mobilenet_v3_small", "mobilenet_v3_small_opset14"}) {
    EXPECT_LT(error_of_scale(name, &im), 1e-3) << name;
    EXPECT_EQ(count_type(im.graph, "ChannelScale"), 9) << name;
    EXPECT_EQ(count_type(im.graph, "HardSigmoid"), 9) << name;
    EXPECT_EQ(count_type(im.graph, "HardSwish"), 19) << name;
  }

  EXPECT_LT(error_of_scale("shufflenet_v2_x0_5", &im), 1e-3);
  EXPECT_EQ(count_type(im.graph, "ChannelShuffle"), 16);  // one per block
  EXPECT_EQ(count_type(im.graph, "ChannelSlice"), 26);    // both halves of 13 stride-1 blocks
  for (const auto& [id, n] : im.graph.nodes())
    if (n.type == "ChannelShuffle") {
      EXPECT_EQ(n.attrs.i("groups"), 2) << n.name;
    }
}

// The imported networks through DeepCanvas's PyTorch export: model.py
// (nn.SiLU, nn.Hardswish, nn.Hardsigmoid, the gate's broadcast multiply, the
// shuffle's reshape/transpose, channel slices) reproduces the engine.
TEST(OnnxImport, ImportedMobileBasesExportToPyTorch) {
  REQUIRE_FIXTURES("efficientnet_b0", "mobilenet_v3_small", "shufflenet_v2_x0_5");
  test::TmpDir tmp;
  std::string dirs;
  for (const char* name : {"efficientnet_b0", "mobilenet_v3_small", "shufflenet_v2_x0_5"}) {
    Project p;
    p.name = name;
    OnnxImport im = onnx_import_file((fixture_dir() / (std::string(name) + ".onnx")).string());
    p.graph = std::move(im.graph);
    const NpyArray x = load_npy((fixture_dir() / (std::string(name) + ".input.npy")).string());
    Plan plan(p.graph, x.data.dim(0));
    plan.load_state(im.weights, name);
    PyTorchExportOptions o;
    o.data_path = "/nonexistent";  // forward only
    const fs::path dir = tmp.dir / name;
    export_pytorch(dir.string(), p, plan, o);
    RunContext ctx{false, nullptr};
    save_npy((dir / "x.npy").string(), x.data);
    save_npy((dir / "y.npy").string(), plan.forward(x.data, ctx));
    dirs += " " + dir.string();
  }
  int code = 0;
  const std::string out = run_command(
      kPython + " " + std::string(DC_SOURCE_DIR) + "/tests/export/forward_check.py" + dirs, &code);
  ASSERT_EQ(code, 0) << out;
  const auto r = nlohmann::json::parse(out.substr(out.rfind('{')), nullptr, false);
  ASSERT_EQ(r.size(), 3u) << out;
  for (auto& [k, v] : r.items()) {
    ASSERT_TRUE(v.is_number()) << k << ": " << v.dump();
    std::printf("model.py vs the engine, %s: %.3g\n", fs::path(k).filename().c_str(),
                v.get<double>());
    EXPECT_LE(v.get<double>(), 1e-5) << k;
  }
}

// One SGD step on the CPU from the imported weights: finite loss and
// gradients, every layer reached, and the loss moves.
TEST(OnnxImport, ImportedMobileBasesTrainOnTheCpu) {
  REQUIRE_FIXTURES("mobilenet_v3_small", "shufflenet_v2_x0_5");
  for (const char* name : {"mobilenet_v3_small", "shufflenet_v2_x0_5"}) {
    SCOPED_TRACE(name);
    OnnxImport im = onnx_import_file((fixture_dir() / (std::string(name) + ".onnx")).string());
    const NpyArray x = load_npy((fixture_dir() / (std::string(name) + ".input.npy")).string());
    const int64_t N = x.data.dim(0);
    Plan plan(im.graph, N);
    plan.load_state(im.weights, name);
    const int32_t labels[] = {3, 7};
    auto loss = make_loss(LossType::SoftmaxCrossEntropy);
    OptimizerConfig oc;
    oc.type = OptimizerType::Sgd;
    oc.lr = 0.05;
    auto opt = make_optimizer(oc);
    std::vector<Param*> params;
    for (auto& p : plan.params())
      if (p.param->trainable) params.push_back(p.param);
    Rng rng(1);
    float losses[2];
    for (int step = 0; step < 2; ++step) {
      RunContext ctx{true, &rng};
      const Tensor& out = plan.forward(x.data, ctx);
      Tensor dout(out.shape());
      losses[step] = loss->compute(out, Targets{labels, nullptr}, dout);
      ASSERT_TRUE(std::isfinite(losses[step]));
      plan.zero_grad();
      plan.backward(dout, ctx);
      int nonzero = 0;
      for (Param* p : params) {
        bool any = false;
        for (int64_t i = 0; i < p->grad.numel(); ++i) {
          ASSERT_TRUE(std::isfinite(p->grad.f32()[i])) << p->name;
          any |= p->grad.f32()[i] != 0.f;
        }
        nonzero += any;
      }
      EXPECT_GT(nonzero, int(params.size()) / 2);
      opt->step(params, oc.lr);
    }
    EXPECT_NE(losses[0], losses[1]);
  }
}

// SiLU, HardSwish, HardSigmoid and the channel layers through DeepCanvas's
// own export and back, at opsets before and after HardSwish became an op:
// the same layers, names and outputs.
TEST(OnnxImport, MobileLayersRoundTripThroughExport) {
  register_builtin_layers();
  Graph g;
  auto A = [](std::initializer_list<std::pair<const char*, AttrValue>> kv) {
    return test::attrs(kv);
  };
  const NodeId in = g.add_node("Input", "input", A({{"shape", std::vector<int64_t>{3, 6, 6}}}));
  const NodeId conv = g.add_node("Conv2D", "conv",
                                 A({{"filters", int64_t(8)},
                                    {"kernel", std::vector<int64_t>{3, 3}},
                                    {"padding", std::vector<int64_t>{1, 1}}}));
  const NodeId silu = g.add_node("SiLU", "silu", {});
  const NodeId hswish = g.add_node("HardSwish", "hswish", {});
  const NodeId pool = g.add_node("GlobalAvgPool2D", "pool", {});
  const NodeId fc = g.add_node("Dense", "fc", A({{"units", int64_t(8)}}));
  const NodeId gate = g.add_node("HardSigmoid", "gate", {});
  const NodeId scale = g.add_node("ChannelScale", "scale", {});
  const NodeId shuffle = g.add_node("ChannelShuffle", "shuffle", A({{"groups", int64_t(4)}}));
  const NodeId slice =
      g.add_node("ChannelSlice", "slice", A({{"start", int64_t(2)}, {"count", int64_t(5)}}));
  const NodeId flat = g.add_node("Flatten", "flat", {});
  const NodeId head = g.add_node("Dense", "head", A({{"units", int64_t(3)}}));
  g.connect(in, conv);
  g.connect(conv, silu);
  g.connect(silu, hswish);
  g.connect(hswish, pool);
  g.connect(pool, fc);
  g.connect(fc, gate);
  g.connect(hswish, scale, 0);
  g.connect(gate, scale, 1);
  g.connect(scale, shuffle);
  g.connect(shuffle, slice);
  g.connect(slice, flat);
  g.connect(flat, head);
  Plan plan(g, 2);
  plan.init_params(5);
  Tensor x(Shape{2, 3, 6, 6});
  Rng rng(3);
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(-3.f, 3.f);
  RunContext ctx{false, nullptr};
  const Tensor ref = plan.forward(x, ctx).clone();
  std::vector<std::pair<std::string, Tensor>> weights;
  for (auto& p : plan.params()) weights.emplace_back(p.name, p.param->value.clone());
  for (int opset : {11, 13, 14, 17}) {
    SCOPED_TRACE(opset);
    OnnxExportOptions o;
    o.opset = opset;
    OnnxImport b = onnx_import_bytes(onnx_model_bytes(g, plan, o), "mobile layers");
    ASSERT_EQ(b.graph.nodes().size(), g.nodes().size());
    for (const auto& [id, n] : g.nodes()) {
      const Node* m = b.graph.find_by_name(n.name);
      ASSERT_NE(m, nullptr) << n.name;
      EXPECT_EQ(m->type, n.type) << n.name;
    }
    EXPECT_LT(relative_diff(run(b.graph, b.weights, x), ref), 1e-6);
  }
}

// The attention forms the templates do not cover, through DeepCanvas's own
// export and back: cross-attention with fewer keys than queries, causal and
// without biases; causal self-attention; sinusoidal positions; a class token
// read out as the first token. Same layers, attributes and outputs, at
// opsets before and after LayerNormalization became an op.
TEST(OnnxImportAttention, OwnExportOfEveryAttentionFormImportsBack) {
  register_builtin_layers();
  Graph g;
  auto A = [](std::initializer_list<std::pair<const char*, AttrValue>> kv) {
    return test::attrs(kv);
  };
  const NodeId in =
      g.add_node("SequenceInput", "input", A({{"steps", int64_t(6)}, {"features", int64_t(8)}}));
  const NodeId pos =
      g.add_node("PositionalEmbedding", "pos", A({{"kind", std::string("sinusoidal")}}));
  const NodeId tok = g.add_node("ClassToken", "cls", {});
  const NodeId norm = g.add_node("LayerNorm", "norm", {});
  const NodeId cross = g.add_node("MultiHeadAttention", "cross",
                                  A({{"mode", std::string("cross")},
                                     {"heads", int64_t(2)},
                                     {"causal", true},
                                     {"bias", false}}));
  const NodeId self =
      g.add_node("MultiHeadAttention", "self", A({{"heads", int64_t(4)}, {"causal", true}}));
  const NodeId gelu = g.add_node("GELU", "gelu", {});
  const NodeId pool = g.add_node("TokenPooling", "pool", A({{"mode", std::string("first")}}));
  const NodeId head = g.add_node("Dense", "head", A({{"units", int64_t(3)}}));
  g.connect(in, pos);
  g.connect(pos, tok);
  g.connect(pos, norm);
  g.connect(tok, cross, 0);   // 7 queries
  g.connect(norm, cross, 1);  // 6 keys and values
  g.connect(cross, self);
  g.connect(self, gelu);
  g.connect(gelu, pool);
  g.connect(pool, head);
  Plan plan(g, 2);
  plan.init_params(11);
  Tensor x(Shape{2, 6, 8});
  Rng rng(5);
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(-2.f, 2.f);
  RunContext ctx{false, nullptr};
  const Tensor ref = plan.forward(x, ctx).clone();
  for (int opset : {13, 17}) {
    SCOPED_TRACE(opset);
    OnnxExportOptions o;
    o.opset = opset;
    const OnnxImport b = onnx_import_bytes(onnx_model_bytes(g, plan, o), "attention forms");
    ASSERT_EQ(b.graph.nodes().size(), g.nodes().size());
    for (const auto& [id, n] : g.nodes()) {
      const Node* m = b.graph.find_by_name(n.name);
      ASSERT_NE(m, nullptr) << n.name;
      EXPECT_EQ(m->type, n.type) << n.name;
      const LayerDescriptor& d = LayerRegistry::instance().get(n.type);
      EXPECT_TRUE(d.with_defaults(m->attrs) == d.with_defaults(n.attrs)) << n.name;
    }
    // The cross-attention's queries from the class token, keys from the norm.
    const Node* c = b.graph.find_by_name("cross");
    ASSERT_NE(c, nullptr);
    std::vector<std::string> from(2);
    for (const auto& e : b.graph.edges())
      if (e.dst == c->id) from.at(size_t(e.dst_port)) = b.graph.node(e.src).name;
    EXPECT_EQ(from, (std::vector<std::string>{"cls", "norm"}));
    EXPECT_LT(relative_diff(run(b.graph, b.weights, x), ref), 1e-5);
  }
}

// A Mul the importer has no layer for names the op, node and shapes.
// Token ids are read by an Embedding only: ids Cast back to numbers (the
// input truncated) and a Gather by ids along another axis than the table's
// rows are refused, naming why.
TEST(OnnxImportErrors, TokenIdsAreReadOnlyByAnEmbedding) {
  auto model = [](bool cast_back) {
    onnx::ModelProto m;
    m.set_ir_version(7);
    m.add_opset_import()->set_version(13);
    auto* gr = m.mutable_graph();
    gr->set_name("g");
    auto* x = gr->add_input();
    x->set_name("x");
    auto* xt = x->mutable_type()->mutable_tensor_type();
    xt->set_elem_type(onnx::TensorProto::FLOAT);
    xt->mutable_shape()->add_dim()->set_dim_param("N");
    xt->mutable_shape()->add_dim()->set_dim_value(5);
    auto* y = gr->add_output();
    y->set_name("y");
    auto* yt = y->mutable_type()->mutable_tensor_type();
    yt->set_elem_type(onnx::TensorProto::FLOAT);
    yt->mutable_shape();  // rank unknown
    auto node = [&](const char* op, std::vector<std::string> in, const char* out) {
      auto* n = gr->add_node();
      n->set_op_type(op);
      n->set_name(std::string(op) + "_" + out);
      for (const auto& i : in) n->add_input(i);
      n->add_output(out);
      return n;
    };
    auto to = [](onnx::NodeProto* n, int64_t type) {
      auto* a = n->add_attribute();
      a->set_name("to");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(type);
    };
    to(node("Cast", {"x"}, "ids"), onnx::TensorProto::INT64);
    auto* table = gr->add_initializer();
    table->set_name("table");
    table->set_data_type(onnx::TensorProto::FLOAT);
    table->add_dims(7);
    table->add_dims(4);
    for (int k = 0; k < 28; ++k) table->add_float_data(float(k));
    if (cast_back) {
      to(node("Cast", {"ids"}, "f"), onnx::TensorProto::FLOAT);
      node("Relu", {"f"}, "y");
    } else {
      auto* a = node("Gather", {"table", "ids"}, "y")->add_attribute();
      a->set_name("axis");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(1);
    }
    return m.SerializeAsString();
  };
  for (bool cast_back : {true, false}) {
    SCOPED_TRACE(cast_back);
    try {
      onnx_import_bytes(model(cast_back), "ids");
      FAIL() << "imported token ids used otherwise than by an Embedding";
    } catch (const Error& e) {
      const std::string w = e.what();
      EXPECT_NE(
          w.find(cast_back ? "token ids Cast back to numbers" : "Gather by token ids on axis 1"),
          std::string::npos)
          << w;
    }
  }
}

TEST(OnnxImportErrors, MulOfUnrelatedShapesIsNamed) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  auto* gr = m.mutable_graph();
  gr->set_name("g");
  auto add_io = [](onnx::ValueInfoProto* v, const char* name, std::vector<int64_t> dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  add_io(gr->add_input(), "x", {1, 4, 3, 3});
  add_io(gr->add_output(), "y", {1, 4, 3, 3});
  auto* relu = gr->add_node();
  relu->set_op_type("Relu");
  relu->set_name("r");
  relu->add_input("x");
  relu->add_output("a");
  auto* tanh = gr->add_node();
  tanh->set_op_type("Tanh");
  tanh->set_name("t");
  tanh->add_input("x");
  tanh->add_output("b");
  auto* mul = gr->add_node();
  mul->set_op_type("Mul");
  mul->set_name("product");
  mul->add_input("a");
  mul->add_input("b");
  mul->add_output("y");
  try {
    onnx_import_bytes(m.SerializeAsString(), "mul");
    FAIL() << "imported a product of two [4, 3, 3] values";
  } catch (const Error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("Mul 'product'"), std::string::npos) << w;
    EXPECT_NE(w.find("[4, 3, 3] and [4, 3, 3]"), std::string::npos) << w;
  }
}

TEST(OnnxImport, UnsupportedOpsAreListedWithTheirNodeNames) {
  REQUIRE_FIXTURES("unsupported");
  try {
    onnx_import_file((fixture_dir() / "unsupported.onnx").string());
    FAIL() << "imported a model with Erf and Sin";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("2 operations cannot be imported"), std::string::npos) << m;
    EXPECT_NE(m.find("Erf '/Erf'"), std::string::npos) << m;
    EXPECT_NE(m.find("Sin '/Sin'"), std::string::npos) << m;
  }
}

// import -> export (the existing exporter) -> import: the same graph and the
// same outputs.
TEST(OnnxImport, RoundTripThroughExportKeepsGraphAndOutputs) {
  REQUIRE_FIXTURES("resnet18_bn", "squeezenet1_1", "efficientnet_lite", "lstm");
  for (const std::string name : {"resnet18_bn", "squeezenet1_1", "efficientnet_lite", "lstm"}) {
    SCOPED_TRACE(name);
    const fs::path d = fixture_dir();
    OnnxImport a = onnx_import_file((d / (name + ".onnx")).string());
    Plan plan(a.graph, 1);
    plan.load_state(a.weights, "a");
    OnnxExportOptions o;
    o.opset = 13;
    const std::string bytes = onnx_model_bytes(a.graph, plan, o);
    OnnxImport b = onnx_import_bytes(bytes, name + " re-exported");
    ASSERT_EQ(a.graph.nodes().size(), b.graph.nodes().size());
    for (const auto& [id, n] : a.graph.nodes()) {
      const Node* m = b.graph.find_by_name(n.name);
      ASSERT_NE(m, nullptr) << n.name;
      EXPECT_EQ(m->type, n.type) << n.name;
      EXPECT_TRUE(m->attrs == n.attrs) << n.name;
    }
    ASSERT_EQ(a.weights.size(), b.weights.size());
    const NpyArray x = load_npy((d / (name + ".input.npy")).string());
    EXPECT_LT(relative_diff(run(b.graph, b.weights, x.data), run(a.graph, a.weights, x.data)),
              1e-6);
  }
}

// Every template goes through export -> import with its layers' names and types and the
// same outputs; what ONNX has no place for is left out: Dropout (an
// Identity in inference) and training-only attributes such as its rate.
TEST(OnnxImport, EveryTemplateExportedByDeepCanvasImportsBack) {
  register_builtin_layers();
  const std::vector<std::string> files = test::project_files();
  int checked = 0, with_attention = 0;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    // What the export writes: the network with its blocks flattened.
    const Graph g = flatten_blocks(load_project(f).graph);
    with_attention += has_type(g, "MultiHeadAttention");
    Plan plan(g, 3);
    plan.init_params(7);
    const OnnxImport b = onnx_import_bytes(onnx_model_bytes(g, plan, {}), f);
    size_t kept = 0;
    for (const auto& [id, n] : g.nodes()) {
      if (n.type == "Dropout") continue;
      ++kept;
      const Node* m = b.graph.find_by_name(n.name);
      ASSERT_NE(m, nullptr) << n.name;
      EXPECT_EQ(m->type, n.type) << n.name;
    }
    EXPECT_EQ(b.graph.nodes().size(), kept);
    Tensor x(plan.input_shape().with_batch(3));
    // Token ids for an Embedding (below its vocabulary), else values in [-1, 1).
    int64_t vocab = 0;
    for (const auto& [id, n] : g.nodes())
      if (n.type == "Embedding") vocab = n.attrs.i("vocab_size");
    for (int64_t i = 0; i < x.numel(); ++i)
      x.f32()[i] = vocab ? float((i * 7919) % vocab) : float((i * 7919) % 200) / 100.f - 1.f;
    EXPECT_LT(relative_diff(run(b.graph, b.weights, x), run(g, plan.state(), x)), 1e-5);
    ++checked;
  }
  EXPECT_GE(checked, 11);
  EXPECT_GE(with_attention, 3);  // the ViT, the LSTM with attention, the Character Transformer
}

// --- bad input: clear errors, nothing written ---

fs::path scratch(const std::string& what) {
  fs::path d =
      fs::temp_directory_path() / ("dc_onnx_bad_" + what + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string import_error(const fs::path& model, const fs::path& dir) {
  try {
    import_onnx(model.string(), (dir / "out.dcproj").string());
  } catch (const Error& e) {
    EXPECT_FALSE(fs::exists(dir / "out.dcproj"));
    EXPECT_FALSE(fs::exists(dir / "out.safetensors"));
    return e.what();
  }
  ADD_FAILURE() << "imported " << model;
  return "";
}

// A tiny valid model: input [N, 4] -> Gemm -> output, built in C++ so these
// tests run without PyTorch.
onnx::ModelProto tiny_model(const std::vector<int64_t>& input_dims = {-1, 4}) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  auto& g = *m.mutable_graph();
  g.set_name("tiny");
  auto* in = g.add_input();
  in->set_name("x");
  auto* t = in->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : input_dims) {
    auto* dim = t->mutable_shape()->add_dim();
    if (d < 0)
      dim->set_dim_param(d == -1 ? "N" : "H");
    else
      dim->set_dim_value(d);
  }
  auto* w = g.add_initializer();
  w->set_name("fc.weight");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(3);
  w->add_dims(4);
  for (int k = 0; k < 12; ++k) w->add_float_data(0.1f * float(k));
  auto* n = g.add_node();
  n->set_op_type("Gemm");
  n->set_name("/fc/Gemm");
  n->add_input("x");
  n->add_input("fc.weight");
  n->add_output("y");
  auto* a = n->add_attribute();
  a->set_name("transB");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  auto* out = g.add_output();
  out->set_name("y");
  auto* ot = out->mutable_type()->mutable_tensor_type();
  ot->set_elem_type(onnx::TensorProto::FLOAT);
  ot->mutable_shape()->add_dim()->set_dim_param("N");
  ot->mutable_shape()->add_dim()->set_dim_value(3);
  return m;
}

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

TEST(OnnxImportErrors, TinyModelImportsAndWritesProjectAndWeights) {
  const fs::path d = scratch("tiny");
  std::string bytes;
  ASSERT_TRUE(tiny_model().SerializeToString(&bytes));
  write(d / "tiny.onnx", bytes);
  const std::string ck = import_onnx((d / "tiny.onnx").string(), (d / "tiny.dcproj").string());
  EXPECT_EQ(ck, (d / "tiny.safetensors").string());
  Project p = load_project((d / "tiny.dcproj").string());
  ASSERT_NE(p.graph.find_by_name("fc"), nullptr);
  CheckpointInfo c = read_checkpoint(ck);
  ASSERT_EQ(c.model.size(), 1u);
  EXPECT_EQ(c.model[0].first, "fc.weight");
  fs::remove_all(d);
}

TEST(OnnxImportErrors, TruncatedOrNonOnnxFileIsRefused) {
  const fs::path d = scratch("trunc");
  std::string bytes;
  ASSERT_TRUE(tiny_model().SerializeToString(&bytes));
  write(d / "trunc.onnx", bytes.substr(0, bytes.size() / 2));
  EXPECT_NE(import_error(d / "trunc.onnx", d).find("not an ONNX model"), std::string::npos);
  write(d / "text.onnx", "this is a text file, not a model\n");
  EXPECT_NE(import_error(d / "text.onnx", d).find("not an ONNX model"), std::string::npos);
  write(d / "empty.onnx", "");
  EXPECT_NE(import_error(d / "empty.onnx", d).find("not an ONNX model"), std::string::npos);
  fs::remove_all(d);
}

// The message of importing m (from a file, into a scratch folder).
std::string import_error(const onnx::ModelProto& m, const std::string& what) {
  const fs::path d = scratch(what);
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  write(d / (what + ".onnx"), bytes);
  const std::string msg = import_error(d / (what + ".onnx"), d);
  fs::remove_all(d);
  return msg;
}

TEST(OnnxImportErrors, ExternalDataIsRefused) {
  onnx::ModelProto m = tiny_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = w->add_external_data();
  e->set_key("location");
  e->set_value("weights.bin");
  const std::string msg = import_error(m, "ext");
  EXPECT_NE(msg.find("external file"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fc.weight"), std::string::npos) << msg;
}

TEST(OnnxImportErrors, DynamicSpatialSizeAsksForAFixedSize) {
  const std::string msg = import_error(tiny_model({-1, -2}), "dyn");
  EXPECT_NE(msg.find("dynamic size in dimension 1 ('H')"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fixed input size"), std::string::npos) << msg;
}

TEST(OnnxImportErrors, FileOverTwoGigabytesIsRefusedBeforeReading) {
  const fs::path d = scratch("big");
  { std::ofstream f(d / "big.onnx", std::ios::binary); }
  fs::resize_file(d / "big.onnx", uintmax_t(kOnnxImportMaxBytes) + 1);  // sparse
  const std::string msg = import_error(d / "big.onnx", d);
  EXPECT_NE(msg.find("2 GB"), std::string::npos) << msg;
  fs::remove_all(d);
}

TEST(OnnxImportErrors, UnknownOpIsNamedWithoutTorch) {
  onnx::ModelProto m = tiny_model();
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type("Hardmax");
  n->set_name("/head/Hardmax");
  n->add_input("y");
  n->add_output("z");
  m.mutable_graph()->mutable_output(0)->set_name("z");
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  try {
    onnx_import_bytes(bytes, "hardmax.onnx");
    FAIL() << "imported Hardmax";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Hardmax '/head/Hardmax'"), std::string::npos) << e.what();
  }
}

// --- extreme attributes and constants: refused, naming them, never a
// crash, a hang or an allocation that exhausts memory. The same models are
// the importer's fuzz seeds (tests/fuzz/corpus/onnx_import/extreme_*.onnx).

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

onnx::NodeProto* add_node(onnx::ModelProto& m, const std::string& op,
                          const std::vector<std::string>& inputs, const std::string& output) {
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name("/" + output + "/" + op);
  for (const auto& i : inputs) n->add_input(i);
  n->add_output(output);
  return n;
}
void set_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void set_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
// An initializer of these dims holding `values` (int64), or zeros (float)
// when `values` is empty and the dims hold any.
void add_init(onnx::ModelProto& m, const std::string& name, const std::vector<int64_t>& dims,
              const std::vector<int64_t>& values = {}, bool integer = true) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(integer ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n = d == 0 ? 0 : n * d;
  }
  for (int64_t v : values) t->add_int64_data(v);
  if (!integer)
    for (int64_t k = 0; k < n; ++k) t->add_float_data(0.f);
}

// x [N, 3, 8, 8] (or `dims`) -> Conv(w [4, 3, 3, 3]) with `conv`'s
// attributes -> y, with x first through `before` (ops written by the caller
// that end in "p").
onnx::ModelProto conv_model(const std::function<void(onnx::NodeProto*)>& conv,
                            const std::vector<int64_t>& dims = {-1, 3, 8, 8},
                            const std::function<void(onnx::ModelProto&)>& before = {}) {
  onnx::ModelProto m = tiny_model(dims);
  auto& g = *m.mutable_graph();
  g.clear_node();
  g.clear_initializer();
  add_init(m, "conv.weight", {4, 3, 3, 3}, {}, false);
  std::string src = "x";
  if (before) {
    before(m);
    src = "p";
  }
  conv(add_node(m, "Conv", {src, "conv.weight"}, "y"));
  auto* os = g.mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  os->clear_dim();
  return m;
}

// The tiny Gemm model with constant-only ops beside it (the shape
// arithmetic PyTorch writes); `use` makes the Gemm's output go through a
// Reshape to the constant "s", so that a problem computing it is reported.
onnx::ModelProto with_constants(const std::function<void(onnx::ModelProto&)>& ops, bool use) {
  onnx::ModelProto m = tiny_model();
  ops(m);
  if (use) {
    m.mutable_graph()->mutable_node(0)->set_output(0, "h");
    add_node(m, "Reshape", {"h", "s"}, "y");
  }
  return m;
}

// The models, by seed name, and a part of the message each import gives
// ("" where it imports).
struct Extreme {
  std::string name;
  onnx::ModelProto model;
  std::string expect;
};
std::vector<Extreme> extreme_models() {
  std::vector<Extreme> v;
  v.push_back({"conv_stride_0", conv_model([](auto* n) {
                 set_ints(n, "strides", {0, 1});
               }),
               "stride must be at least 1 but is 0 along the height"});
  v.push_back({"conv_dilation_2p62", conv_model([](auto* n) {
                 set_ints(n, "dilations", {int64_t{1} << 62, 1});
               }),
               "the dilated kernel along the height overflows"});
  v.push_back({"conv_dilation_min", conv_model([](auto* n) {
                 set_ints(n, "dilations", {1, kMin});
               }),
               "dilation must be at least 1 but is " + std::to_string(kMin) + " along the width"});
  v.push_back({"conv_strides_max", conv_model([](auto* n) {
                 set_ints(n, "strides", {kMax, kMax});
               }),
               "stride"});
  v.push_back({"conv_pads_max", conv_model([](auto* n) {
                 set_ints(n, "pads", {kMax, kMax, kMax, kMax});
               }),
               "as Conv2D: padding"});
  // Two zero Pads of 2^63 - 1 rows each before the Conv.
  v.push_back({"pad_twice_max",
               conv_model([](auto*) {}, {-1, 3, 8, 8},
                          [](onnx::ModelProto& m) {
                            add_init(m, "pads", {8}, {0, 0, kMax, 0, 0, 0, 0, 0});
                            add_node(m, "Pad", {"x", "pads"}, "p1");
                            add_node(m, "Pad", {"p1", "pads"}, "p");
                          }),
               "pads overflows"});
  // ceil_mode divided by the stride before any range check.
  onnx::ModelProto pool = conv_model([](auto*) {}, {-1, 3, 8, 8},
                                     [](onnx::ModelProto& m) {
                                       auto* n = add_node(m, "MaxPool", {"x"}, "p");
                                       set_ints(n, "kernel_shape", {2, 2});
                                       set_ints(n, "strides", {0, 2});
                                       set_int(n, "ceil_mode", 1);
                                     });
  v.push_back({"maxpool_stride_0_ceil", pool, "stride must be at least 1 but is 0"});
  // Spatial sizes each within range, 3·10^12 values together.
  v.push_back({"input_huge", conv_model([](auto*) {}, {-1, 3, 1000000, 1000000}),
               "input 'x' of shape [3, 1000000, 1000000] would hold 3000000000000 values"});
  // An empty constant whose dimensions multiply past 64 bits.
  v.push_back(
      {"gather_empty_2p80",
       with_constants(
           [](onnx::ModelProto& m) {
             add_init(m, "e", {int64_t{1} << 40, 0, int64_t{1} << 40});
             add_init(m, "i", {1}, {0});
             set_int(add_node(m, "Gather", {"e", "i"}, "s"), "axis", 1);
           },
           true),
       "tensor 'e' of dimensions [1099511627776, 0, 1099511627776], counting each 0 as 1, would "
       "hold more than"});
  // Empty, within the limit, and 2^33 long: was listed index by index.
  v.push_back({"slice_empty_2p33",
               with_constants(
                   [](onnx::ModelProto& m) {
                     add_init(m, "e", {0, int64_t{1} << 33});
                     add_init(m, "st", {1}, {0});
                     add_init(m, "en", {1}, {kMax});
                     add_init(m, "ax", {1}, {1});
                     add_node(m, "Slice", {"e", "st", "en", "ax"}, "unused");
                   },
                   false),
               ""});
  // Steps near ±2^63 (the index passed 2^63 and wrapped) and starts at
  // INT64_MIN, on the shape arithmetic's constants.
  v.push_back({"slice_steps_extreme",
               with_constants(
                   [](onnx::ModelProto& m) {
                     add_init(m, "c", {4}, {1, 2, 3, 4});
                     add_init(m, "st", {1}, {1});
                     add_init(m, "en", {1}, {kMax});
                     add_init(m, "ax", {1}, {0});
                     add_init(m, "up", {1}, {kMax});
                     add_node(m, "Slice", {"c", "st", "en", "ax", "up"}, "u1");
                     add_init(m, "st2", {1}, {kMax});
                     add_init(m, "en2", {1}, {kMin});
                     add_init(m, "down", {1}, {kMin});
                     add_node(m, "Slice", {"c", "st2", "en2", "ax", "down"}, "u2");
                   },
                   false),
               ""});
  // A Gather of an empty constant 2^33 rows long: was 2^33 empty loops.
  v.push_back({"gather_empty_rows",
               with_constants(
                   [](onnx::ModelProto& m) {
                     add_init(m, "e", {int64_t{1} << 33, 0});
                     add_init(m, "i", {0});
                     set_int(add_node(m, "Gather", {"e", "i"}, "s"), "axis", 1);
                   },
                   true),
               "the constants folded at import would pass 16777216 values"});
  // Slices of a large constant made from nothing, one after the other: the
  // fuzzer's import that ran for minutes (each Slice copies it).
  v.push_back({"slices_of_a_fill",
               with_constants(
                   [](onnx::ModelProto& m) {
                     add_init(m, "shape", {2}, {4096, 4096});
                     add_node(m, "ConstantOfShape", {"shape"}, "f0");
                     add_init(m, "st", {1}, {0});
                     add_init(m, "en", {1}, {kMax});
                     add_node(m, "Slice", {"f0", "st", "en"}, "f1");
                     add_node(m, "Slice", {"f1", "st", "en"}, "s");
                   },
                   true),
               "Slice '/f1/Slice': the constants folded at import would pass 16777216 values"});
  return v;
}

// The import's message, "" when it imports.
std::string import_message(const onnx::ModelProto& m) {
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  try {
    onnx_import_bytes(bytes, "extreme.onnx");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(OnnxImportExtremes, AttributesAndConstantsAreRefusedNamingThem) {
  for (const Extreme& x : extreme_models()) {
    SCOPED_TRACE(x.name);
    const std::string msg = import_message(x.model);
    if (x.expect.empty())
      EXPECT_EQ(msg, "");
    else
      EXPECT_NE(msg.find(x.expect), std::string::npos) << msg;
  }
}

TEST(OnnxImportExtremes, SliceOfOneStepWithExtremeBoundsImports) {
  // x[:, 2:3] of a sequence, written with INT64_MIN/INT64_MAX bounds on the
  // other axes: one step, everything else whole.
  auto slice = [](const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                  const std::vector<int64_t>& steps) {
    onnx::ModelProto m = tiny_model({-1, 5, 4});
    auto& g = *m.mutable_graph();
    g.clear_node();
    g.clear_initializer();
    add_init(m, "st", {3}, starts);
    add_init(m, "en", {3}, ends);
    add_init(m, "ax", {3}, {0, 1, 2});
    add_init(m, "sp", {3}, steps);
    add_node(m, "Slice", {"x", "st", "en", "ax", "sp"}, "y");
    g.mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->clear_dim();
    return import_message(m);
  };
  EXPECT_EQ(slice({kMin, 2, 0}, {kMax, 3, kMax}, {1, 1, 1}), "");
  EXPECT_EQ(slice({kMin, 2, kMin}, {kMax, 3, kMax}, {kMax, 1, 1}), "");
  // The features reversed are all of them, but not in order: no step of a
  // sequence.
  const std::string msg = slice({kMin, 2, kMax}, {kMax, 3, kMin}, {1, 1, -1});
  EXPECT_NE(msg.find("a slice other than one step"), std::string::npos) << msg;
}

// The seeds are these models: DC_UPDATE_FUZZ_SEEDS=1 writes them.
TEST(OnnxImportExtremes, FuzzSeedsAreTheseModels) {
  const fs::path dir = fs::path(DC_SOURCE_DIR) / "tests/fuzz/corpus/onnx_import";
  const bool update = std::getenv("DC_UPDATE_FUZZ_SEEDS") != nullptr;
  for (const Extreme& x : extreme_models()) {
    std::string bytes;
    ASSERT_TRUE(x.model.SerializeToString(&bytes));
    const fs::path p = dir / ("extreme_" + x.name + ".onnx");
    if (update) write(p, bytes);
    onnx::ModelProto stored;
    std::string again;
    ASSERT_TRUE(stored.ParseFromString(read_file(p.string(), 1 << 20, "seed")))
        << p << " is missing or stale: run with DC_UPDATE_FUZZ_SEEDS=1";
    ASSERT_TRUE(stored.SerializeToString(&again));
    EXPECT_EQ(again, bytes) << p << " is stale: run with DC_UPDATE_FUZZ_SEEDS=1";
  }
}

// Attention as torch.onnx (opset 17) writes it: nn.MultiheadAttention and
// nn.TransformerEncoderLayer decomposed into MatMul/Softmax/Reshape/
// Transpose, recognised back into one MultiHeadAttention each. The models
// are exported by the script below (not make_import_fixtures.py, whose
// fixtures need torchvision), once per test process and script version.
const char* kAttentionScript = R"PY(
import sys, os, numpy as np, torch, torch.nn as nn
torch.manual_seed(0)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
class Mha(nn.Module):
    def __init__(s):
        super().__init__(); s.mha = nn.MultiheadAttention(16, 4, batch_first=True)
    def forward(s, x): return s.mha(x, x, x, need_weights=False)[0]
class Causal(Mha):
    def __init__(s, upper=True):
        super().__init__()
        inf = torch.full((5, 5), float("-inf"))
        s.register_buffer("mask", torch.triu(inf, 1) if upper else torch.tril(inf, -1))
    def forward(s, x): return s.mha(x, x, x, attn_mask=s.mask, need_weights=False)[0]
class Cross(nn.Module):  # queries and keys/values from two branches of x
    def __init__(s, same_kv=True):
        super().__init__(); s.same_kv = same_kv
        s.q = nn.Linear(16, 16); s.kv = nn.Linear(16, 16); s.v = nn.Linear(16, 16)
        s.mha = nn.MultiheadAttention(16, 4, batch_first=True)
    def forward(s, x):
        q, kv = s.q(x), torch.relu(s.kv(x))
        return s.mha(q, kv, kv if s.same_kv else s.v(x), need_weights=False)[0]
def layer(norm_first, act):
    return nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation=act, batch_first=True,
                                      norm_first=norm_first)
models = {"mha": Mha(), "mha14": Mha(), "causal": Causal(), "anticausal": Causal(False),
          "post_relu": layer(False, "relu"), "post_gelu": layer(False, "gelu"),
          "pre_relu": layer(True, "relu"), "pre_gelu": layer(True, "gelu"),
          "encoder2": nn.TransformerEncoder(layer(False, "relu"), 2, enable_nested_tensor=False)}
models.update({"cross": Cross(), "cross_dyn": Cross(), "cross_kv": Cross(False)})
models["mha_dyn"] = Mha()
models["pre_gelu_dyn"] = layer(True, "gelu")
dynamic = {"x": {0: "N"}, "y": {0: "N"}}  # the Reshapes' shapes then come from Shape ops
for name, m in models.items():
    m.eval()
    for p in m.parameters():  # non-zero biases, so a dropped bias shows
        if p.dim() == 1: nn.init.uniform_(p, -0.5, 0.5)
    x = torch.randn(2, 5, 16)
    with torch.no_grad(): y = m(x)
    torch.onnx.export(m, (x,), os.path.join(out, name + ".onnx"),
                      opset_version=14 if name == "mha14" else 17, input_names=["x"],
                      output_names=["y"], dynamic_axes=dynamic if name.endswith("_dyn") else None)
    np.save(os.path.join(out, name + ".input.npy"), x.numpy())
    np.save(os.path.join(out, name + ".output.npy"), y.numpy())
)PY";

// The folder with the attention models, or "" and why not (in `why`).
fs::path attention_fixtures(std::string* why) {
  static std::string reason;
  static const fs::path dir = []() -> fs::path {
    int code = 0;
    std::string out = run_command(kPython + " -c 'import torch, onnx, numpy'", &code);
    if (code != 0) {
      reason = "python3-torch or python3-onnx is not importable by " + kPython + ": " + out;
      return {};
    }
    const fs::path d = fs::path(DC_BINARY_DIR) / "onnx_attention_fixtures" /
                       std::to_string(std::hash<std::string>{}(kAttentionScript));
    if (fs::exists(d / "done")) return d;
    const fs::path tmp = d.string() + ".tmp-" + std::to_string(::getpid());
    fs::create_directories(tmp);
    const fs::path script = tmp / "make.py";
    write_file_atomic(script.string(), kAttentionScript);
    out = run_command(kPython + " " + script.string() + " " + tmp.string() + " 2>&1", &code);
    if (code != 0) {
      reason = "exporting the attention models failed: " + out;
      std::error_code ec;
      fs::remove_all(tmp, ec);
      return {};
    }
    write_file_atomic((tmp / "done").string(), "");
    std::error_code ec;
    fs::rename(tmp, d, ec);  // a concurrent test may have made it first
    if (ec) fs::remove_all(tmp, ec);
    return d;
  }();
  *why = reason;
  return dir;
}

double attention_vs_pytorch(const fs::path& d, const std::string& name, OnnxImport* keep) {
  *keep = onnx_import_file((d / (name + ".onnx")).string());
  const NpyArray x = load_npy((d / (name + ".input.npy")).string());
  const NpyArray y = load_npy((d / (name + ".output.npy")).string());
  return relative_diff(run(keep->graph, keep->weights, x.data), y.data);
}

#define REQUIRE_ATTENTION_FIXTURES(d)           \
  std::string why_;                             \
  const fs::path d = attention_fixtures(&why_); \
  if (!why_.empty()) GTEST_SKIP() << why_;

TEST(OnnxImportAttention, MultiheadAttentionIsOneLayerAndMatchesPyTorch) {
  REQUIRE_ATTENTION_FIXTURES(d);
  OnnxImport im;
  EXPECT_LT(attention_vs_pytorch(d, "mha14", &im), 1e-4);  // torch 1.13's default opset
  EXPECT_EQ(count_type(im.graph, "MultiHeadAttention"), 1);
  EXPECT_LT(attention_vs_pytorch(d, "mha", &im), 1e-4);
  EXPECT_EQ(count_type(im.graph, "MultiHeadAttention"), 1);
  EXPECT_EQ(im.graph.nodes().size(), 2u);  // the input and the attention
  EXPECT_TRUE(has_weight(im, "mha.in_proj_weight"));
  EXPECT_TRUE(has_weight(im, "mha.out_proj_bias"));
  for (const auto& [id, n] : im.graph.nodes())
    if (n.type == "MultiHeadAttention") {
      EXPECT_EQ(n.attrs.i("heads"), 4);
      EXPECT_FALSE(n.attrs.b("causal"));
    }
}

// torch's encoder-decoder path: the query projected on its own, keys and
// values by one [E, 2E] MatMul sliced in two.
TEST(OnnxImportAttention, CrossAttentionIsOneLayerWithTwoInputs) {
  REQUIRE_ATTENTION_FIXTURES(d);
  for (const char* name : {"cross", "cross_dyn"}) {
    OnnxImport im;
    EXPECT_LT(attention_vs_pytorch(d, name, &im), 1e-4) << name;
    ASSERT_EQ(count_type(im.graph, "MultiHeadAttention"), 1) << name;
    // The two branches, nothing else.
    EXPECT_EQ(count_type(im.graph, "TimeDistributedDense"), 2) << name;
    for (const auto& [id, n] : im.graph.nodes())
      if (n.type == "MultiHeadAttention") {
        EXPECT_EQ(n.attrs.s("mode"), "cross") << name;
        EXPECT_EQ(n.attrs.i("heads"), 4) << name;
        // Queries first (after q's Dense), keys and values second (after
        // the ReLU on kv's).
        const auto in = im.graph.in_edges(id);
        ASSERT_EQ(in.size(), 2u) << name;
        EXPECT_EQ(im.graph.node(in[0].src).type, "TimeDistributedDense") << name;
        EXPECT_EQ(im.graph.node(in[1].src).type, "ReLU") << name;
      }
    EXPECT_TRUE(has_weight(im, "mha.in_proj_weight")) << name;
  }
}

// Keys and values from different tensors have no MultiHeadAttention form:
// refused, naming the Softmax, rather than imported wrong.
TEST(OnnxImportAttention, SeparateKeysAndValuesAreRefused) {
  REQUIRE_ATTENTION_FIXTURES(d);
  const std::string m = error_of([&] { onnx_import_file((d / "cross_kv.onnx").string()); });
  EXPECT_NE(m.find("Softmax '/mha/Softmax'"), std::string::npos) << m;
  EXPECT_NE(m.find("keys and values are one tensor"), std::string::npos) << m;
  // Its projections read the transposed inputs: said as such, not blamed on
  // a recurrent layer the model does not have.
  EXPECT_NE(m.find("time-first order"), std::string::npos) << m;
  EXPECT_EQ(m.find("recurrent layer's output"), std::string::npos) << m;
}

TEST(OnnxImportAttention, CausalMaskBecomesTheCausalAttribute) {
  REQUIRE_ATTENTION_FIXTURES(d);
  OnnxImport im;
  EXPECT_LT(attention_vs_pytorch(d, "causal", &im), 1e-4);
  ASSERT_EQ(count_type(im.graph, "MultiHeadAttention"), 1);
  for (const auto& [id, n] : im.graph.nodes())
    if (n.type == "MultiHeadAttention") {
      EXPECT_TRUE(n.attrs.b("causal"));
    }
}

TEST(OnnxImportAttention, OtherMaskIsRefusedNamingTheSoftmax) {
  REQUIRE_ATTENTION_FIXTURES(d);
  const std::string m = error_of([&] { onnx_import_file((d / "anticausal.onnx").string()); });
  EXPECT_NE(m.find("Softmax '/mha/Softmax'"), std::string::npos) << m;
  EXPECT_NE(m.find("does not recognise"), std::string::npos) << m;
}

TEST(OnnxImportAttention, TransformerEncoderLayersMatchPyTorch) {
  REQUIRE_ATTENTION_FIXTURES(d);
  for (const char* name : {"post_relu", "post_gelu", "pre_relu", "pre_gelu"}) {
    OnnxImport im;
    EXPECT_LT(attention_vs_pytorch(d, name, &im), 1e-4) << name;
    EXPECT_EQ(count_type(im.graph, "MultiHeadAttention"), 1) << name;
    EXPECT_EQ(count_type(im.graph, "LayerNorm"), 2) << name;
    const bool gelu = std::string(name).find("gelu") != std::string::npos;
    EXPECT_EQ(count_type(im.graph, "GELU"), gelu ? 1 : 0) << name;
    EXPECT_EQ(count_type(im.graph, "ReLU"), gelu ? 0 : 1) << name;
  }
}

TEST(OnnxImportAttention, DynamicBatchImports) {
  REQUIRE_ATTENTION_FIXTURES(d);
  for (const char* name : {"mha_dyn", "pre_gelu_dyn"}) {
    OnnxImport im;
    EXPECT_LT(attention_vs_pytorch(d, name, &im), 1e-4) << name;
    EXPECT_EQ(count_type(im.graph, "MultiHeadAttention"), 1) << name;
  }
}

TEST(OnnxImportAttention, TwoLayerTransformerEncoderMatchesPyTorch) {
  REQUIRE_ATTENTION_FIXTURES(d);
  OnnxImport im;
  EXPECT_LT(attention_vs_pytorch(d, "encoder2", &im), 1e-4);
  EXPECT_EQ(count_type(im.graph, "MultiHeadAttention"), 2);
}

}  // namespace
}  // namespace dc
