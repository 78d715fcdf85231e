#pragma once
// Step time from a per-layer roofline: each layer's forward and backward
// FLOPs against the device's matrix (or convolution) rate and its bytes
// moved against the memory bandwidth, whichever takes longer, plus a fixed
// per-step overhead. Rates come from bench-device (this machine) or the GPU
// catalog scaled by efficiency factors (docs/ARCHITECTURE.md, "Step-time model").
#include <deepcanvas/advisor/device_bench.h>
#include <deepcanvas/advisor/gpu_catalog.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/plan.h>

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
  // GPUs: seconds more per step when the CUDA plugin cannot capture the step
  // into a CUDA graph (cuda_graph_capturable) and launches every kernel.
  double eager_step_overhead = 0;
  bool host_optimizer_copy = false;  // the CPU trainer copies the weights every step
  bool im2col_convolutions = false;  // Conv2D moves im2col columns (the CPU backend)
  // The CUDA plugin in bf16/fp16: a Conv2D on cuDNN converts its float32
  // input, output and gradients to and from 16-bit copies (cuda/conv.cpp);
  // in bf16 the pointwise ones run as GEMMs on the float32 tensors instead
  // (deepcanvas/cuda_pointwise.h), and depthwise ones on their own kernels.
  bool conv_16bit_copies = false;
  bool pointwise_gemms = false;
  // Bytes/s of one large streaming pass (those conversions): the device copy
  // bench-device measures, not the effective figure of `bandwidth`, which
  // the short passes of small layers set.
  double stream_bandwidth = 0;
};

// This machine's rates from its micro-benchmark.
DeviceRates cpu_rates(const DeviceBench& b);

// The GPU model's constants: efficiencies as fractions of the H100 SXM's
// datasheet figures (gpu_rates(DeviceBench) rebases them onto a GPU's
// measured rates), and the fixed costs of a step. The defaults were fitted
// (bench/advisor_fit: least squares on log step time) to the 24 fp32
// template × batch runs of bench/advisor_accuracy.py on a lent H200 with
// CUDA graphs (docs/BENCHMARKS.md, "Advisor on a GPU", 2026-11-28); they
// are effective figures, not hardware ones. conv_efficiency above 1: cuDNN's
// fp32 convolutions (Winograd, FFT) do fewer multiplications than the
// direct count the cost rules give. bandwidth_efficiency at 0.23: the
// passes of small networks are short kernels that never reach the copy
// bandwidth bench-device measures. The 16-bit efficiencies and Dense's
// were not fitted (no such runs among the 24) and keep their earlier
// values; fitted together with the bf16 runs of the peers benchmark the
// constants went unphysical (a step overhead of 0).
struct GpuModel {
  double matmul_efficiency = 0.4;  // Dense and other GEMM layers against the matrix rate
  double conv_efficiency = 1.19;   // Conv2D against the matrix rate
  // The same two in bf16/fp16, against the 16-bit tensor-core rate.
  double matmul_efficiency_low = 0.4, conv_efficiency_low = 0.4;
  double rnn_efficiency = 0.133;  // recurrent layers' per-step GEMMs
  double rnn_time_step = 2e-6;    // seconds per time step, layer and direction
  double bandwidth_efficiency = 0.23;
  double layer_overhead = 10.5e-6;       // seconds per layer and step
  double step_overhead = 88e-6;          // seconds per step, captured in a CUDA graph
  double eager_step_overhead = 1.71e-3;  // seconds more per step without a CUDA graph
};
// A catalog GPU's rates at a precision (estimates from its datasheet).
DeviceRates gpu_rates(const GpuSpec& g, Precision p, const GpuModel& m = GpuModel{});
// A GPU's rates from its own micro-benchmark (bench-device --device cuda:N).
DeviceRates gpu_rates(const DeviceBench& measured, Precision p, const GpuModel& m = GpuModel{});
// Whether the CUDA plugin captures this network's training step into a
// CUDA graph: not when a stacked recurrent layer has dropout between its
// layers (cuDNN's dropout there cannot be captured; cuda/rnn.cpp
// graph_safe).
bool cuda_graph_capturable(const std::vector<PlanStep>& steps);

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

// Activations count 4 bytes an element in every precision: the CPU computes
// in float32, and the CUDA plugin keeps float32 activations in bf16/fp16 too
// (its 16-bit copies are DeviceRates' conversion traffic).
StepTime predict_step_time(const Graph& g, int64_t batch, const DeviceRates& d);

}  // namespace dc::advisor
