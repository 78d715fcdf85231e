// The per-channel walk the BatchNorm and bias-gradient kernels use instead
// of a division per element: host code, so it runs without a GPU.
#include <deepcanvas/advisor/memory_model.h>
#include <gtest/gtest.h>

#include <vector>

#include "../../cuda/channel_walk.h"

namespace dc::cuda {
namespace {

// Every thread of a block (first = thread, step = block size) visits the
// same elements at the same indices as j / S and j % S give.
TEST(ChannelWalk, VisitsWhatTheDivisionWouldForEveryThreadAndShape) {
  for (int64_t S : {1, 7, 49, 196, 255, 256, 257, 784, 1000})
    for (int64_t C : {1, 3, 64})
      for (int64_t step : {1, 32, 256})
        for (int64_t first : {int64_t(0), step / 2, step - 1}) {
          const int64_t N = 5, M = N * S, c = C - 1;
          ChannelWalk w(first, step, S, C);
          for (int64_t j = first; j < M; j += step, w.next()) {
            ASSERT_EQ(w.index(c), (j / S * C + c) * S + j % S)
                << "S " << S << " C " << C << " step " << step << " first " << first << " j " << j;
          }
        }
}

// The reciprocal division the pointwise kernels find channels with, on
// divisors of every kind (1, powers of two and their neighbours, odd,
// large) and dividends up to 2^31 - 1.
TEST(FastDiv, AgreesWithDivisionUpToTwoToThe31) {
  std::vector<uint32_t> ds = {1,
                              2,
                              3,
                              5,
                              7,
                              49,
                              196,
                              255,
                              256,
                              257,
                              784,
                              1000,
                              50176,
                              65535,
                              65537,
                              (1u << 20) + 1,
                              (1u << 30) - 1,
                              1u << 30,
                              (1u << 31) - 1,
                              1u << 31};
  std::vector<uint32_t> ns = {0, 1, 2, 3, 255, 256, 65535, 65536, (1u << 30) + 7, (1u << 31) - 1};
  for (uint32_t k = 0; k < 20000; ++k) ns.push_back(k * 104729u % (1u << 31));
  for (uint32_t d : ds) {
    const FastDiv f(d);
    for (uint32_t n : ns) {
      ASSERT_EQ(f.div(n), n / d) << n << " / " << d;
      ASSERT_EQ(f.mod(n), n % d) << n << " % " << d;
    }
    for (uint32_t q : {1u, 2u, 3u, 1000u})  // either side of multiples of d
      for (int e : {-1, 0, 1}) {
        const uint64_t n = uint64_t(q) * d + uint64_t(int64_t(e));
        if (n >= (1u << 31)) continue;
        ASSERT_EQ(f.div(uint32_t(n)), uint32_t(n / d)) << n << " / " << d;
      }
  }
}

// The split of a channel's elements into blocks: chunks cover every element
// once, are multiples of 4, and the count never exceeds what the scratch
// buffer (sized from C alone) holds.
TEST(ChannelParts, CoverTheChannelWithinTheScratchBound) {
  for (int64_t C : {1, 3, 16, 32, 64, 512, 2048})
    for (int64_t M : {1, 4, 6, 49, 8192, 8193, 100352, 1605632, 12845056}) {
      const ChannelParts p = channel_parts(C, M);
      ASSERT_GE(p.count, 1);
      ASSERT_LE(p.count, max_channel_parts(C)) << C << " " << M;
      ASSERT_EQ(p.chunk % 4, 0);
      ASSERT_GE(int64_t(p.count) * p.chunk, M) << C << " " << M;
      ASSERT_LT(int64_t(p.count - 1) * p.chunk, M) << "an empty part: " << C << " " << M;
    }
  // Enough blocks to fill a large GPU where there is the work.
  EXPECT_GE(32 * channel_parts(32, 128 * 28 * 28).count, 256);
  // The advisor's memory model sizes the scratch buffers with its own copy.
  for (int64_t C = 1; C <= 4096; ++C)
    ASSERT_EQ(advisor::cuda_channel_parts(C), max_channel_parts(C)) << C;
}

}  // namespace
}  // namespace dc::cuda
