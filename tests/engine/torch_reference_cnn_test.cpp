// Every CNN-side layer against PyTorch (python3-torch) with the same inputs,
// weights and output gradient: forward values and all gradients must agree
// with torch's float64 result to a normwise relative error of 1e-5. The
// reference script is tests/engine/torch_ref/layer_reference.py.
#include <deepcanvas/io.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.h"
#include "torch_ref_util.h"

namespace dc {
namespace {

using test::attrs;
using test::desc;
using test::Ints;

const std::string kScript =
    std::string(DC_SOURCE_DIR) + "/tests/engine/torch_ref/layer_reference.py";

using test::attrs_json;
using test::kPython;
using test::torch_missing;

struct Case {
  std::string type;
  Attrs attrs;
  std::vector<Shape> in;
  int64_t batch = 3;
  bool training = true;
};

void compare_with_torch(const Case& c) {
  SCOPED_TRACE(c.type + " " + attrs_json(c.attrs).dump());
  const LayerDescriptor& d = desc(c.type);
  Attrs a = d.with_defaults(c.attrs);
  Shape out_shape = d.infer(c.in, a);
  auto layer = d.create(a, c.in, out_shape);
  Rng rng(11);
  layer->init(rng);
  std::vector<std::pair<std::string, Tensor>> file;
  for (Param* p : layer->params()) {
    // Perturb so that gamma=1/beta=0 and zero running stats are not special;
    // a fixed table (sinusoidal positions) is what is under test, as it is.
    for (int64_t i = 0; i < p->value.numel() && p->name != "table"; ++i) {
      float& v = p->value.f32()[i];
      v += rng.uniform(-0.3f, 0.3f);
      if (p->name == "running_var") v = 0.5f + rng.uniform();
    }
    file.emplace_back("p." + p->name, p->value.clone());
  }
  std::vector<Tensor> xs;
  for (const Shape& s : c.in) {
    Tensor x(s.with_batch(c.batch));
    for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform(-2.0f, 2.0f);
    xs.push_back(std::move(x));
  }
  std::vector<const Tensor*> xp;
  for (auto& x : xs) xp.push_back(&x);
  Tensor y(out_shape.with_batch(c.batch)), R(y.shape());
  for (int64_t i = 0; i < R.numel(); ++i) R.f32()[i] = rng.uniform(-1.0f, 1.0f);
  RunContext ctx{c.training, &rng};
  layer->forward(xp, y, ctx);
  std::vector<Tensor> dx;
  for (auto& x : xs) dx.emplace_back(x.shape());
  std::vector<Tensor*> dxp;
  for (auto& t : dx) dxp.push_back(&t);
  for (Param* p : layer->params())
    if (p->trainable) p->grad.zero();
  layer->backward(xp, y, R, dxp, ctx);

  for (size_t i = 0; i < xs.size(); ++i) {
    // Appending (not "x" + to_string) sidesteps GCC 12's false -Wrestrict
    // (GCC bug 105329), which -Werror in CI turns into a build failure.
    std::string idx = std::to_string(i);
    file.emplace_back(std::string("x").append(idx), xs[i]);
    file.emplace_back(std::string("dx").append(idx), dx[i]);
  }
  for (Param* p : layer->params())
    if (p->trainable) file.emplace_back("g." + p->name, p->grad);
  file.emplace_back("y", y);
  file.emplace_back("R", R);
  test::TmpDir tmp;
  std::string path = tmp.path("case.safetensors");
  save_safetensors(
      path, file,
      {{"type", c.type}, {"attrs", attrs_json(a).dump()}, {"training", c.training ? "1" : "0"}});
  int code = 0;
  std::string out = test::run_command(kPython + " " + kScript + " " + path, &code);
  ASSERT_EQ(code, 0) << out;
  auto res = nlohmann::json::parse(out.substr(out.rfind('{')));
  size_t expected = 1 + xs.size();
  for (Param* p : layer->params()) expected += p->trainable ? 1 : 0;
  EXPECT_EQ(res.size(), expected) << out;  // every tensor was compared
  for (auto& [name, err] : res.items()) EXPECT_LE(err.get<double>(), 1e-5) << name;
}

class TorchReference : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch_missing().empty()) GTEST_SKIP() << torch_missing();
  }
};

TEST_F(TorchReference, Convolutions) {
  compare_with_torch(
      {"Conv2D", attrs({{"filters", int64_t(6)}, {"padding", Ints{1, 1}}}), {Shape{3, 9, 8}}});
  compare_with_torch({"Conv2D",
                      attrs({{"filters", int64_t(4)},
                             {"kernel", Ints{3, 2}},
                             {"stride", Ints{2, 1}},
                             {"padding", Ints{1, 0}},
                             {"dilation", Ints{1, 2}},
                             {"groups", int64_t(2)}}),
                      {Shape{4, 9, 9}}});
  compare_with_torch({"Conv2D",
                      attrs({{"filters", int64_t(5)},
                             {"kernel", Ints{4, 4}},
                             {"padding_mode", std::string("same")},
                             {"bias", false}}),
                      {Shape{2, 7, 7}}});
  compare_with_torch(
      {"Conv2D", attrs({{"filters", int64_t(8)}, {"kernel", Ints{1, 1}}}), {Shape{3, 5, 5}}});
}

