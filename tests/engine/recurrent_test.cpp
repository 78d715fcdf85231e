// Recurrent and sequence layers: finite-difference gradients for every layer
// and option, shape rules and their messages, and initialisation ranges.
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gradcheck.h"
#include "test_util.h"

namespace dc {
namespace {

using test::attrs;
using test::desc;

test::GradCheckOptions opts() {
  test::GradCheckOptions o;
  o.eps = 5e-3f;
  o.max_checks = 60;
  return o;
}

struct RnnCase {
  std::string label;
  Attrs a;
};

std::vector<RnnCase> rnn_cases() {
  return {
      {"plain", attrs({{"hidden_size", int64_t(5)}})},
      {"sequences", attrs({{"hidden_size", int64_t(4)}, {"return_sequences", true}})},
      {"bidirectional", attrs({{"hidden_size", int64_t(3)}, {"bidirectional", true}})},
      {"bidir_seq",
       attrs({{"hidden_size", int64_t(3)}, {"bidirectional", true}, {"return_sequences", true}})},
      {"stacked", attrs({{"hidden_size", int64_t(4)}, {"num_layers", int64_t(2)}})},
      {"stacked_dropout_bidir", attrs({{"hidden_size", int64_t(3)},
                                       {"num_layers", int64_t(3)},
                                       {"dropout", 0.4},
                                       {"bidirectional", true},
                                       {"return_sequences", true}})},
      {"learned_init", attrs({{"hidden_size", int64_t(4)},
                              {"initial_state", std::string("learned")},
                              {"num_layers", int64_t(2)},
                              {"bidirectional", true}})},
      {"no_bias", attrs({{"hidden_size", int64_t(4)}, {"bias", false}})},
  };
}

class RnnGrad : public ::testing::TestWithParam<std::string> {};

TEST_P(RnnGrad, MatchesFiniteDifferences) {
  for (const RnnCase& c : rnn_cases()) {
    SCOPED_TRACE(GetParam() + " " + c.label);
    test::check_layer_gradients(GetParam(), c.a, {Shape{5, 3}}, 2, opts());
  }
}

INSTANTIATE_TEST_SUITE_P(Cells, RnnGrad, ::testing::Values("SimpleRNN", "LSTM", "GRU"));

TEST(RnnGrad, ReluSimpleRnn) {
  auto o = opts();
  o.distinct_inputs = true;
  test::check_layer_gradients("SimpleRNN",
                              attrs({{"hidden_size", int64_t(4)},
                                     {"nonlinearity", std::string("relu")},
                                     {"return_sequences", true}}),
                              {Shape{4, 3}}, 2, o);
}

TEST(RnnShapes, OutputShapes) {
  for (const char* t : {"SimpleRNN", "LSTM", "GRU"}) {
    const auto& d = desc(t);
    EXPECT_EQ(d.infer({Shape{28, 28}}, d.with_defaults(attrs({}))), (Shape{128}));
    EXPECT_EQ(d.infer({Shape{10, 3}}, d.with_defaults(attrs({{"hidden_size", int64_t(7)},
                                                             {"bidirectional", true},
                                                             {"return_sequences", true}}))),
              (Shape{10, 14}));
  }
}

TEST(RnnShapes, RejectsNonSequenceWithAdvice) {
  const auto& d = desc("LSTM");
  try {
    d.infer({Shape{1, 28, 28}}, d.with_defaults(attrs({})));
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("SequenceInput"), std::string::npos) << e.what();
  }
  EXPECT_THROW(d.infer({Shape{28}}, d.with_defaults(attrs({}))), ShapeError);
}

TEST(RnnParams, PyTorchNamesShapesAndInitRange) {
  const auto& d = desc("LSTM");
  Attrs a = d.with_defaults(
      attrs({{"hidden_size", int64_t(8)}, {"num_layers", int64_t(2)}, {"bidirectional", true}}));
  Shape out = d.infer({Shape{6, 5}}, a);
  auto l = d.create(a, {Shape{6, 5}}, out);
  Rng rng(1);
  l->init(rng);
  std::vector<std::string> names;
  for (Param* p : l->params()) {
    names.push_back(p->name);
    for (int64_t i = 0; i < p->value.numel(); ++i)
      EXPECT_LE(std::fabs(p->value.f32()[i]), 1.0f / std::sqrt(8.0f));
  }
  std::vector<std::string> want = {
      "weight_ih_l0",         "weight_hh_l0",         "bias_ih_l0",         "bias_hh_l0",
      "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse",
      "weight_ih_l1",         "weight_hh_l1",         "bias_ih_l1",         "bias_hh_l1",
      "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(l->params()[0]->value.shape(), (Shape{32, 5}));
  EXPECT_EQ(l->params()[8]->value.shape(), (Shape{32, 16}));
  auto cost = d.cost({Shape{6, 5}}, out, a);
  int64_t total = 0;
  for (Param* p : l->params()) total += p->value.numel();
  EXPECT_EQ(cost.params, total);
}

TEST(SequenceLayers, TimeDistributedDenseGradients) {
  test::check_layer_gradients("TimeDistributedDense", attrs({{"units", int64_t(4)}}), {Shape{5, 3}},
                              2, opts());
}

TEST(SequenceLayers, LastStepGradientsAndIndex) {
  test::check_layer_gradients("LastStep", attrs({}), {Shape{5, 3}}, 2, opts());
  test::check_layer_gradients("LastStep", attrs({{"index", int64_t(1)}}), {Shape{5, 3}}, 2, opts());
  const auto& d = desc("LastStep");
  EXPECT_EQ(d.infer({Shape{5, 3}}, d.with_defaults(attrs({}))), (Shape{3}));
  EXPECT_THROW(d.infer({Shape{5, 3}}, d.with_defaults(attrs({{"index", int64_t(5)}}))), ShapeError);
  EXPECT_THROW(d.infer({Shape{5, 3}}, d.with_defaults(attrs({{"index", int64_t(-6)}}))),
               ShapeError);
}

TEST(SequenceLayers, SequenceInputShapes) {
  const auto& d = desc("SequenceInput");
  EXPECT_EQ(d.infer({}, d.with_defaults(attrs({}))), (Shape{28, 28}));
  EXPECT_EQ(d.infer({}, d.with_defaults(
                            attrs({{"steps", int64_t(40)}, {"kind", std::string("tokens")}}))),
            (Shape{40}));
  EXPECT_TRUE(is_input_type("SequenceInput"));
}

// Embedding: ids are not differentiable, so the check is on the weight only,
// done here by hand: L = sum(out * R) gives dW[id] = sum of R rows using id.
TEST(Embedding, GradientIsScatterOfOutputGradientExceptPadding) {
  const auto& d = desc("Embedding");
  Attrs a = d.with_defaults(
      attrs({{"vocab_size", int64_t(6)}, {"dim", int64_t(3)}, {"padding_idx", int64_t(2)}}));
  Shape out = d.infer({Shape{4}}, a);
  ASSERT_EQ(out, (Shape{4, 3}));
  auto l = d.create(a, {Shape{4}}, out);
  Rng rng(3);
  l->init(rng);
  Param* w = l->params()[0];
  for (int k = 0; k < 3; ++k) EXPECT_EQ(w->value.f32()[2 * 3 + k], 0.f);
  Tensor ids = Tensor::from(Shape{2, 4}, {0, 2, 5, 0, 1, 1, 2, 3});
  Tensor y(Shape{2, 4, 3}), R(Shape{2, 4, 3});
  for (int64_t i = 0; i < R.numel(); ++i) R.f32()[i] = rng.uniform(-1, 1);
  RunContext ctx{true, &rng};
  l->forward({&ids}, y, ctx);
  std::vector<double> want(18, 0.0);
  for (int r = 0; r < 8; ++r) {
    int id = int(ids.f32()[r]);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(y.f32()[r * 3 + k], w->value.f32()[id * 3 + k]);
      if (id != 2) want[size_t(id * 3 + k)] += R.f32()[r * 3 + k];
    }
  }
  w->grad.zero();
  std::vector<Tensor*> din{nullptr};
  l->backward({&ids}, y, R, din, ctx);
  for (int i = 0; i < 18; ++i) EXPECT_NEAR(w->grad.f32()[i], want[size_t(i)], 1e-6) << i;
}

TEST(Embedding, RejectsIdsOutsideVocabulary) {
  const auto& d = desc("Embedding");
  Attrs a = d.with_defaults(attrs({{"vocab_size", int64_t(4)}, {"dim", int64_t(2)}}));
  auto l = d.create(a, {Shape{2}}, Shape{2, 2});
  Tensor ids = Tensor::from(Shape{1, 2}, {1, 4});
  Tensor y(Shape{1, 2, 2});
  RunContext ctx{false, nullptr};
  EXPECT_THROW(l->forward({&ids}, y, ctx), DataError);
  EXPECT_THROW(d.infer({Shape{3, 2}}, a), ShapeError);
  EXPECT_THROW(
      d.infer({Shape{3}},
              d.with_defaults(attrs({{"vocab_size", int64_t(4)}, {"padding_idx", int64_t(4)}}))),
      ShapeError);
}

}  // namespace
}  // namespace dc
