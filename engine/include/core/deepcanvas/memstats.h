#pragma once
// Live and peak bytes of the engine's host tensor memory: every dc::Storage
// (counted at its 64-byte-rounded size, what aligned_alloc hands out) and the
// layers' scratch buffers that outlive a call (im2col columns, dropout masks,
// pooling argmax indices, recurrent gate caches), which use TrackedAllocator.
// Counters are process-wide atomics, so a measurement covers every thread
// (the loader's producer included) but also whatever else the process
// allocates at the same time: measure one run at a time.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace dc::mem {

void on_alloc(size_t bytes);
void on_free(size_t bytes);
// Bytes allocated and not yet freed.
int64_t live_bytes();
// The highest live_bytes() since the last reset_peak() (or program start).
int64_t peak_bytes();
// Sets the peak to the current live bytes and returns that value: the
// baseline a measurement is taken above.
int64_t reset_peak();

// std::allocator that reports to the counters, for layer scratch vectors.
template <class T>
struct TrackedAllocator {
  using value_type = T;
  TrackedAllocator() = default;
  template <class U>
  TrackedAllocator(const TrackedAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    T* p = std::allocator<T>().allocate(n);
    on_alloc(n * sizeof(T));
    return p;
  }
  void deallocate(T* p, size_t n) noexcept {
    on_free(n * sizeof(T));
    std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const TrackedAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace dc::mem

namespace dc {
// A vector whose heap block counts as tensor memory.
template <class T>
using ScratchVec = std::vector<T, mem::TrackedAllocator<T>>;
}  // namespace dc
