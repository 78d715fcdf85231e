// The per-layer roofline. FLOPs follow the cost rules' MACs: forward is
// 2·MACs per sample; backward is 2·MACs for the weight gradient plus 2·MACs
// for the input gradient when the layer's input needs one (the first layer
// after the Input skips it). Layers without MACs (activations, pooling,
// normalisation, merges, reshapes) are bandwidth-bound: they read and write
// their activations once forward and about twice backward.
#include <deepcanvas/advisor/step_time.h>
#include <deepcanvas/plan.h>

#include <algorithm>

#include "cuda_rules.h"

namespace dc::advisor {

namespace {

// Calibrated on this repository's templates (docs/BENCHMARKS.md): what the
// engine reaches on real layer shapes relative to the benchmark's large,
// square GEMM and its 64-channel convolution.
constexpr double kCpuGemmEfficiency = 0.6;
constexpr double kCpuConvEfficiency = 0.8;
// A recurrent step's GEMM is [batch rows × hidden], run T times in sequence
// with the gate nonlinearities in between: far from peak. (0.25 when the
// model left out backpropagation through the hidden state; the FLOPs of
// recurrent_flops() are 1.41x those for the LSTM row classifier it was
// calibrated on, so the same calibration is 0.35.)
constexpr double kCpuRnnEfficiency = 0.35;
constexpr double kCpuBandwidthEfficiency = 0.7;
constexpr double kCpuRegionsPerLayer = 1.25;

// GPUs: GpuModel (step_time.h); every GPU without its own benchmark is the
// same fractions of its datasheet figures, an estimate. A long streaming
// pass runs at the device copy rate: on the H100 bench-device measured
// 3,009 of the datasheet's 3,350 GB/s, and against a measured rate the
// rebase makes that 1.
constexpr double kStreamEfficiency = 3008.9 / 3350.0;

// The CUDA plugin's conversions around a bf16/fp16 Conv2D on cuDNN
// (cuda/conv.cpp): forward, the float32 input to its 16-bit copy (read 4,
// write 2 bytes) and the 16-bit output back (read 2, write 4); backward,
// the output gradient to 16 bits (6) and the 16-bit input gradient added
// onto the float32 one (read 2 + 4, write 4). None for depthwise layers
// (their own kernels read the float32 tensors) or, in bf16, pointwise ones
// (cuBLAS on the float32 tensors).
double gpu_conv_copy_bytes(const PlanStep& s, double n, bool ng, bool input_grad,
                           bool pointwise_gemms) {
  if (cuda_depthwise_conv(s)) return 0;
  const Shape& x = s.in_shapes[0];
  if (pointwise_gemms && cuda_pointwise_gemm(s, ng)) return 0;
  const double in = double(x.numel()) * n, out = double(s.out_shape.numel()) * n;
  return 6 * in + 6 * out + (ng ? 6 * out + (input_grad ? 10 * in : 0) : 0);
}

// The CPU Conv2D's extra memory traffic beyond its input, output and
// weights. On im2col (conv.cpp), K·OH·OW floats of columns per sample:
// written by im2col and read by the GEMM forward, again for the weight
// gradient, and for the input gradient written by the GEMM, read back by
// col2im. With few filters the GEMM does little arithmetic per column byte
// (filters/2 FLOP per byte), so a LeNet-sized convolution is bound by this
// traffic, not by its FLOPs. On oneDNN's kernels (conv_dnnl.cpp), the
// reorders into its blocked layout and back: x and y forward, the output
// gradient and the input gradient backward (each read once, written once).
// Pointwise and depthwise convolutions off oneDNN move neither.
// weight_grad: whether the layer trains its weights.
double cpu_conv_extra_bytes(const PlanStep& s, double n, bool backward, bool weight_grad,
                            bool input_grad) {
  const ConvKernel kernel = conv_cpu_kernel(s.in_shapes, s.attrs);
  if (kernel == ConvKernel::OneDnn) {
    const double in = double(s.in_shapes[0].numel()) * 4, out = double(s.out_shape.numel()) * 4;
    // A 1×1 convolution that trains no weights runs forward as a GEMM on
    // its input in place (conv.cpp): no reorders there.
    const bool fwd = weight_grad || !conv_is_pointwise(s.in_shapes, s.attrs);
    return n * 2 * ((fwd ? in + out : 0) + (backward ? out : 0) + (input_grad ? in : 0));
  }
  if (kernel != ConvKernel::Im2col) return 0;
  const auto& k = s.attrs.ints("kernel");
  const double K = double(s.in_shapes[0][0] * k[0] * k[1]);
  const double cols = K * double(s.out_shape[1] * s.out_shape[2]) * 4;
  return n * cols * (2 + (weight_grad ? 2 : 0) + (input_grad ? 3 : 0));
}

// Forward and backward FLOPs of a recurrent layer for n samples. Per layer
// and direction, with I its input features: forward 2·T·G·H·(I + H);
// backward the same again for the weight gradients, 2·T·G·H·H for the
// gradient through the hidden state (always, for backpropagation through
// time), and 2·T·G·H·I for the input's gradient where one is needed (always
// between stacked layers). The generic rule (weights + input gradient, each
// 2·MACs) counted no hidden-state gradient and the whole of MACs for the
// input's.
double recurrent_flops(const PlanStep& s, double n, bool training, bool input_grad) {
  const int64_t G = s.type == "LSTM" ? 4 : s.type == "GRU" ? 3 : 1;
  const int64_t T = s.in_shapes[0][0], F = s.in_shapes[0][1];
  const int64_t H = s.attrs.i("hidden_size"), L = s.attrs.i("num_layers");
  const int64_t D = s.attrs.b("bidirectional") ? 2 : 1;
  double f = 0;
  for (int64_t l = 0; l < L; ++l) {
    const double I = double(l == 0 ? F : D * H), tgh = double(T * G * H);
    f += 2 * tgh * (I + H);
    if (training) f += 2 * tgh * (I + H) + 2 * tgh * H + (l > 0 || input_grad ? 2 * tgh * I : 0);
  }
  return n * double(D) * f;
}

// How many times a layer without MACs passes over its input (activations,
// gradients, saved state all of its size) in forward and in backward.
// BatchNorm: forward reads x for the mean, again for the variance, again to
// write y; backward reads dy and x for the two sums, then both again to
// write dx (norm.cpp); LayerNorm the same. Dropout: x, y and the mask forward; dy, the mask and
// dx backward. Others: the generic rule of predict_step_time.
struct Passes {
  double forward = 0, backward = 0;  // 0: the generic rule
};
Passes passes_of(const std::string& type, bool input_grad) {
  // LayerNorm makes the same passes per row (norm.cpp, layer_norm.cu).
  if (type == "BatchNorm1D" || type == "BatchNorm2D" || type == "LayerNorm")
    return {4, input_grad ? 6.0 : 2.0};
  if (type == "Dropout") return {3, input_grad ? 4.0 : 0.0};
  return {};
}

}  // namespace

DeviceRates cpu_rates(const DeviceBench& b) {
  DeviceRates d;
  d.name = b.name;
  d.gemm_flops = b.fp32_gflops * 1e9 * kCpuGemmEfficiency;
  d.conv_flops = b.conv_gflops * 1e9 * kCpuConvEfficiency;
  // Measured on the kernel itself, so at face value.
  d.depthwise_flops = b.depthwise_gflops * 1e9;
  d.depthwise_bwd_flops = b.depthwise_bwd_gflops * 1e9;
  d.rnn_flops = b.fp32_gflops * 1e9 * kCpuRnnEfficiency;
  d.bandwidth = b.mem_bandwidth_gbs * 1e9 * kCpuBandwidthEfficiency;
  // Per layer: its share of the tiny network's step (three layers) plus
  // kCpuRegionsPerLayer parallel regions. That count was fitted (least
  // squares on log step time) to the 24 template × batch runs of
  // docs/BENCHMARKS.md on a heavily shared machine, where a region's barrier
  // cost milliseconds; on an idle machine the term is negligible.
  d.step_overhead = b.step_overhead_s;
  d.layer_overhead = b.step_overhead_s / 3 + kCpuRegionsPerLayer * b.parallel_region_s;
  d.host_optimizer_copy = true;
  d.im2col_convolutions = true;
  return d;
}

namespace {

// The GPU rates from a peak matrix rate and a bandwidth, and the efficiency
// factors scaled by `rebase` (1 against datasheet figures).
DeviceRates gpu_rates_from(const std::string& name, double matmul_flops, double bandwidth,
                           double matmul_rebase, double bandwidth_rebase, const GpuModel& m,
                           Precision p) {
  const bool low = p != Precision::Fp32;
  DeviceRates d;
  d.name = name;
  d.gemm_flops =
      matmul_flops * (low ? m.matmul_efficiency_low : m.matmul_efficiency) * matmul_rebase;
  d.conv_flops = matmul_flops * (low ? m.conv_efficiency_low : m.conv_efficiency) * matmul_rebase;
  d.rnn_flops = matmul_flops * m.rnn_efficiency * matmul_rebase;
  d.bandwidth = bandwidth * m.bandwidth_efficiency * bandwidth_rebase;
  d.step_overhead = m.step_overhead;
  d.layer_overhead = m.layer_overhead;
  d.rnn_time_step_overhead = m.rnn_time_step;
  d.eager_step_overhead = m.eager_step_overhead;
  d.conv_16bit_copies = low;
  d.stream_bandwidth = bandwidth * bandwidth_rebase * kStreamEfficiency;
  d.pointwise_gemms = p == Precision::Bf16;
  return d;
}

}  // namespace

DeviceRates gpu_rates(const GpuSpec& g, Precision p, const GpuModel& m) {
  return gpu_rates_from(g.name, g.matmul_tflops(p) * 1e12, g.bandwidth_gbs * 1e9, 1, 1, m, p);
}

bool cuda_graph_capturable(const std::vector<PlanStep>& steps) {
  for (const PlanStep& s : steps)
    if (rnn_dropout_between_layers(s)) return false;
  return true;
}

// The efficiency factors are fractions of the H100 SXM's datasheet figures.
// bench-device measured that H100 (bench/results/bench-device-h100-20261125-
// ada5a47.txt) at 51.7 of 67 TFLOP/s in fp32, 894 and 900 of 989.5 in bf16
// and fp16, and 3,009 of 3,350 GB/s: against measured rates the factors are
// those ratios larger. The H100's prediction is then the same from either
// source, and another GPU measured here is predicted from its own clocks
// and memory rather than its datasheet.
DeviceRates gpu_rates(const DeviceBench& b, Precision p, const GpuModel& m) {
  double rate = b.fp32_gflops, rebase = 67000.0 / 51736.0;
  if (p == Precision::Bf16 && b.bf16_gflops > 0) {
    rate = b.bf16_gflops;
    rebase = 989500.0 / 893765.4;
  } else if (p == Precision::Fp16 && b.fp16_gflops > 0) {
    rate = b.fp16_gflops;
    rebase = 989500.0 / 900424.3;
  }
  return gpu_rates_from(b.name, rate * 1e9, b.mem_bandwidth_gbs * 1e9, rebase, 3350.0 / 3008.9, m,
                        p);
}

StepTime predict_step_time(const Graph& g, int64_t batch, const DeviceRates& d) {
  const std::vector<PlanStep> steps = lower_graph(g);
  // Both plans run a ReLU or ReLU6 after a Conv2D, a BatchNorm or an Add
  // inside that layer's passes (relu_fusions): no pass of its own.
  const std::vector<int> fused = relu_fusions(steps);
  StepTime st;
  std::vector<bool> needs_grad(steps.size(), false);
  const double n = double(batch), ae = 4;  // float32 activations (step_time.h)
  int64_t params = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const PlanStep& s = steps[i];
    if (s.is_input) continue;
    const Cost c = s.desc->cost(s.in_shapes, s.out_shape, s.attrs);
    // A frozen layer (transfer learning) gets no weight gradient and no
    // optimizer step; with no trainable layer before it, no backward at all.
    const bool trains_weights = c.params > 0 && !s.frozen;
    if (trains_weights) params += c.params;
    bool ng = trains_weights;
    bool input_grad = false;
    for (int j : s.inputs) {
      ng = ng || needs_grad[size_t(j)];
      input_grad = input_grad || needs_grad[size_t(j)];
    }
    needs_grad[i] = ng;
    LayerTime l;
    l.name = s.name;
    l.type = s.type;
    if (fused[i] >= 0) {  // no FLOPs, bytes or overhead of its own
      st.layers.push_back(std::move(l));
      continue;
    }
    const double macs = double(c.macs) * n;
    l.flops =
        is_recurrent(s.type)
            ? recurrent_flops(s, n, ng, input_grad)
            : 2 * macs + (ng ? (trains_weights ? 2 * macs : 0) + (input_grad ? 2 * macs : 0) : 0);
    double in_bytes = 0;
    for (const Shape& x : s.in_shapes) in_bytes += double(x.numel()) * n * ae;
    const double out_bytes = double(s.out_shape.numel()) * n * ae;
    // Forward reads the inputs and writes the output; backward reads the
    // output gradient and the saved input, and accumulates into the input
    // gradient (read and write). Weights: read forward, read again and the
    // gradient read-modify-written backward.
    const Passes p = passes_of(s.type, input_grad);
    const double activation_bytes =
        p.forward > 0 ? (p.forward + (ng ? p.backward : 0)) * in_bytes
                      : in_bytes + out_bytes +
                            (ng ? out_bytes + in_bytes + (input_grad ? 2 * in_bytes : 0) : 0);
    l.bytes = activation_bytes + double(c.params) * 4 * (trains_weights ? 4 : 1);
    if (s.type == "Conv2D" && d.im2col_convolutions)
      l.bytes += cpu_conv_extra_bytes(s, n, ng, trains_weights, input_grad);
    // Separate kernels around the convolution's own, each a long stream.
    const double copies = s.type == "Conv2D" && d.conv_16bit_copies && d.stream_bandwidth > 0
                              ? gpu_conv_copy_bytes(s, n, ng, input_grad, d.pointwise_gemms)
                              : 0;
    const double t_copies = copies > 0 ? copies / d.stream_bandwidth : 0;
    const double rate = s.type == "Conv2D"     ? d.conv_flops
                        : is_recurrent(s.type) ? d.rnn_flops
                                               : d.gemm_flops;
    double t_compute = l.flops > 0 && rate > 0 ? l.flops / rate : 0;
    // The CPU's depthwise convolutions at their own measured rates (the
    // layer's, oneDNN's or our kernel, whichever runs): forward, and
    // backward per gradient it computes (weights, input).
    if (s.type == "Conv2D" && d.depthwise_flops > 0 && d.depthwise_bwd_flops > 0 &&
        conv_is_depthwise(s.in_shapes, s.attrs)) {
      const double back = ng ? (trains_weights ? 2 * macs : 0) + (input_grad ? 2 * macs : 0) : 0;
      t_compute = 2 * macs / d.depthwise_flops + back / d.depthwise_bwd_flops;
    }
    const double t_memory = d.bandwidth > 0 ? l.bytes / d.bandwidth : 0;
    l.bytes += copies;
    l.compute_bound = t_compute >= t_memory;
    l.overhead_s = d.layer_overhead;
    if (is_recurrent(s.type))
      l.overhead_s += d.rnn_time_step_overhead * double(s.in_shapes[0][0]) *
                      double(s.attrs.i("num_layers") * (s.attrs.b("bidirectional") ? 2 : 1));
    l.seconds = std::max(t_compute, t_memory) + t_copies + l.overhead_s;
    st.step_s += l.seconds;
    st.layers.push_back(std::move(l));
  }
  // Adam reads weight, gradient and both moments and writes three of them;
  // the CPU trainer also keeps a copy of the last good weights.
  const double opt_bytes = double(params) * 4 * (7 + (d.host_optimizer_copy ? 2 : 0));
  st.optimizer_s = d.bandwidth > 0 ? opt_bytes / d.bandwidth : 0;
  st.overhead_s = d.step_overhead;
  if (d.eager_step_overhead > 0 && !cuda_graph_capturable(steps))
    st.overhead_s += d.eager_step_overhead;
  st.step_s += st.optimizer_s + st.overhead_s;
  st.samples_per_s = st.step_s > 0 ? n / st.step_s : 0;
  return st;
}

}  // namespace dc::advisor
