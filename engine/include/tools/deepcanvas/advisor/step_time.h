#pragma once
// Step time from a per-layer roofline: each layer's forward and backward
// FLOPs against the device's matrix (or convolution) rate and its bytes
// moved against the memory bandwidth, whichever takes longer, plus a fixed
// per-step overhead. Rates come from bench-device (this machine) or the GPU
// catalog scaled by efficiency factors (docs/ARCHITECTURE.md, "Step-time model").
#include <deepcanvas/advisor/device_bench.h>
#include <deepcanvas/advisor/gpu_catalog.h>
#include <deepcanvas/graph.h>

#include <string>
#include <vector>

namespace dc::advisor {

// What the roofline divides by, already scaled to achievable figures.
struct DeviceRates {
  std::string name;
  double gemm_flops = 0;  // FLOP/s for Dense, recurrent and other GEMM layers
  double conv_flops = 0;  // FLOP/s for Conv2D
  // The CPU's depthwise Conv2D kernel, forward and backward (0: conv_flops).
  double depthwise_flops = 0, depthwise_bwd_flops = 0;
  double rnn_flops = 0;       // FLOP/s for the recurrent layers' small per-step GEMMs
  double bandwidth = 0;       // bytes/s
  double step_overhead = 0;   // seconds per step, whatever the network
  double layer_overhead = 0;  // seconds per layer per step (dispatch, kernel launches)
  // Recurrent layers: seconds per time step per layer and direction, forward
  // and backward together (sequential launches a GPU cannot overlap).
  double rnn_time_step_overhead = 0;
  bool host_optimizer_copy = false;  // the CPU trainer copies the weights every step
  bool im2col_convolutions = false;  // Conv2D moves im2col columns (the CPU backend)
};

// This machine's rates from its micro-benchmark.
DeviceRates cpu_rates(const DeviceBench& b);
// A catalog GPU's rates at a precision (estimates from its datasheet).
DeviceRates gpu_rates(const GpuSpec& g, Precision p);
// A GPU's rates from its own micro-benchmark (bench-device --device cuda:N).
DeviceRates gpu_rates(const DeviceBench& measured, Precision p);

struct LayerTime {
  std::string name, type;
  double flops = 0;  // forward + backward, for the batch
  double bytes = 0;  // activations, gradients and weights read and written
  double seconds = 0;
  double overhead_s = 0;  // of seconds: the fixed per-layer cost (dispatch, launches)
  bool compute_bound = false;
};

struct StepTime {
  std::vector<LayerTime> layers;
  double optimizer_s = 0;  // the weight update (bandwidth-bound)
  double overhead_s = 0;
  double step_s = 0;
  double samples_per_s = 0;
};

// activation_elem: bytes per activation element (4 fp32, 2 bf16/fp16).
StepTime predict_step_time(const Graph& g, int64_t batch, const DeviceRates& d,
                           int64_t activation_elem = 4);

}  // namespace dc::advisor
