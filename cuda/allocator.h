#pragma once
// A caching allocator in the manner of PyTorch's: freed blocks go back to a
// per-size free list instead of cudaFree (which synchronises the device), so
// buffers that come and go with the batch size cost nothing after the first
// step. One stream uses the memory, so stream order protects reuse.
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace dc::cuda {

class Allocator {
 public:
  ~Allocator();
  // Throws DeviceError naming `what` and the free memory when the device is full.
  void* alloc(size_t bytes, const std::string& what);
  void free(void* p);
  void release_cached();  // returns the free lists to the driver
  int64_t allocated() const { return allocated_; }
  int64_t reserved() const { return reserved_; }
  int64_t peak() const { return peak_; }  // highest allocated()

 private:
  static size_t round(size_t bytes);
  std::mutex m_;
  std::multimap<size_t, void*> free_;
  std::map<void*, size_t> live_;
  int64_t allocated_ = 0, reserved_ = 0, peak_ = 0;
};

// A device buffer owned through the allocator.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Allocator& a, size_t bytes, const std::string& what)
      : a_(&a), p_(bytes ? a.alloc(bytes, what) : nullptr), bytes_(bytes) {}
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      a_ = o.a_;
      p_ = o.p_;
      bytes_ = o.bytes_;
      o.p_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }
  void reset() {
    if (p_ && a_) a_->free(p_);
    p_ = nullptr;
    bytes_ = 0;
  }
  template <typename T = float>
  T* get() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }

 private:
  Allocator* a_ = nullptr;
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace dc::cuda
