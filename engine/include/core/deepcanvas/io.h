#pragma once
// File I/O shared by projects, datasets and checkpoints: whole-file reads,
// crash-safe writes, and safetensors checkpoints.
#include <deepcanvas/tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dc {

// Writes bytes to path atomically: a temp file in the same folder, fsync,
// rename over the target. On any failure the old file is untouched and the
// temp removed; throws IoError naming the path and the OS error. An existing
// target keeps its permission bits.
void write_file_atomic(const std::string& path, const std::string& bytes);

// The whole file; throws IoError naming the path and the OS error, or
// naming `what` when the file holds more than max_bytes (a device such as
// /dev/urandom, or a file that is not what the caller expects, would
// otherwise grow the result without limit).
std::string read_file(const std::string& path, int64_t max_bytes = INT64_MAX,
                      const std::string& what = "file");

// A safetensors file (https://github.com/huggingface/safetensors): tensors by
// name plus string metadata (the "__metadata__" header entry).
struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Writes F32/F16/BF16/I32/U8 tensors, laid out in the order of their sorted
// names, atomically. Throws IoError for duplicate or reserved names and
// undefined tensors.
void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata);

// Reads and fully validates a safetensors file; every problem is an IoError
// naming the file and what is wrong with it.
SafetensorsFile load_safetensors(const std::string& path);
// The metadata alone, from the header (checked as load_safetensors checks
// it); the tensors are not read, so asking a large file costs little.
std::map<std::string, std::string> load_safetensors_metadata(const std::string& path);

}  // namespace dc
