// The per-channel walk the BatchNorm and bias-gradient kernels use instead
// of a division per element: host code, so it runs without a GPU.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace dc::cuda
