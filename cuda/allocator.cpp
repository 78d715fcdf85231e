#include "allocator.h"

#include "common.h"

#include <algorithm>

namespace dc::cuda {

Allocator::~Allocator() {
  release_cached();
  for (auto& [p, s] : live_) cudaFree(p);
}

size_t Allocator::round(size_t bytes) {
  // 512-byte granules below 1 MiB, 2 MiB above: few distinct sizes, so
  // cached blocks are found again.
  if (bytes < (1u << 20)) return (bytes + 511) / 512 * 512;
  return (bytes + (2u << 20) - 1) / (2u << 20) * (2u << 20);
}

void* Allocator::alloc(size_t bytes, const std::string& what) {
  std::lock_guard<std::mutex> l(m_);
  size_t sz = round(bytes);
  auto it = free_.lower_bound(sz);
  if (it != free_.end() && it->first <= sz * 2) {
    void* p = it->second;
    size_t got = it->first;
    free_.erase(it);
    live_[p] = got;
    allocated_ += int64_t(got);
    peak_ = std::max(peak_, allocated_);
    return p;
  }
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, sz);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear the sticky-free error state
    for (auto& [s, q] : free_) {
      cudaFree(q);
      reserved_ -= int64_t(s);
    }
    free_.clear();
    e = cudaMalloc(&p, sz);
  }
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    size_t fr = 0, tot = 0;
    cudaMemGetInfo(&fr, &tot);
    throw DeviceError("out of GPU memory allocating " + std::to_string(sz >> 20) + " MiB for " +
                      what + ": " + std::to_string(fr >> 20) + " MiB free of " +
                      std::to_string(tot >> 20) + " MiB");
  }
  DC_CUDA(e, "allocating " + std::to_string(sz) + " bytes for " + what);
  live_[p] = sz;
  allocated_ += int64_t(sz);
  reserved_ += int64_t(sz);
  peak_ = std::max(peak_, allocated_);
  return p;
}

void Allocator::free(void* p) {
  std::lock_guard<std::mutex> l(m_);
  auto it = live_.find(p);
  if (it == live_.end()) return;
  allocated_ -= int64_t(it->second);
  free_.emplace(it->second, p);
  live_.erase(it);
}

void Allocator::release_cached() {
  std::lock_guard<std::mutex> l(m_);
  for (auto& [s, p] : free_) {
    cudaFree(p);
    reserved_ -= int64_t(s);
  }
  free_.clear();
}

}  // namespace dc::cuda
