#include "work_pool.h"

#include <algorithm>

namespace dc {

WorkPool::WorkPool(int threads) {
  int n = threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()));
  for (int k = 1; k < n; ++k) threads_.emplace_back(&WorkPool::loop, this);
}

WorkPool::~WorkPool() {
  {
    std::lock_guard<std::mutex> l(mu_);
    quit_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

// Takes indices until none is left; called with mu_ held, returns with it held.
void WorkPool::work() {
  while (next_ < n_) {
    const int64_t i = next_++;
    mu_.unlock();
    std::exception_ptr err;
    try {
      (*fn_)(i);
    } catch (...) {
      err = std::current_exception();
    }
    mu_.lock();
    if (err && !error_) error_ = err;
    ++done_;
  }
}

void WorkPool::loop() {
  std::unique_lock<std::mutex> l(mu_);
  uint64_t seen = 0;
  for (;;) {
    wake_.wait(l, [&] { return quit_ || generation_ != seen; });
    if (quit_) return;
    seen = generation_;
    ++busy_;
    l.release();  // work() expects mu_ held and keeps it so
    work();
    l = std::unique_lock<std::mutex>(mu_, std::adopt_lock);
    --busy_;
    finished_.notify_all();
  }
}

void WorkPool::run(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  std::lock_guard<std::mutex> turn(run_mu_);
  std::unique_lock<std::mutex> l(mu_);
  fn_ = &fn;
  n_ = n;
  next_ = 0;
  done_ = 0;
  error_ = nullptr;
  ++generation_;
  wake_.notify_all();
  l.release();
  work();
  l = std::unique_lock<std::mutex>(mu_, std::adopt_lock);
  // Every index is taken; wait until the pool threads have left this
  // generation, so none still holds fn_ when the next run replaces it.
  finished_.wait(l, [&] { return done_ == n_ && busy_ == 0; });
  fn_ = nullptr;
  std::exception_ptr err = error_;
  error_ = nullptr;
  l.unlock();
  if (err) std::rethrow_exception(err);
}

}  // namespace dc