TEST_F(TorchReference, Pooling) {
  compare_with_torch({"MaxPool2D", {}, {Shape{3, 8, 8}}});
  compare_with_torch(
      {"MaxPool2D",
       attrs({{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"padding", Ints{1, 1}}}),
       {Shape{2, 7, 7}}});
  // ceil_mode (SqueezeNet's pooling): a last window clipped at the edge,
  // with and without padding, on odd and even sizes.
  compare_with_torch({"MaxPool2D",
                      attrs({{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"ceil_mode", true}}),
                      {Shape{2, 8, 9}}});
  compare_with_torch({"MaxPool2D",
                      attrs({{"kernel", Ints{3, 3}},
                             {"stride", Ints{2, 2}},
                             {"padding", Ints{1, 1}},
                             {"ceil_mode", true}}),
                      {Shape{2, 6, 7}}});
  compare_with_torch({"MaxPool2D", attrs({{"ceil_mode", true}}), {Shape{3, 7, 7}}});
  compare_with_torch(
      {"AvgPool2D",
       attrs({{"kernel", Ints{3, 3}}, {"stride", Ints{1, 1}}, {"padding", Ints{1, 1}}}),
       {Shape{2, 6, 5}}});
  compare_with_torch({"GlobalAvgPool2D", {}, {Shape{4, 5, 6}}});
}

TEST_F(TorchReference, Normalization) {
  compare_with_torch({"BatchNorm2D", {}, {Shape{4, 5, 5}}, 6, true});
  compare_with_torch({"BatchNorm2D", {}, {Shape{4, 5, 5}}, 3, false});
  compare_with_torch({"BatchNorm1D", attrs({{"eps", 1e-3}}), {Shape{7}}, 5, true});
  compare_with_torch({"LayerNorm", {}, {Shape{16}}, 4, true});
  compare_with_torch({"LayerNorm", attrs({{"eps", 1e-3}}), {Shape{6, 10}}, 3, false});
  compare_with_torch({"LayerNorm", attrs({{"affine", false}}), {Shape{3, 4, 5}}, 2, true});
}

// torch.nn.MultiheadAttention's arithmetic on the same parameters: self-
// attention with and without biases, causal, one head and several, and
// cross-attention to a longer sequence (causal there too).
TEST_F(TorchReference, MultiHeadAttention) {
  compare_with_torch({"MultiHeadAttention", attrs({{"heads", int64_t(2)}}), {Shape{5, 8}}});
  compare_with_torch({"MultiHeadAttention",
                      attrs({{"heads", int64_t(4)}, {"causal", true}, {"bias", false}}),
                      {Shape{6, 8}},
                      2});
  compare_with_torch({"MultiHeadAttention", attrs({{"heads", int64_t(1)}}), {Shape{3, 6}}});
  compare_with_torch({"MultiHeadAttention",
                      attrs({{"heads", int64_t(2)}, {"mode", std::string("cross")}}),
                      {Shape{4, 6}, Shape{7, 6}}});
  compare_with_torch(
      {"MultiHeadAttention",
       attrs({{"heads", int64_t(3)}, {"mode", std::string("cross")}, {"causal", true}}),
       {Shape{5, 9}, Shape{6, 9}},
       2});
}

// The Transformer's plumbing: patches to tokens, positions (learned, and
// the sinusoids computed here by torch), a class token, pooling.
TEST_F(TorchReference, TokenLayers) {
  compare_with_torch({"ImageToTokens", {}, {Shape{5, 3, 4}}});
  compare_with_torch({"PositionalEmbedding", {}, {Shape{6, 8}}});
  compare_with_torch(
      {"PositionalEmbedding", attrs({{"kind", std::string("sinusoidal")}}), {Shape{9, 6}}});
  compare_with_torch({"PositionalEmbedding",
                      attrs({{"kind", std::string("sinusoidal")}}),
                      {Shape{4, 7}}});  // an odd number of features
  compare_with_torch({"ClassToken", {}, {Shape{4, 6}}});
  compare_with_torch({"TokenPooling", {}, {Shape{5, 6}}});
  compare_with_torch({"TokenPooling", attrs({{"mode", std::string("first")}}), {Shape{5, 6}}});
}

TEST_F(TorchReference, DenseActivationsAndMerges) {
  compare_with_torch({"Dense", attrs({{"units", int64_t(7)}}), {Shape{13}}});
  for (const char* t : {"ReLU", "Sigmoid", "Tanh", "GELU", "Softmax"})
    compare_with_torch({t, {}, {Shape{11}}});
  compare_with_torch({"ReLU6", {}, {Shape{4, 5, 6}}});
  compare_with_torch({"LeakyReLU", attrs({{"slope", 0.2}}), {Shape{2, 3, 3}}});
  compare_with_torch(
      {"Add", attrs({{"inputs", int64_t(3)}}), {Shape{2, 3, 3}, Shape{2, 3, 3}, Shape{2, 3, 3}}});
  compare_with_torch({"Concat", {}, {Shape{2, 3, 3}, Shape{4, 3, 3}}});
}

// The mobile CNNs' layers (EfficientNet, MobileNetV3, ShuffleNetV2).
TEST_F(TorchReference, MobileActivationsAndChannelLayers) {
  for (const char* t : {"SiLU", "HardSwish", "HardSigmoid"})
    compare_with_torch({t, {}, {Shape{4, 5, 6}}});
  compare_with_torch({"ChannelScale", {}, {Shape{5, 3, 4}, Shape{5, 1, 1}}});
  compare_with_torch({"ChannelScale", {}, {Shape{5, 3, 4}, Shape{5}}});
  compare_with_torch({"ChannelShuffle", attrs({{"groups", int64_t(3)}}), {Shape{6, 3, 2}}});
  compare_with_torch(
      {"ChannelSlice", attrs({{"start", int64_t(2)}, {"count", int64_t(3)}}), {Shape{6, 3, 2}}});
}

}  // namespace
}  // namespace dc
