// Recurrent layers and Embedding against PyTorch (python3-torch): nn.RNN,
// nn.LSTM, nn.GRU (batch_first) and F.embedding with the same weights,
// inputs and output gradient. Forward values and every gradient must agree
// with torch's float64 result to a normwise relative error of 1e-5. The
// reference script is tests/engine/torch_ref/recurrent_reference.py.
#include <deepcanvas/io.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

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

const std::string kScript =
    std::string(DC_SOURCE_DIR) + "/tests/engine/torch_ref/recurrent_reference.py";

using test::attrs_json;
using test::kPython;
using test::torch_missing;

// ids: the input holds token ids in [0, vocab) instead of values.
void compare_with_torch(const std::string& type, const Attrs& given, const Shape& in,
                        int64_t batch = 3, int64_t vocab = 0) {
  SCOPED_TRACE(type + " " + attrs_json(given).dump());
  const LayerDescriptor& d = desc(type);
  Attrs a = d.with_defaults(given);
  Shape out_shape = d.infer({in}, a);
  auto layer = d.create(a, {in}, out_shape);
  Rng rng(11);
  layer->init(rng);
  std::vector<std::pair<std::string, Tensor>> file;
  for (Param* p : layer->params()) {
    // Learned initial states start at zero; make them matter.
    for (int64_t i = 0; i < p->value.numel(); ++i) p->value.f32()[i] += rng.uniform(-0.3f, 0.3f);
    file.emplace_back("p." + p->name, p->value.clone());
  }
  Tensor x(in.with_batch(batch));
  for (int64_t i = 0; i < x.numel(); ++i)
    x.f32()[i] = vocab ? float(rng.below(uint64_t(vocab))) : rng.uniform(-2.0f, 2.0f);
  Tensor y(out_shape.with_batch(batch)), R(y.shape()), dx(x.shape());
  for (int64_t i = 0; i < R.numel(); ++i) R.f32()[i] = rng.uniform(-1.0f, 1.0f);
  // Evaluation mode: torch's dropout draws from its own generator.
  RunContext ctx{false, &rng};
  layer->forward({&x}, y, ctx);
  for (Param* p : layer->params()) p->grad.zero();
  std::vector<Tensor*> dxp{&dx};
  layer->backward({&x}, y, R, dxp, ctx);
  file.emplace_back("x0", x);
  file.emplace_back("dx0", dx);
  for (Param* p : layer->params()) file.emplace_back("g." + p->name, p->grad);
  file.emplace_back("y", y);
  file.emplace_back("R", R);
  test::TmpDir tmp;
  std::string path = tmp.path("case.safetensors");
  save_safetensors(path, file, {{"type", type}, {"attrs", attrs_json(a).dump()}});
  int code = 0;
  std::string out = test::run_command(kPython + " " + kScript + " " + path, &code);
  ASSERT_EQ(code, 0) << out;
  auto res = nlohmann::json::parse(out.substr(out.rfind('{')));
  size_t expected = 1 + (vocab ? 0 : 1) + layer->params().size();
  EXPECT_EQ(res.size(), expected) << out;  // every tensor was compared
  for (auto& [name, err] : res.items()) EXPECT_LE(err.get<double>(), 1e-5) << name;
}

class TorchReferenceRnn : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!torch_missing().empty()) GTEST_SKIP() << torch_missing();
  }
};

TEST_P(TorchReferenceRnn, EveryOption) {
  const std::string t = GetParam();
  compare_with_torch(t, attrs({{"hidden_size", int64_t(6)}}), Shape{7, 4});
  compare_with_torch(t, attrs({{"hidden_size", int64_t(5)}, {"return_sequences", true}}),
                     Shape{6, 3});
  compare_with_torch(t, attrs({{"hidden_size", int64_t(4)}, {"bidirectional", true}}), Shape{5, 3});
  compare_with_torch(t,
                     attrs({{"hidden_size", int64_t(4)},
                            {"num_layers", int64_t(3)},
                            {"bidirectional", true},
                            {"return_sequences", true},
                            {"dropout", 0.5}}),
                     Shape{5, 2});
  compare_with_torch(t,
                     attrs({{"hidden_size", int64_t(5)},
                            {"num_layers", int64_t(2)},
                            {"initial_state", std::string("learned")},
                            {"bidirectional", true}}),
                     Shape{4, 3});
  compare_with_torch(t, attrs({{"hidden_size", int64_t(3)}, {"bias", false}}), Shape{4, 2});
  if (t == "SimpleRNN")
    compare_with_torch(t,
                       attrs({{"hidden_size", int64_t(6)},
                              {"nonlinearity", std::string("relu")},
                              {"return_sequences", true}}),
                       Shape{5, 3});
}

INSTANTIATE_TEST_SUITE_P(Cells, TorchReferenceRnn, ::testing::Values("SimpleRNN", "LSTM", "GRU"));

TEST(TorchReferenceEmbedding, WithAndWithoutPadding) {
  if (!torch_missing().empty()) GTEST_SKIP() << torch_missing();
  compare_with_torch("Embedding", attrs({{"vocab_size", int64_t(9)}, {"dim", int64_t(5)}}),
                     Shape{6}, 3, 9);
  compare_with_torch(
      "Embedding",
      attrs({{"vocab_size", int64_t(7)}, {"dim", int64_t(4)}, {"padding_idx", int64_t(0)}}),
      Shape{8}, 4, 7);
}

}  // namespace
}  // namespace dc
