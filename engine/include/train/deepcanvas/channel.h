#pragma once
// The Trainer's event queue (trainer.h): it never calls back into the
// caller's thread, so a GUI polls and a CLI blocks on this instead.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

namespace dc {

// A blocking multi-producer multi-consumer queue.
template <typename T>
class Channel {
 public:
  void push(T v) {
    {
      std::lock_guard<std::mutex> l(m_);
      q_.push_back(std::move(v));
    }
    cv_.notify_all();
  }
  // Waits up to `timeout` for an item.
  std::optional<T> pop(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> l(m_);
    if (!cv_.wait_for(l, timeout, [&] { return !q_.empty(); })) return std::nullopt;
    T v = std::move(q_.front());
    q_.pop_front();
    return v;
  }
  std::optional<T> try_pop() { return pop(std::chrono::milliseconds(0)); }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<T> q_;
};

}  // namespace dc
