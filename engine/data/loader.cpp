// Background batch assembly: one producer thread per epoch fills a bounded
// queue while the trainer computes on the previous batch; an image
// dataset's pictures are decoded for it on a pool of worker threads, so the
// memory used for data is the queue's, whatever the dataset's size.
#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/image_data.h>
#include <deepcanvas/rng.h>

#include <algorithm>

#include "work_pool.h"

namespace dc {

std::vector<int64_t> epoch_order(std::vector<int64_t> indices, uint64_t seed, int epoch) {
  // Fisher-Yates; the odd multiplier makes distinct epochs give distinct seeds.
  Rng rng(seed ^ (0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(epoch) + 1)));
  for (size_t i = indices.size(); i > 1; --i) std::swap(indices[i - 1], indices[rng.below(i)]);
  return indices;
}

uint64_t step_seed(uint64_t seed, int64_t step) {
  return seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(step);
}

uint64_t epoch_draw_seed(uint64_t seed, int epoch) {
  const uint64_t s = splitmix64_at(seed ^ 0xD1B54A32D192ED03ull, static_cast<uint64_t>(epoch));
  return s != 0 ? s : 1;
}

BatchLoader::BatchLoader(const Dataset& ds, std::vector<int64_t> indices, int64_t batch,
                         bool shuffle, bool drop_last, uint64_t seed, int prefetch,
                         bool training_draws, bool bytes)
    : ds_(ds),
      indices_(std::move(indices)),
      batch_(batch),
      shuffle_(shuffle),
      drop_last_(drop_last),
      seed_(seed),
      prefetch_(static_cast<size_t>(std::max(1, prefetch))),
      training_draws_(training_draws),
      bytes_(bytes) {
  if (batch <= 0)
    throw DataError("the batch size must be at least 1 (got " + std::to_string(batch) + ")");
  if (bytes) ds.require_bytes();
  for (int64_t i : indices_)
    if (i < 0 || i >= ds.size())
      throw DataError((ds.source.empty() ? std::string("dataset") : ds.source) + ": sample index " +
                      std::to_string(i) + " is outside the dataset (" + std::to_string(ds.size()) +
                      " samples)");
  if (ds.images) pool_ = std::make_unique<WorkPool>(ds.images->workers());
}

BatchLoader::~BatchLoader() {
  stop();
}

int64_t BatchLoader::batches_per_epoch() const {
  int64_t n = static_cast<int64_t>(indices_.size());
  return drop_last_ ? n / batch_ : (n + batch_ - 1) / batch_;
}

int64_t BatchLoader::samples_per_epoch() const {
  return drop_last_ ? batches_per_epoch() * batch_ : static_cast<int64_t>(indices_.size());
}

void BatchLoader::stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void BatchLoader::start_epoch(int epoch) {
  stop();
  std::vector<int64_t> order = shuffle_ ? epoch_order(indices_, seed_, epoch) : indices_;
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.clear();
    stop_ = false;
    done_ = false;
    started_ = true;
    error_ = nullptr;
  }
  worker_ = std::thread(&BatchLoader::produce, this, std::move(order),
                        training_draws_ ? epoch_draw_seed(seed_, epoch) : uint64_t(0));
}

// A batch of image samples at 224 px is tens of MB: a fresh one each step
// cost its zero fill and a page fault per 4 kB, a quarter of a cached epoch
// (perf). At most the batches that can be alive at once are kept (the
// queue, the one being filled and the consumer's), so the peak is as before.
Tensor BatchLoader::batch_tensor(int64_t n) {
  const Shape shape = ds_.sample_shape.with_batch(n);
  const DType type = bytes_ ? DType::U8 : DType::F32;
  for (const Tensor& t : made_)
    if (t.shape() == shape && t.dtype() == type && t.sole_owner()) return t;
  Tensor t(shape, type);
  if (made_.size() < prefetch_ + 2) made_.push_back(t);
  return t;
}

void BatchLoader::produce(std::vector<int64_t> order, uint64_t draw_seed) {
  try {
    const int64_t total = samples_per_epoch();
    for (int64_t b = 0; b < total; b += batch_) {
      Batch out;
      out.n = std::min(batch_, total - b);
      out.x = batch_tensor(out.n);
      out.labels.resize(static_cast<size_t>(out.n));
      const int64_t kept =
          bytes_ ? ds_.gather_bytes(order.data() + b, out.n, static_cast<uint8_t*>(out.x.raw()),
                                    out.labels.data(), draw_seed, pool_.get())
                 : ds_.gather(order.data() + b, out.n, out.x.f32(), out.labels.data(), draw_seed,
                              pool_.get());
      if (kept == 0) continue;  // every file of the batch turned out bad
      if (kept < out.n) {
        out.n = kept;
        out.x = out.x.narrow_batch(kept);
        out.labels.resize(static_cast<size_t>(kept));
      }
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || queue_.size() < prefetch_; });
      if (stop_) return;
      queue_.push_back(std::move(out));
      l.unlock();
      cv_.notify_all();
    }
  } catch (...) {
    std::lock_guard<std::mutex> l(mu_);
    error_ = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    done_ = true;
  }
  cv_.notify_all();
}

bool BatchLoader::next(Batch& out) {
  std::unique_lock<std::mutex> l(mu_);
  if (!started_) throw Error("BatchLoader::next was called before start_epoch");
  cv_.wait(l, [&] { return !queue_.empty() || done_; });
  if (!queue_.empty()) {
    out = std::move(queue_.front());
    queue_.pop_front();
    l.unlock();
    cv_.notify_all();
    return true;
  }
  if (error_) std::rethrow_exception(error_);
  return false;
}

}  // namespace dc
