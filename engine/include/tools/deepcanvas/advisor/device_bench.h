#pragma once
// A few-second micro-benchmark of the CPU through the engine's own kernels,
// cached per machine so the advisor can reuse it: what the step-time
// roofline (step_time.h) divides FLOPs and bytes by.
#include <string>
#include <vector>

namespace dc::advisor {

struct DeviceBench {
  std::string device = "cpu";  // "cpu" or "cuda:N"
  std::string name;            // CPU model name (from /proc/cpuinfo)
  int threads = 0;             // kernel threads it ran with
  double fp32_gflops = 0;      // dc::sgemm, 1024² × 1024 (Dense's path)
  double conv_gflops = 0;      // Conv2D forward, 64→64 channels, 3×3, 32×32, batch 16
  // Depthwise Conv2D on the CPU's own kernel (three MobileNet-like layers,
  // batch 8, device_bench.cpp): forward, and backward with weight and input
  // gradients (4 FLOP per MAC). CPU only; 0 in caches written before they
  // were measured.
  double depthwise_gflops = 0, depthwise_bwd_gflops = 0;
  // STREAM-like triad over 3 × 64 MiB (bytes read + written): the median of
  // this machine's last kBandwidthSamples measurements (mem_bandwidth_samples,
  // oldest first), since one measurement on a shared host can be off by 2x.
  double mem_bandwidth_gbs = 0;
  std::vector<double> mem_bandwidth_samples;
  double step_overhead_s = 0;    // one forward+backward of a tiny MLP (fixed per-step cost)
  double parallel_region_s = 0;  // one empty parallel_for over the kernel threads
  // GPUs only (0 on the CPU): tensor-core GEMMs (bf16/fp16 in, fp32
  // accumulate) and pinned host-to-device copies. On a GPU fp32_gflops is
  // cuBLAS SGEMM, conv_gflops cuDNN, mem_bandwidth_gbs a device copy and
  // step_overhead_s one small asynchronous launch (GpuBenchResult).
  double bf16_gflops = 0, fp16_gflops = 0, h2d_gbs = 0;
  std::string measured_at;  // UTC, ISO 8601
};

constexpr size_t kBandwidthSamples = 5;

// Adds `latest` (a fresh measurement) to the samples of `previous` (the
// cached one for the same machine, or null) and sets latest's bandwidth to
// their median.
void merge_bandwidth_samples(const DeviceBench* previous, DeviceBench& latest);

// Runs the CPU benchmark (about 2-4 s) with the current num_threads().
DeviceBench bench_cpu();

// The cache file: $XDG_CACHE_HOME/DeepCanvas/bench-device.json, else
// ~/.cache/DeepCanvas/bench-device.json. One entry per machine key.
std::string bench_cache_path();
// "cpu|<model name>|<threads>t": a measurement is reused only on the same
// CPU model with the same thread count.
std::string bench_key(const std::string& device, const std::string& name, int threads);
std::string cpu_model_name();

// "cuda:N|<name>|0t": a GPU's key (the index is part of it: two GPUs of one
// model may sit in different slots or run at other clocks).
std::string gpu_bench_key(int index, const std::string& name);

// The cached result for key, or false.
bool load_cached_bench(const std::string& key, DeviceBench& out);
// Adds or replaces key's entry (atomically rewriting the file).
void store_cached_bench(const std::string& key, const DeviceBench& b);

// The cached CPU result for this machine, measuring (and caching) when
// there is none or refresh is set. cached tells which happened.
DeviceBench cpu_bench(bool refresh, bool* cached = nullptr);
// The same for CUDA GPU `index`, through the plugin (a few seconds on the
// GPU). Throws Error when there is no such GPU or no CUDA backend.
DeviceBench gpu_bench(int index, bool refresh, bool* cached = nullptr);

std::string bench_to_json(const DeviceBench& b);  // one JSON object
DeviceBench bench_from_json(const std::string& text);

}  // namespace dc::advisor
