#pragma once
// NumPy .npy arrays (format versions 1.0 to 3.0), the ecosystem's
// interchange for tensors: `deepcanvas-cli run` reads a network's input from
// one and writes its output to another, so results can be compared with
// PyTorch, onnxruntime or OpenCV without any DeepCanvas code on that side.
#include <deepcanvas/tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dc {

struct NpyArray {
  // Element type as NumPy spells it: "<f4" (float32) or "<i8" (int64).
  std::string descr;
  std::vector<int64_t> shape;
  // The elements as float32: int64 values (token ids) are converted exactly
  // (they must lie within ±2^24, where float32 holds every integer).
  Tensor data;
};

// Reads a little-endian float32 or int64 array in C order. Every problem is
// an IoError naming the file and saying what to do: another dtype ("save it
// with x.astype(np.float32)"), Fortran order, a truncated file, a header
// that is not NumPy's, a size that does not fit in memory.
NpyArray load_npy(const std::string& path);
NpyArray parse_npy(const std::string& bytes, const std::string& source);

// The bytes of a float32 .npy file (version 1.0, C order) holding t with
// the given shape (t's own when empty).
std::string npy_bytes(const Tensor& t, const std::vector<int64_t>& shape = {});
// Writes them atomically.
void save_npy(const std::string& path, const Tensor& t, const std::vector<int64_t>& shape = {});

}  // namespace dc
