#include <deepcanvas/metrics.h>
#include <gtest/gtest.h>

#include <cmath>

namespace dc {

TEST(Metrics, Top1Top5AndConfusion) {
  // 3 samples, 6 classes.
  Tensor s = Tensor::from(
      Shape{3, 6}, {
                       0.9f, 0.1f, 0, 0, 0, 0,              // pred 0, true 0
                       0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f,  // pred 5, true 1 (rank 5 -> not top5)
                       0.5f, 0.1f, 0.6f, 0, 0, 0,           // pred 2, true 0 (top5)
                   });
  int32_t labels[] = {0, 0, 0};
  labels[1] = 0;
  ClassificationMetrics m;
  m.add(s, labels, 3.0);
  EXPECT_EQ(m.count(), 3);
  EXPECT_DOUBLE_EQ(m.mean_loss(), 1.0);
  EXPECT_NEAR(m.top1(), 1.0 / 3, 1e-12);
  // sample 1: true 0 with score 0.1 is beaten by 5 classes -> not in top 5.
  EXPECT_NEAR(m.top5(), 2.0 / 3, 1e-12);
  EXPECT_EQ(m.confusion()[0][0], 1);
  EXPECT_EQ(m.confusion()[0][5], 1);
  EXPECT_EQ(m.confusion()[0][2], 1);
}

// Hand-worked: 3 classes, the last never predicted and one without samples.
TEST(Metrics, PerClassPrecisionRecallAndF1FromTheConfusionMatrix) {
  // rows true, columns predicted
  const std::vector<std::vector<int64_t>> m = {{8, 2, 0, 0},   // class 0: 10 samples
                                               {1, 3, 0, 0},   // class 1: 4 samples
                                               {0, 5, 0, 0},   // class 2: 5, never predicted
                                               {0, 0, 0, 0}};  // class 3: none
  const std::vector<ClassScores> s = class_scores(m);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_DOUBLE_EQ(s[0].precision, 8.0 / 9);
  EXPECT_DOUBLE_EQ(s[0].recall, 0.8);
  EXPECT_NEAR(s[0].f1, 2 * (8.0 / 9) * 0.8 / (8.0 / 9 + 0.8), 1e-12);
  EXPECT_EQ(s[0].support, 10);
  EXPECT_DOUBLE_EQ(s[1].precision, 0.3);  // 3 of the 10 predicted as 1
  EXPECT_DOUBLE_EQ(s[1].recall, 0.75);
  EXPECT_TRUE(std::isnan(s[2].precision));  // nothing predicted as 2
  EXPECT_DOUBLE_EQ(s[2].recall, 0.0);
  EXPECT_TRUE(std::isnan(s[2].f1));
  EXPECT_EQ(s[3].support, 0);
  EXPECT_TRUE(std::isnan(s[3].recall));
  // Macro F1 over the classes with samples; class 2 counts as 0.
  EXPECT_NEAR(macro_f1(s), (s[0].f1 + s[1].f1 + 0.0) / 3, 1e-12);
  EXPECT_TRUE(std::isnan(macro_f1(class_scores({{0}}))));
}

}  // namespace dc
