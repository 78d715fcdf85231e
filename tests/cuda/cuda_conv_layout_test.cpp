// The layout arithmetic the graph-API convolutions describe their tensors
// with (cuda/conv_layout.h): host code, so it runs without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "../../cuda/conv_layout.h"

namespace dc::cuda {
namespace {

int64_t offset(const std::vector<int64_t>& strides, int64_t a, int64_t b, int64_t c, int64_t d) {
  return a * strides[0] + b * strides[1] + c * strides[2] + d * strides[3];
}

// Every element's offset is where the packed NCHW / NHWC (KCRS / KRSC)
// buffer that the conversion kernels write holds it.
TEST(ConvLayout, StridesAddressThePackedBufferInEitherLayout) {
  const int64_t N = 3, C = 5, H = 4, W = 7;
  const std::vector<int64_t> nchw = conv_strides(N, C, H, W, false);
  const std::vector<int64_t> nhwc = conv_strides(N, C, H, W, true);
  std::vector<int> seen_nchw(size_t(N * C * H * W)), seen_nhwc(seen_nchw.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          ASSERT_EQ(offset(nchw, n, c, h, w), ((n * C + c) * H + h) * W + w);
          ASSERT_EQ(offset(nhwc, n, c, h, w), ((n * H + h) * W + w) * C + c);
          ++seen_nchw[size_t(offset(nchw, n, c, h, w))];
          ++seen_nhwc[size_t(offset(nhwc, n, c, h, w))];
        }
  for (size_t i = 0; i < seen_nchw.size(); ++i) {
    EXPECT_EQ(seen_nchw[i], 1) << i;
    EXPECT_EQ(seen_nhwc[i], 1) << i;
  }
}

TEST(ConvLayout, AlignmentIsTheLargestPowerOfTwoUpTo16) {
  alignas(32) static char buf[64];
  EXPECT_EQ(pointer_alignment(buf), 16);
  EXPECT_EQ(pointer_alignment(buf + 16), 16);
  EXPECT_EQ(pointer_alignment(buf + 8), 8);
  EXPECT_EQ(pointer_alignment(buf + 24), 8);
  EXPECT_EQ(pointer_alignment(buf + 4), 4);
  EXPECT_EQ(pointer_alignment(buf + 2), 2);
  EXPECT_EQ(pointer_alignment(buf + 6), 2);
  EXPECT_EQ(pointer_alignment(buf + 3), 1);
}

}  // namespace
}  // namespace dc::cuda
