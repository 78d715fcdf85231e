// ONNX import: models exported by PyTorch (Debian's python3-torch and
// python3-torchvision, run by tests/onnx/make_import_fixtures.py into a
// temporary folder) import and reproduce PyTorch's outputs; an unsupported
// model fails with every unsupported op named; bad files fail clearly and
// write nothing; import -> export -> import gives the same graph and outputs.
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/npy.h>
#include <deepcanvas/onnx.h>
#include <deepcanvas/project.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <onnx/onnx_pb.h>

#include "../engine/test_util.h"
#include "../engine/torch_ref_util.h"

namespace dc {
namespace {

namespace fs = std::filesystem;

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

// Every template (but the Embedding one: token ids are not imported yet)
// goes through export -> import with its layers' names and types and the
// same outputs; what ONNX has no place for is left out: Dropout (an
// Identity in inference) and training-only attributes such as its rate.
TEST(OnnxImport, EveryTemplateExportedByDeepCanvasImportsBack) {
  register_builtin_layers();
  const std::vector<std::string> files = test::project_files();
  int checked = 0;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    const Project p = load_project(f);
    if (has_type(p.graph, "Embedding")) continue;
    Plan plan(p.graph, 3);
    plan.init_params(7);
    const OnnxImport b = onnx_import_bytes(onnx_model_bytes(p.graph, plan, {}), f);
    size_t kept = 0;
    for (const auto& [id, n] : p.graph.nodes()) {
      if (n.type == "Dropout") continue;
      ++kept;
      const Node* m = b.graph.find_by_name(n.name);
      ASSERT_NE(m, nullptr) << n.name;
      EXPECT_EQ(m->type, n.type) << n.name;
    }
    EXPECT_EQ(b.graph.nodes().size(), kept);
    Tensor x(plan.input_shape().with_batch(3));
    for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = float((i * 7919) % 200) / 100.f - 1.f;
    EXPECT_LT(relative_diff(run(b.graph, b.weights, x), run(p.graph, plan.state(), x)), 1e-5);
    ++checked;
  }
  EXPECT_GE(checked, 7);
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

}  // namespace
}  // namespace dc
