#pragma once
// The GPU catalog: vendors' published figures for the GPUs the advisor
// compares (resources/gpus.json, installed with the app) plus the user's own
// rows (~/.config/DeepCanvas/gpus.json). Every row is validated; a bad one
// is an IoError naming the file, the row and the field.
#include <deepcanvas/train_config.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dc::advisor {

struct GpuSpec {
  std::string name, vendor, source;
  int64_t memory_bytes = 0;
  double bandwidth_gbs = 0;
  double fp32_tflops = 0;
  // Dense tensor-core throughput; 0 where there is none.
  double tf32_tflops = 0, bf16_tflops = 0, fp16_tflops = 0;
  double tdp_w = 0;
  // The peak for a run's matrix products in precision p: bf16/fp16 use the
  // tensor figure when there is one; fp32 uses the CUDA-core FP32 figure,
  // because DeepCanvas's CUDA backend computes fp32 without TF32 (TF32 is
  // listed for comparison with other frameworks).
  double matmul_tflops(Precision p) const;
};

// Parses a catalog ({"gpus": [rows]}); `file` names it in errors.
std::vector<GpuSpec> parse_gpu_catalog(const std::string& text, const std::string& file);

std::string bundled_gpu_catalog_path();  // <resources>/resources/gpus.json
std::string user_gpu_catalog_path();     // $XDG_CONFIG_HOME or ~/.config, DeepCanvas/gpus.json

// The bundled catalog with the user's rows added (a user row whose name is
// already there replaces it). A missing user file is fine; a bad one throws.
std::vector<GpuSpec> load_gpu_catalog();

}  // namespace dc::advisor
