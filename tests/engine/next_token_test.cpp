// Networks that predict the next token at every step of a text window:
// their targets, the loss that leaves padding out, the scorer that trains on
// every step and reports the last, the ordered validation split, and a
// whole training run.
#include <deepcanvas/errors.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/next_token.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/sequence_data.h>
#include <deepcanvas/trainer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test_util.h"

namespace dc {
namespace {

Tensor random(Shape s, uint64_t seed) {
  Tensor t(std::move(s));
  Rng r(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = r.uniform(-3, 3);
  return t;
}

// Cross-entropy of one row of scores against class y, in double.
double ce(const float* z, int64_t C, int y) {
  double m = z[0];
  for (int64_t c = 1; c < C; ++c) m = std::max(m, double(z[c]));
  double se = 0;
  for (int64_t c = 0; c < C; ++c) se += std::exp(double(z[c]) - m);
  return m + std::log(se) - z[y];
}

TEST(NextToken, OnlyTokenWindowsScoredAtEveryStepCount) {
  EXPECT_TRUE(scores_every_step(Shape{40}, Shape{40, 63}, true));
  EXPECT_FALSE(scores_every_step(Shape{40}, Shape{63}, true));       // one prediction
  EXPECT_FALSE(scores_every_step(Shape{40}, Shape{40, 63}, false));  // not text
  EXPECT_FALSE(scores_every_step(Shape{40}, Shape{39, 63}, true));   // not per step
  EXPECT_FALSE(scores_every_step(Shape{40}, Shape{40, 1}, true));    // no classes
  EXPECT_EQ(scored_classes(Shape{40}, Shape{40, 63}, true), 63);
  EXPECT_EQ(scored_classes(Shape{40}, Shape{40, 63}, false), 40 * 63);
}

TEST(NextToken, TargetsAreTheWindowShiftedByOneThenItsLabel) {
  // Window 0 starts before the text (two padding tokens); window 1 does not.
  Tensor x = Tensor::from(Shape{2, 3}, {0, 0, 1, 1, 2, 3});
  const std::vector<int32_t> labels = {2, 4};
  std::vector<int32_t> t;
  next_token_targets(x, labels.data(), 2, t);
  EXPECT_EQ(t, (std::vector<int32_t>{-1, 1, 2, 2, 3, 4}));
}

TEST(NextToken, SkippedRowsAddNothingAndTheMeanIsOverTheRest) {
  auto loss = make_loss(LossType::SoftmaxCrossEntropy);
  Tensor out = random(Shape{4, 5}, 3), d(Shape{4, 5});
  const std::vector<int32_t> labels = {1, -1, 3, -1};
  Targets t{labels.data(), nullptr};
  EXPECT_THROW(loss->compute(out, t, d), DataError);  // -1 is no class unless skipped
  t.skip_negative = true;
  const float l = loss->compute(out, t, d);
  EXPECT_NEAR(l, (ce(out.f32(), 5, 1) + ce(out.f32() + 10, 5, 3)) / 2, 1e-5);
  // The kept rows' gradients are a two-row batch's; the skipped rows get none.
  Tensor kept(Shape{2, 5}), dk(Shape{2, 5});
  std::copy(out.f32(), out.f32() + 5, kept.f32());
  std::copy(out.f32() + 10, out.f32() + 15, kept.f32() + 5);
  const std::vector<int32_t> kl = {1, 3};
  loss->compute(kept, Targets{kl.data(), nullptr}, dk);
  for (int c = 0; c < 5; ++c) {
    EXPECT_FLOAT_EQ(d.f32()[c], dk.f32()[c]);
    EXPECT_FLOAT_EQ(d.f32()[10 + c], dk.f32()[5 + c]);
    EXPECT_EQ(d.f32()[5 + c], 0.f);
    EXPECT_EQ(d.f32()[15 + c], 0.f);
  }
  // Other losses cannot leave rows out: said, not ignored.
  auto mse = make_loss(LossType::Mse);
  EXPECT_THROW(mse->compute(out, t, d), Error);
}

TEST(NextToken, ScorerTrainsOnEveryStepAndReportsTheLastStep) {
  const int64_t N = 2, T = 3, V = 5;
  Tensor out = random(Shape{N, T, V}, 7), dout(Shape{N, T, V});
  Tensor x = Tensor::from(Shape{N, T}, {0, 0, 1, 2, 3, 4});
  const std::vector<int32_t> labels = {3, 1};
  auto loss = make_loss(LossType::SoftmaxCrossEntropy);
  BatchScorer scorer(*loss, true);
  ClassificationMetrics m;
  float shown = 0;
  const float l = scorer.train(out, x, labels.data(), dout, &m, &shown);
  // Every step but the first of window 0, whose next token is padding.
  const int targets[N][T] = {{-1, 1, 3}, {3, 4, 1}};
  double sum = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = 0; s < T; ++s)
      if (targets[n][s] >= 0) sum += ce(out.f32() + (n * T + s) * V, V, targets[n][s]);
  EXPECT_NEAR(l, sum / 5, 1e-5);
  // Shown: the last step against the labels, as evaluation reports it.
  const double last =
      (ce(out.f32() + (T - 1) * V, V, 3) + ce(out.f32() + (2 * T - 1) * V, V, 1)) / 2;
  EXPECT_NEAR(shown, last, 1e-5);
  EXPECT_EQ(m.count(), N);
  EXPECT_EQ(m.num_classes(), V);
  Tensor scratch(Shape{N, T, V});
  EXPECT_NEAR(scorer.eval(out, labels.data(), scratch, nullptr), last, 1e-5);
  // The padded step has no gradient; every other step has one summing to 0.
  for (int64_t c = 0; c < V; ++c) EXPECT_EQ(dout.f32()[c], 0.f);
  double row = 0;
  for (int64_t c = 0; c < V; ++c) row += dout.f32()[V + c];
  EXPECT_NEAR(row, 0, 1e-6);
  EXPECT_NE(dout.f32()[V], 0.f);
}

TEST(NextToken, OrderedDataValidatesOnItsLastPart) {
  auto [train, val] = split_indices(10, 0.3, 1, /*ordered=*/true);
  EXPECT_EQ(train, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(val, (std::vector<int64_t>{7, 8, 9}));
  EXPECT_THROW(split_indices(10, 1.0, 1, true), DataError);
}

// Each step of test::every_step_model predicts the next character from its
// own, which a periodic text makes certain.
using test::every_step_model;

TEST(NextToken, ANetworkPredictingEveryStepTrainsAndIsScoredAtTheLastStep) {
  test::TmpDir dir;
  std::string text;
  for (int i = 0; i < 200; ++i) text += "abcd";
  TrainTest tt = load_text_dataset(dir.write("abcd.txt", text), {6, 1, 0.1});
  const int64_t V = tt.train.num_classes;  // padding + 4 letters
  TrainConfig c;
  c.epochs = 3;
  c.batch = 32;
  c.threads = 2;
  c.optimizer.lr = 0.05;
  Trainer t(every_step_model(6, V), c, std::make_shared<Dataset>(tt.train),
            std::make_shared<Dataset>(tt.test));
  t.start();
  t.wait();
  const TrainResult& r = t.result();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_GT(r.test_accuracy, 0.99);
  EXPECT_LT(r.test_loss, 0.2);
  // Scored at the last step: V classes, one prediction per window.
  ASSERT_EQ(int64_t(r.confusion.size()), V);
  int64_t counted = 0;
  for (const auto& row : r.confusion)
    for (int64_t k : row) counted += k;
  EXPECT_EQ(counted, tt.test.size());
}

TEST(NextToken, AValueLossIsRefusedForANetworkPredictingEveryStep) {
  test::TmpDir dir;
  TrainTest tt = load_text_dataset(dir.write("t.txt", "abcdabcdabcdabcd"), {4, 1, 0.0});
  TrainConfig c;
  c.loss = LossType::Mse;
  try {
    Trainer t(every_step_model(4, tt.train.num_classes), c, std::make_shared<Dataset>(tt.train),
              nullptr);
    ADD_FAILURE() << "an every-step network with mse was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("softmax_cross_entropy"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dc
