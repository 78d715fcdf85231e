#include <deepcanvas/errors.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/tensor.h>
#include <gtest/gtest.h>

namespace dc {

TEST(Tensor, ZeroFilledAndShaped) {
  Tensor t(Shape{2, 3, 4});
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.bytes(), 96u);
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.f32()[i], 0.0f);
  EXPECT_EQ(t.shape().str(true), "2x3x4");
  EXPECT_EQ(t.shape().without_batch(), (Shape{3, 4}));
}

TEST(Tensor, ViewsShareStorageAndCloneDoesNot) {
  Tensor t = Tensor::from(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor v = t.narrow_batch(2);
  EXPECT_EQ(v.shape(), (Shape{2, 2}));
  v.f32()[0] = 10;
  EXPECT_EQ(t.f32()[0], 10);
  Tensor c = t.clone();
  c.f32()[1] = -1;
  EXPECT_EQ(t.f32()[1], 2);
  EXPECT_THROW(t.reshaped(Shape{4, 2}), Error);
  EXPECT_THROW(t.narrow_batch(4), Error);
}

TEST(Tensor, OffsetViewsSeeTheirPartOfTheStorage) {
  Tensor t(Shape{10});
  for (int i = 0; i < 10; ++i) t.f32()[i] = float(i);
  Tensor v = t.view(4, Shape{2, 3});
  EXPECT_EQ(v.shape(), (Shape{2, 3}));
  EXPECT_EQ(v.f32()[0], 4.f);
  EXPECT_EQ(v.narrow_batch(1).numel(), 3);
  v.f32()[5] = -9.f;
  EXPECT_EQ(t.f32()[9], -9.f);
  EXPECT_EQ(v.storage_id(), t.storage_id());
  EXPECT_EQ(v.storage_bytes(), 40u);
  EXPECT_EQ(v.view(1, Shape{2}).f32()[0], 5.f);  // offsets add up
  EXPECT_THROW(t.view(5, Shape{2, 3}), Error);   // past the end
  EXPECT_THROW(t.view(-1, Shape{1}), Error);
}

TEST(Rng, SameSeedSameStreamAndRanges) {
  Rng a(7), b(7), c(8);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    uint64_t x = a.next_u64();
    EXPECT_EQ(x, b.next_u64());
    differs |= x != c.next_u64();
    float u = a.uniform();
    b.uniform();
    EXPECT_GE(u, 0.0f);
    EXPECT_LT(u, 1.0f);
    EXPECT_LT(a.below(10), 10u);
    b.below(10);
  }
  EXPECT_TRUE(differs);
  double sum = 0, sq = 0;
  for (int i = 0; i < 20000; ++i) {
    float z = a.normal();
    sum += z;
    sq += z * z;
  }
  EXPECT_NEAR(sum / 20000, 0.0, 0.05);
  EXPECT_NEAR(sq / 20000, 1.0, 0.05);
}

}  // namespace dc
