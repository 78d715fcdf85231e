// BatchLoader: coverage of every index, repeatable shuffles, batch sizes,
// restarts and errors from its thread.
#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace dc {
namespace {

// Sample i stores i in its two pixels (low byte, high byte), so a gathered
// batch tells which samples it holds.
Dataset numbered(int64_t n) {
  Dataset d;
  d.sample_shape = Shape{2};
  d.source = "numbered";
  for (int64_t i = 0; i < n; ++i) {
    d.pixels.push_back(static_cast<uint8_t>(i & 0xff));
    d.pixels.push_back(static_cast<uint8_t>(i >> 8));
    d.labels.push_back(static_cast<int32_t>(i % 7));
  }
  d.num_classes = 7;
  return d;
}

int64_t decode(const Batch& b, int64_t row) {
  const float* x = b.x.f32() + row * 2;
  return std::lround(x[0] * 255.0f) + 256 * std::lround(x[1] * 255.0f);
}

struct Epoch {
  std::vector<int64_t> order;
  std::vector<int64_t> sizes;
};

Epoch run_epoch(BatchLoader& l, int epoch) {
  Epoch e;
  l.start_epoch(epoch);
  Batch b;
  while (l.next(b)) {
    EXPECT_EQ(b.x.shape(), (Shape{b.n, 2}));
    EXPECT_EQ(static_cast<int64_t>(b.labels.size()), b.n);
    for (int64_t r = 0; r < b.n; ++r) {
      int64_t i = decode(b, r);
      EXPECT_EQ(b.labels[r], i % 7) << "label of sample " << i;
      e.order.push_back(i);
    }
    e.sizes.push_back(b.n);
  }
  return e;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

TEST(BatchLoader, EveryIndexOnceWithPartialLastBatch) {
  Dataset d = numbered(300);
  // A subset of the indices, as after a validation split.
  auto [train, val] = split_indices(300, 0.2, 5);
  BatchLoader l(d, train, 32, /*shuffle=*/true, /*drop_last=*/false, 9);
  EXPECT_EQ(l.batches_per_epoch(), 8);  // 240 = 7*32 + 16
  EXPECT_EQ(l.samples_per_epoch(), 240);
  for (int epoch = 1; epoch <= 3; ++epoch) {
    Epoch e = run_epoch(l, epoch);
    ASSERT_EQ(e.sizes.size(), 8u);
    for (size_t k = 0; k + 1 < e.sizes.size(); ++k) EXPECT_EQ(e.sizes[k], 32);
    EXPECT_EQ(e.sizes.back(), 16);
    std::vector<int64_t> sorted = e.order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, train) << "epoch " << epoch;
    EXPECT_NE(e.order, train) << "epoch " << epoch << " was not shuffled";
  }
  Batch b;
  EXPECT_FALSE(l.next(b));  // stays at the end
}

TEST(BatchLoader, OrderDependsOnlyOnSeedAndEpoch) {
  Dataset d = numbered(200);
  BatchLoader a(d, iota(200), 16, true, false, 77);
  BatchLoader b(d, iota(200), 16, true, false, 77, /*prefetch=*/1);
  BatchLoader c(d, iota(200), 16, true, false, 78);
  Epoch a1 = run_epoch(a, 1), a2 = run_epoch(a, 2);
  // A fresh loader that resumes at epoch 2 replays the same order.
  EXPECT_EQ(run_epoch(b, 2).order, a2.order);
  EXPECT_EQ(run_epoch(b, 1).order, a1.order);
  EXPECT_EQ(run_epoch(a, 1).order, a1.order);
  EXPECT_NE(a1.order, a2.order);
  EXPECT_NE(run_epoch(c, 1).order, a1.order);
}

// The device trainer shuffles with epoch_order() and no loader; a CUDA run
// sees the CPU run's batches only while the loader uses the same function.
TEST(BatchLoader, ShuffleIsEpochOrder) {
  Dataset d = numbered(90);
  auto [train, val] = split_indices(90, 0.1, 4);
  BatchLoader l(d, train, 8, /*shuffle=*/true, false, 21);
  for (int epoch = 1; epoch <= 3; ++epoch) {
    std::vector<int64_t> expected = epoch_order(train, 21, epoch);
    EXPECT_EQ(run_epoch(l, epoch).order, expected) << "epoch " << epoch;
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(expected, train) << "epoch_order is a permutation of its indices";
  }
  EXPECT_NE(epoch_order(train, 21, 1), epoch_order(train, 21, 2));
  EXPECT_NE(step_seed(21, 0), step_seed(21, 1));
  EXPECT_NE(step_seed(21, 5), step_seed(22, 5));
}

TEST(BatchLoader, NoShuffleKeepsTheGivenOrder) {
  Dataset d = numbered(50);
  std::vector<int64_t> idx = {49, 3, 17, 0, 22, 8, 31};
  BatchLoader l(d, idx, 3, /*shuffle=*/false, false, 1);
  Epoch e = run_epoch(l, 4);
  EXPECT_EQ(e.order, idx);
  EXPECT_EQ(e.sizes, (std::vector<int64_t>{3, 3, 1}));
}

TEST(BatchLoader, DropLastSkipsTheShortBatch) {
  Dataset d = numbered(103);
  BatchLoader l(d, iota(103), 10, true, /*drop_last=*/true, 3);
  EXPECT_EQ(l.batches_per_epoch(), 10);
  EXPECT_EQ(l.samples_per_epoch(), 100);
  Epoch e1 = run_epoch(l, 1), e2 = run_epoch(l, 2);
  EXPECT_EQ(e1.sizes, std::vector<int64_t>(10, 10));
  std::vector<int64_t> s1 = e1.order, s2 = e2.order;
  std::sort(s1.begin(), s1.end());
  std::sort(s2.begin(), s2.end());
  EXPECT_EQ(std::unique(s1.begin(), s1.end()), s1.end());  // no repeats
  // Which three samples sit out changes with the epoch.
  EXPECT_NE(s1, s2);

  BatchLoader small(d, {1, 2, 3}, 10, true, true, 3);
  EXPECT_EQ(small.batches_per_epoch(), 0);
  EXPECT_TRUE(run_epoch(small, 1).order.empty());
}

TEST(BatchLoader, RestartMidEpochAndDestroyWhilePrefetching) {
  Dataset d = numbered(500);
  std::vector<int64_t> first;
  {
    BatchLoader l(d, iota(500), 8, true, false, 21, 2);
    l.start_epoch(1);
    Batch b;
    ASSERT_TRUE(l.next(b));
    for (int64_t r = 0; r < b.n; ++r) first.push_back(decode(b, r));
    ASSERT_TRUE(l.next(b));
    // Abandon epoch 1 part way; epoch 1 again starts from its beginning.
    Epoch again = run_epoch(l, 1);
    EXPECT_EQ(std::vector<int64_t>(again.order.begin(), again.order.begin() + 8), first);
    EXPECT_EQ(again.order.size(), 500u);
    l.start_epoch(2);
    ASSERT_TRUE(l.next(b));
    // Destroyed here with its queue full and the thread waiting.
  }
}

TEST(BatchLoader, BatchesStayValidAfterLaterOnes) {
  Dataset d = numbered(40);
  BatchLoader l(d, iota(40), 4, false, false, 0);
  l.start_epoch(0);
  Batch b0, b1;
  ASSERT_TRUE(l.next(b0));
  ASSERT_TRUE(l.next(b1));
  EXPECT_EQ(decode(b0, 0), 0);  // not overwritten by the batches prefetched since
  EXPECT_EQ(decode(b1, 0), 4);
}

// Batches are reused once their consumer lets go of them, and only then: a
// batch (or a view of it) still held keeps its samples through the epoch.
TEST(BatchLoader, ReusesOnlyTheBatchesNobodyHolds) {
  Dataset d = numbered(400);
  BatchLoader l(d, iota(400), 4, false, false, 0);
  l.start_epoch(0);
  Batch held, b;
  ASSERT_TRUE(l.next(held));
  const Tensor view = held.x.narrow_batch(2);
  const void* held_storage = held.x.storage_id();
  held = Batch();  // only the view keeps it now
  std::set<const void*> storages;
  int64_t batches = 1;
  while (l.next(b)) {
    EXPECT_NE(b.x.storage_id(), held_storage) << "batch " << batches;
    EXPECT_EQ(decode(b, 0), batches * 4);
    storages.insert(b.x.storage_id());
    ++batches;
  }
  EXPECT_EQ(batches, 100);
  EXPECT_EQ(std::lround(view.f32()[0] * 255.0f), 0);
  EXPECT_EQ(std::lround(view.f32()[2] * 255.0f), 1);
  // 99 batches went through a few buffers (new ones only while every kept
  // one was in the queue or held).
  EXPECT_LE(storages.size(), 25u);
}

TEST(BatchLoader, Errors) {
  Dataset d = numbered(10);
  EXPECT_THROW(BatchLoader(d, iota(10), 0, true, false, 1), DataError);
  EXPECT_THROW(BatchLoader(d, {0, 10}, 4, true, false, 1), DataError);
  BatchLoader early(d, iota(10), 4, true, false, 1);
  Batch b;
  EXPECT_THROW(early.next(b), Error);

  // A dataset whose pixels do not match its labels fails on the loader
  // thread; the error reaches the caller.
  Dataset broken = numbered(10);
  broken.pixels.resize(6);
  BatchLoader l(broken, iota(10), 4, false, false, 1);
  l.start_epoch(0);
  try {
    while (l.next(b)) {
    }
    ADD_FAILURE() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("numbered"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dc
