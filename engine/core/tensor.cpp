#include <deepcanvas/checked.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/memstats.h>
#include <deepcanvas/tensor.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace dc {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::F16:
    case DType::BF16:
      return 2;
    case DType::U8:
      return 1;
  }
  return 4;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::I32:
      return "I32";
    case DType::U8:
      return "U8";
  }
  return "?";
}

int64_t Shape::numel() const {
  // Only the overflow is refused here: a shape may be larger than a tensor
  // may be (a whole dataset's, a memory estimate's); the limits apply where
  // a tensor is made.
  int64_t n = 1;
  for (int64_t d : dims_)
    if (__builtin_mul_overflow(n, d, &n))
      throw ShapeError("shape " + str(true) + " has more elements than a 64-bit count holds");
  return n;
}

Shape Shape::with_batch(int64_t n) const {
  std::vector<int64_t> d;
  d.reserve(dims_.size() + 1);
  d.push_back(n);
  d.insert(d.end(), dims_.begin(), dims_.end());
  return Shape(std::move(d));
}

Shape Shape::without_batch() const {
  if (dims_.empty()) return {};
  return Shape(std::vector<int64_t>(dims_.begin() + 1, dims_.end()));
}

std::string Shape::str(bool ascii) const {
  if (dims_.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ascii ? "x" : "\u00d7";
    s += std::to_string(dims_[i]);
  }
  return s;
}

namespace mem {
namespace {
std::atomic<int64_t> g_live{0}, g_peak{0};
}  // namespace

void on_alloc(size_t bytes) {
  const int64_t now = g_live.fetch_add(int64_t(bytes), std::memory_order_relaxed) + int64_t(bytes);
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
void on_free(size_t bytes) {
  g_live.fetch_sub(int64_t(bytes), std::memory_order_relaxed);
}
int64_t live_bytes() {
  return g_live.load(std::memory_order_relaxed);
}
int64_t peak_bytes() {
  return g_peak.load(std::memory_order_relaxed);
}
int64_t reset_peak() {
  const int64_t now = g_live.load(std::memory_order_relaxed);
  g_peak.store(now, std::memory_order_relaxed);
  return now;
}
}  // namespace mem

// 64-byte alignment keeps AVX-512 loads aligned and rows off shared cache
// lines between threads.
Storage::Storage(size_t n) : bytes(n) {
  if (n > size_t(kMaxTensorBytes))
    throw Error("cannot allocate " + std::to_string(n) + " bytes for one tensor, more than the " +
                std::to_string(kMaxTensorBytes) + " (64 GiB) allowed");
  size_t rounded = (n + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  data = std::aligned_alloc(64, rounded);
  if (!data) throw std::bad_alloc();
  std::memset(data, 0, rounded);
  mem::on_alloc(rounded);
}

Storage::~Storage() {
  mem::on_free(std::max<size_t>(64, (bytes + 63) / 64 * 64));
  std::free(data);
}

Tensor::Tensor(Shape shape, DType dtype) : shape_(std::move(shape)), dtype_(dtype) {
  // Refused before anything is allocated: a size from a file or a flag
  // that passes the limits is an error message, not an exhausted memory.
  // (The shape is named only on failure: tensors are made every step.)
  try {
    checked_bytes(checked_numel(shape_.dims(), "a tensor"), int64_t(dtype_size(dtype_)), "it");
  } catch (const ShapeError& e) {
    throw ShapeError("cannot make a tensor of shape " + shape_.str(true) + ": " + e.what());
  }
  storage_ = std::make_shared<Storage>(bytes());
}

Tensor Tensor::from(Shape shape, const std::vector<float>& values) {
  Tensor t(std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw Error("Tensor::from: " + std::to_string(values.size()) + " values for shape " +
                t.shape().str(true));
  std::memcpy(t.f32(), values.data(), values.size() * sizeof(float));
  return t;
}

bool Tensor::sole_owner() const {
  if (!storage_ || storage_.use_count() != 1) return false;
  // use_count() is a relaxed read. Taking and dropping a reference is an
  // acquire-release update of the count the last other owner decremented,
  // which orders its uses of the storage before the caller's writes. (An
  // acquire fence would do as much, but ThreadSanitizer does not see fences.)
  { const std::shared_ptr<Storage> touch = storage_; }
  return true;
}

Tensor Tensor::narrow_batch(int64_t n) const {
  if (shape_.rank() == 0 || n > shape_[0] || n < 0)
    throw Error("Tensor::narrow_batch: " + std::to_string(n) + " rows of " + shape_.str(true));
  Tensor v = *this;
  v.shape_[0] = n;
  return v;
}

Tensor Tensor::reshaped(Shape s) const {
  if (s.numel() != numel())
    throw Error("Tensor::reshaped: " + shape_.str(true) + " cannot become " + s.str(true));
  Tensor v = *this;
  v.shape_ = std::move(s);
  return v;
}

Tensor Tensor::view(int64_t offset, Shape s) const {
  if (offset < 0 || offset + s.numel() > numel())
    throw Error("Tensor::view: " + std::to_string(s.numel()) + " elements at " +
                std::to_string(offset) + " of " + shape_.str(true));
  Tensor v = *this;
  v.offset_ += size_t(offset) * dtype_size(dtype_);
  v.shape_ = std::move(s);
  return v;
}

Tensor Tensor::clone() const {
  Tensor t(shape_, dtype_);
  if (bytes()) std::memcpy(t.raw(), raw(), bytes());
  return t;
}

void Tensor::fill(float v) {
  float* p = f32();
  for (int64_t i = 0, n = numel(); i < n; ++i) p[i] = v;
}

void Tensor::zero() {
  if (bytes()) std::memset(raw(), 0, bytes());
}

void Tensor::copy_from(const Tensor& src) {
  if (src.bytes() != bytes())
    throw Error("Tensor::copy_from: " + src.shape().str(true) + " into " + shape_.str(true));
  if (bytes()) std::memcpy(raw(), src.raw(), bytes());
}

}  // namespace dc
