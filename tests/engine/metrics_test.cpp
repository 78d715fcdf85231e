#include <deepcanvas/metrics.h>
#include <gtest/gtest.h>

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

}  // namespace dc
