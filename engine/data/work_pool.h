#pragma once
// The threads that decode and transform pictures (image folders): the
// loader's batches, the memory path's first decode and the normalisation
// statistics. Internal to the data library.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace dc {

class WorkPool {
 public:
  // `threads` 0: one per hardware thread. The thread that calls run() works
  // too, so a pool of 1 starts no thread at all.
  explicit WorkPool(int threads);
  ~WorkPool();
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  int size() const { return int(threads_.size()) + 1; }
  // Calls fn(i) once for every i in [0, n) and returns when all are done;
  // rethrows the first exception any call threw (the other calls still
  // ran). One run at a time: concurrent callers take turns.
  void run(int64_t n, const std::function<void(int64_t)>& fn);

 private:
  void loop();
  void work();

  std::vector<std::thread> threads_;
  std::mutex run_mu_;  // one run at a time
  std::mutex mu_;
  std::condition_variable wake_, finished_;
  const std::function<void(int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, next_ = 0, done_ = 0;
  uint64_t generation_ = 0;
  int busy_ = 0;  // pool threads inside the current generation
  bool quit_ = false;
  std::exception_ptr error_;
};

}  // namespace dc
