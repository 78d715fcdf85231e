#pragma once
// What the advisor predicts for one training run as configured (its device,
// batch, precision and optimizer): samples/s and peak memory to show next to
// the measured figures, and the roofline the diagnosis (diagnose.h) reads.
#include <deepcanvas/advisor/diagnose.h>
#include <deepcanvas/advisor/step_time.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/train_config.h>

#include <cstdint>
#include <string>

namespace dc::advisor {

struct RunPrediction {
  bool available = false;
  std::string why;     // when not available: what to do about it
  std::string device;  // what the figures are for ("this machine (…)", a catalog GPU)
  StepTime step;
  int64_t memory_bytes = 0;  // predicted training peak (GPU: the allocator's part)
  int64_t device_bytes = 0;  // the memory it must fit in (host: MemAvailable at start)
  bool gpu = false;
  Precision precision = Precision::Fp32;
  int64_t batch = 0;
  // The diagnosis's starting point for this run (no steps yet).
  DiagnosisInput diagnosis_input() const;
};

// CPU runs use this machine's cached benchmark and never measure one: a run
// must not wait seconds for it (without one, available is false and why
// says how to get it). CUDA runs use the catalog row that matches gpu_name
// (from list_gpus), an estimate; gpu_bytes is that GPU's memory.
// resident_bytes: what a GPU run keeps of its datasets on the device
// (cuda_resident_bytes of the training and test sets), counted in the GPU's
// predicted memory.
RunPrediction predict_run(const Graph& g, const TrainConfig& c, const std::string& gpu_name = "",
                          int64_t gpu_bytes = 0, int64_t resident_bytes = 0);

// predict_run for the GPU the run's device names (from list_gpus), or the CPU.
RunPrediction predict_run_here(const Graph& g, const TrainConfig& c, int64_t resident_bytes = 0);

// The catalog row for a GPU's reported name ("NVIDIA H100 80GB HBM3" →
// "NVIDIA H100 SXM"): the most words (split at spaces and dashes) in common,
// the model word (H100, A100, 4090, …) among them; on a tie, the memory
// closest to bytes. -1: none.
int match_gpu(const std::vector<GpuSpec>& catalog, const std::string& name, int64_t bytes);

}  // namespace dc::advisor
