#pragma once
#include <deepcanvas/backend.h>

namespace dc::cuda {

// The GPU micro-benchmark on `device` (cuda/bench.cpp).
GpuBenchResult run_gpu_benchmark(int device);

}  // namespace dc::cuda
