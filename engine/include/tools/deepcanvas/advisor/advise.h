#pragma once
// The advisor's answer for one network: memory, speed, largest batch and
// energy on this machine and on every catalog GPU. Combines the memory model
// (memory_model.h) and the step-time roofline (step_time.h).
#include <deepcanvas/advisor/device_bench.h>
#include <deepcanvas/advisor/gpu_catalog.h>
#include <deepcanvas/project.h>

#include <string>
#include <vector>

namespace dc::advisor {

struct DeviceAdvice {
  std::string name;
  int64_t memory_bytes = 0;    // the device's (this machine: MemAvailable)
  int64_t training_bytes = 0;  // predicted peak at the batch
  // GPUs: the part the plugin's allocator holds (training_bytes less the
  // CUDA context), the figure train --json measures as peak_device_bytes.
  int64_t allocator_bytes = 0;
  bool fits = false;
  int64_t max_batch = 0;  // largest batch whose prediction fits memory_bytes
  double step_s = 0, samples_per_s = 0, epoch_s = 0;
  double tdp_w = 0, energy_wh = 0;  // GPUs: TDP × epoch time
};

struct Advice {
  int64_t batch = 0;
  Precision precision = Precision::Fp32;
  int64_t train_samples = 0;  // per epoch
  DeviceAdvice this_machine;
  std::vector<DeviceAdvice> gpus;
};

// Bytes of memory available to a new process here (/proc/meminfo MemAvailable).
int64_t host_available_bytes();

// A GPU of this machine with its own micro-benchmark (bench-device --device
// cuda:N) and its memory.
struct MeasuredGpu {
  DeviceBench bench;
  int64_t memory_bytes = 0;
};

// resident_bytes: the training and test sets as a GPU run keeps them on the
// device (MemoryOptions::resident_bytes; 0 when unknown). measured_here: this
// machine's measured GPUs, which come first in gpus, named
// "<name> (measured here)" and predicted from their own figures.
Advice advise(const Project& p, int64_t batch, Precision precision, int64_t train_samples,
              const DeviceBench& cpu, const std::vector<GpuSpec>& gpus, int64_t resident_bytes = 0,
              const std::vector<MeasuredGpu>& measured_here = {});

}  // namespace dc::advisor
