#pragma once
// Tensor: a shape, a dtype and shared, reference-counted storage.
// Only f32 has CPU kernels today; the other dtypes are declared so that file
// formats and the CUDA backend can name them.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace dc {

enum class DType : uint8_t { F32, F16, BF16, I32, U8 };

size_t dtype_size(DType t);
const char* dtype_name(DType t);

// Dimensions of a tensor. Layer shape rules work on per-sample shapes (no
// batch dimension); runtime tensors carry the batch as dimension 0.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> d) : dims_(d) {}
  explicit Shape(std::vector<int64_t> d) : dims_(std::move(d)) {}

  size_t rank() const { return dims_.size(); }
  int64_t operator[](size_t i) const { return dims_[i]; }
  int64_t& operator[](size_t i) { return dims_[i]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t numel() const;
  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }
  // Prepends a batch dimension.
  Shape with_batch(int64_t n) const;
  // Drops dimension 0.
  Shape without_batch() const;
  // "64×14×14" (the editor's edge label); ascii=true gives "64x14x14".
  std::string str(bool ascii = false) const;

 private:
  std::vector<int64_t> dims_;
};

struct Storage {
  explicit Storage(size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data = nullptr;
  size_t bytes = 0;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(Shape shape, DType dtype = DType::F32);  // zero-filled

  static Tensor zeros(Shape shape) { return Tensor(std::move(shape)); }
  static Tensor from(Shape shape, const std::vector<float>& values);

  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int64_t numel() const { return shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool defined() const { return storage_ != nullptr; }
  int64_t dim(size_t i) const { return shape_[i]; }

  float* f32() { return reinterpret_cast<float*>(raw()); }
  const float* f32() const { return reinterpret_cast<const float*>(raw()); }
  void* raw() { return static_cast<char*>(storage_->data) + offset_; }
  const void* raw() const { return static_cast<const char*>(storage_->data) + offset_; }

  // A view sharing storage: the first n rows along dimension 0. Used for the
  // last, smaller batch of an epoch without reallocating the plan.
  Tensor narrow_batch(int64_t n) const;
  // A view with a different shape and the same number of elements.
  Tensor reshaped(Shape s) const;
  // A view of s.numel() elements from element `offset` of this tensor's.
  Tensor view(int64_t offset, Shape s) const;
  // A deep copy.
  Tensor clone() const;
  void fill(float v);
  void zero();
  void copy_from(const Tensor& src);  // same numel required
  // The storage this tensor views (shared by its views) and its size, for
  // counting buffers once.
  const void* storage_id() const { return storage_.get(); }
  size_t storage_bytes() const { return storage_ ? storage_->bytes : 0; }
  // True when no other tensor or view shares this storage, so its owner may
  // write into it again (the batch loader reuses its batches this way).
  bool sole_owner() const;

 private:
  Shape shape_;
  DType dtype_ = DType::F32;
  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;
};

}  // namespace dc
