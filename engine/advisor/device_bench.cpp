// The CPU micro-benchmark and its cache. Kernels are the engine's own
// (dc::sgemm and the Conv2D layer), so the figures are what training here
// can reach, not the hardware's peak.
#include <deepcanvas/advisor/device_bench.h>
#include <deepcanvas/advisor/paths.h>
#include <deepcanvas/backend.h>
#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/json_number.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/train_config.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

namespace dc::advisor {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Runs fn until `budget` seconds have passed (at least `min_reps` times)
// and returns the mean time of one call. The mean, not the median: on a
// machine shared with other work, training gets the same average share of
// the cores that the benchmark got, stalls included.
template <class F>
double mean_time(F&& fn, double budget, int min_reps) {
  fn();  // warm-up: page faults, BLAS buffers, thread pool start
  int reps = 0;
  const auto start = Clock::now();
  while (reps < min_reps || seconds_since(start) < budget) {
    fn();
    ++reps;
  }
  return seconds_since(start) / reps;
}

double gemm_gflops() {
  const int64_t n = 1024;
  std::vector<float> a(size_t(n * n), 0.5f), b(size_t(n * n), 0.25f), c(size_t(n * n));
  const double t = mean_time(
      [&] { sgemm(false, false, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n); }, 0.8,
      3);
  return 2.0 * double(n) * double(n) * double(n) / t * 1e-9;
}

double conv_gflops() {
  register_builtin_layers();
  const LayerDescriptor& d = LayerRegistry::instance().get("Conv2D");
  Attrs a;
  a.set("filters", int64_t(64));
  a.set("padding", std::vector<int64_t>{1, 1});
  a = d.with_defaults(a);
  const std::vector<Shape> in{Shape{64, 32, 32}};
  const Shape out = d.infer(in, a);
  const int64_t batch = 16;
  auto layer = d.create(a, in, out);
  Rng rng(1);
  layer->init(rng);
  Tensor x(in[0].with_batch(batch)), y(out.with_batch(batch));
  x.fill(0.5f);
  RunContext ctx{false, nullptr};
  const std::vector<const Tensor*> ins{&x};
  const double t = mean_time([&] { layer->forward(ins, y, ctx); }, 0.8, 3);
  return 2.0 * double(d.cost(in, out, a).macs) * double(batch) / t * 1e-9;
}

// Depthwise convolutions as MobileNet and EfficientNet-Lite have them, on
// the CPU's own kernel (conv.cpp), batch 8: 96 channels of 112×112 3×3
// stride 2, 144 of 56×56 3×3, 240 of 28×28 5×5. Their FLOPs over their
// time together, forward, and backward with both gradients (4 FLOP per
// MAC). They run far below conv_gflops (per plane the taps read little and
// the padded copies move a lot) and backward several times forward, which
// the generic convolution rule (rate conv_gflops, backward twice forward)
// put at a third of what it measured for EfficientNet-Lite0. (One layer,
// the 56×56 3×3, its good case, left MobileNetV2's depthwise layers
// predicted 45 % fast.)
void depthwise_gflops(double& forward, double& backward) {
  register_builtin_layers();
  const LayerDescriptor& d = LayerRegistry::instance().get("Conv2D");
  struct Case {
    int64_t channels, size, kernel, stride;
  };
  double flops = 0, t_forward = 0, t_backward = 0;
  for (const Case& c : {Case{96, 112, 3, 2}, Case{144, 56, 3, 1}, Case{240, 28, 5, 1}}) {
    Attrs a;
    a.set("filters", c.channels);
    a.set("groups", c.channels);
    a.set("kernel", std::vector<int64_t>{c.kernel, c.kernel});
    a.set("stride", std::vector<int64_t>{c.stride, c.stride});
    a.set("padding", std::vector<int64_t>{c.kernel / 2, c.kernel / 2});
    a = d.with_defaults(a);
    const std::vector<Shape> in{Shape{c.channels, c.size, c.size}};
    const Shape out = d.infer(in, a);
    const int64_t batch = 8;
    auto layer = d.create(a, in, out);
    Rng rng(1);
    layer->init(rng);
    Tensor x(in[0].with_batch(batch)), y(out.with_batch(batch)), dy(out.with_batch(batch)),
        dx(in[0].with_batch(batch));
    x.fill(0.5f);
    dy.fill(0.01f);
    RunContext ctx{true, nullptr};
    const std::vector<const Tensor*> ins{&x};
    std::vector<Tensor*> dins{&dx};
    flops += 2.0 * double(d.cost(in, out, a).macs) * double(batch);
    t_forward += mean_time([&] { layer->forward(ins, y, ctx); }, 0.2, 3);
    t_backward += mean_time([&] { layer->backward(ins, y, dy, dins, ctx); }, 0.2, 3);
  }
  forward = flops / t_forward * 1e-9;
  backward = 2 * flops / t_backward * 1e-9;
}

// The best of 20 passes, as STREAM reports: the memory bandwidth the
// hardware gives. On a host shared with other virtual machines the mean of
// a short run moved 39-68 GB/s between runs seconds apart, and with it every
// bandwidth-bound prediction, while the layers it stood for (mostly
// cache-resident at these sizes) did not slow down with it. Twenty passes
// back to back (80 ms) still fell into such dips whole (30 GB/s against
// 50-61 in the refreshes around it), so the passes are spread in groups
// between the other measurements, over the whole benchmark.
class Triad {
 public:
  // 64 MiB per array: far beyond any last-level cache, so this is DRAM.
  Triad()
      : a_(static_cast<size_t>(kN)),
        b_(static_cast<size_t>(kN), 1.f),
        c_(static_cast<size_t>(kN), 2.f) {
    pass();  // warm-up: page faults
  }
  void run(int passes) {
    for (int k = 0; k < passes; ++k) {
      const auto start = Clock::now();
      pass();
      best_ = std::min(best_, seconds_since(start));
    }
  }
  double gbs() const { return 3.0 * double(kN) * sizeof(float) / best_ * 1e-9; }

 private:
  static constexpr int64_t kN = int64_t(16) << 20;
  void pass() {
    const float s = 3.f;
    parallel_for(kN, 1 << 16, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) a_[size_t(i)] = b_[size_t(i)] + s * c_[size_t(i)];
    });
  }
  std::vector<float> a_, b_, c_;
  double best_ = INFINITY;
};

// A forward, backward and Adam step of a network too small to cost
// anything but the per-step bookkeeping every network pays.
double step_overhead() {
  Graph g;
  Attrs in;
  in.set("shape", std::vector<int64_t>{8});
  NodeId x = g.add_node("Input", "input", in);
  Attrs h;
  h.set("units", int64_t(8));
  NodeId d1 = g.add_node("Dense", "d1", h);
  NodeId r = g.add_node("ReLU");
  Attrs o;
  o.set("units", int64_t(2));
  NodeId d2 = g.add_node("Dense", "d2", o);
  g.connect(x, d1);
  g.connect(d1, r);
  g.connect(r, d2);
  Plan plan(g, 1);
  plan.init_params(1);
  auto opt = make_optimizer(OptimizerConfig{});
  Tensor xb(Shape{1, 8}), dout(Shape{1, 2});
  dout.fill(0.1f);
  RunContext ctx{true, nullptr};
  const auto params = plan.trainable();
  return mean_time(
      [&] {
        plan.forward(xb, ctx);
        plan.zero_grad();
        plan.backward(dout, ctx);
        opt->step(params, 1e-3);
      },
      0.3, 50);
}

// One parallel region with nothing to do: the hand-off to the kernel
// threads and the barrier after it, which every parallel kernel pays. Tiny
// on an idle machine; milliseconds when another process holds a core and
// the barrier waits for a descheduled thread.
double parallel_region() {
  std::vector<int64_t> sink(size_t(num_threads()) * 16, 0);
  return mean_time(
      [&] {
        parallel_for(num_threads(), 1, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) sink[size_t(i) * 16] += i;
        });
      },
      0.3, 100);
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

json to_json(const DeviceBench& b) {
  return {{"device", b.device},
          {"name", b.name},
          {"threads", b.threads},
          {"fp32_gflops", b.fp32_gflops},
          {"conv_gflops", b.conv_gflops},
          {"depthwise_gflops", b.depthwise_gflops},
          {"depthwise_bwd_gflops", b.depthwise_bwd_gflops},
          {"mem_bandwidth_gbs", b.mem_bandwidth_gbs},
          {"mem_bandwidth_samples", b.mem_bandwidth_samples},
          {"step_overhead_s", b.step_overhead_s},
          {"parallel_region_s", b.parallel_region_s},
          {"bf16_gflops", b.bf16_gflops},
          {"fp16_gflops", b.fp16_gflops},
          {"h2d_gbs", b.h2d_gbs},
          {"measured_at", b.measured_at}};
}

// Ranges of the cached figures: far above any machine (1 EFLOP/s, 10 PB/s,
// an hour per step), so that only a damaged or hand-edited cache is
// refused, and the predictions made from them stay finite.
constexpr double kMaxGflops = 1e9, kMaxGbs = 1e7, kMaxSeconds = 3600;
constexpr size_t kMaxBandwidthSamples = 1000;
constexpr int kMaxThreads = 1 << 16;

// `where` names the entry in messages ("FILE: KEY").
DeviceBench from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw IoError(where + ": must be an object");
  auto text = [&](const char* k, bool optional) -> std::string {
    if (optional && !j.contains(k)) return "";
    if (!j.contains(k) || !j[k].is_string()) throw IoError(where + "." + k + ": must be a string");
    return j[k].get<std::string>();
  };
  const json none = 0.0;
  auto figure = [&](const char* k, double hi, bool optional) {
    return json_double(optional && !j.contains(k) ? none : j.at(k), where + "." + k, 0, hi);
  };
  DeviceBench b;
  b.device = text("device", false);
  b.name = text("name", false);
  b.threads = json_int32(j.at("threads"), where + ".threads", 0, kMaxThreads);
  b.fp32_gflops = figure("fp32_gflops", kMaxGflops, false);
  b.conv_gflops = figure("conv_gflops", kMaxGflops, false);
  b.depthwise_gflops = figure("depthwise_gflops", kMaxGflops, true);
  b.depthwise_bwd_gflops = figure("depthwise_bwd_gflops", kMaxGflops, true);
  b.mem_bandwidth_gbs = figure("mem_bandwidth_gbs", kMaxGbs, false);
  if (j.contains("mem_bandwidth_samples")) {
    const json& a = j["mem_bandwidth_samples"];
    const std::string at = where + ".mem_bandwidth_samples";
    if (!a.is_array() || a.size() > kMaxBandwidthSamples)
      throw IoError(at + ": must be a list of at most " + std::to_string(kMaxBandwidthSamples) +
                    " numbers");
    for (size_t i = 0; i < a.size(); ++i)
      b.mem_bandwidth_samples.push_back(
          json_double(a[i], at + "[" + std::to_string(i) + "]", 0, kMaxGbs));
  }
  b.step_overhead_s = figure("step_overhead_s", kMaxSeconds, false);
  b.parallel_region_s = figure("parallel_region_s", kMaxSeconds, true);
  b.bf16_gflops = figure("bf16_gflops", kMaxGflops, true);
  b.fp16_gflops = figure("fp16_gflops", kMaxGflops, true);
  b.h2d_gbs = figure("h2d_gbs", kMaxGbs, true);
  b.measured_at = text("measured_at", true);
  return b;
}

// The cache is a few kilobytes per machine; the limit keeps a link to
// /dev/zero or a huge file from being read without bound.
constexpr int64_t kMaxCacheBytes = 16 << 20;

json read_cache() {
  const std::string path = bench_cache_path();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return json::object();
  // A damaged cache is only a cache: measure again rather than fail.
  try {
    json j = json::parse(read_file(path, kMaxCacheBytes, "benchmark cache"), nullptr,
                         /*allow_exceptions=*/false);
    return j.is_object() ? j : json::object();
  } catch (const IoError&) {
    return json::object();
  }
}

}  // namespace

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

DeviceBench bench_cpu() {
  DeviceBench b;
  b.device = "cpu";
  b.name = cpu_model_name();
  b.threads = num_threads();
  Triad triad;
  triad.run(5);
  b.fp32_gflops = gemm_gflops();
  triad.run(5);
  b.conv_gflops = conv_gflops();
  triad.run(5);
  depthwise_gflops(b.depthwise_gflops, b.depthwise_bwd_gflops);
  triad.run(5);
  b.step_overhead_s = step_overhead();
  triad.run(5);
  b.parallel_region_s = parallel_region();
  b.mem_bandwidth_gbs = triad.gbs();
  b.measured_at = utc_now();
  return b;
}

std::string bench_cache_path() {
  return (std::filesystem::path(user_dir("XDG_CACHE_HOME", ".cache")) / "bench-device.json")
      .string();
}

std::string bench_key(const std::string& device, const std::string& name, int threads) {
  return device + "|" + name + "|" + std::to_string(threads) + "t";
}

std::string gpu_bench_key(int index, const std::string& name) {
  return bench_key("cuda:" + std::to_string(index), name, 0);
}

bool load_cached_bench(const std::string& key, DeviceBench& out) {
  const json j = read_cache();
  if (!j.contains(key)) return false;
  // An entry with a missing or out-of-range figure is measured again.
  try {
    out = from_json(j.at(key), bench_cache_path() + ": " + key);
    return true;
  } catch (const json::exception&) {
    return false;
  } catch (const IoError&) {
    return false;
  }
}

void store_cached_bench(const std::string& key, const DeviceBench& b) {
  json j = read_cache();
  j[key] = to_json(b);
  std::filesystem::create_directories(std::filesystem::path(bench_cache_path()).parent_path());
  write_file_atomic(bench_cache_path(), j.dump(2) + "\n");
}

void merge_bandwidth_samples(const DeviceBench* previous, DeviceBench& latest) {
  std::vector<double> samples;
  if (previous) {
    samples = previous->mem_bandwidth_samples;
    // An entry from before the samples were kept: its one figure.
    if (samples.empty() && previous->mem_bandwidth_gbs > 0)
      samples.push_back(previous->mem_bandwidth_gbs);
  }
  samples.push_back(latest.mem_bandwidth_gbs);
  if (samples.size() > kBandwidthSamples)
    samples.erase(samples.begin(), samples.end() - long(kBandwidthSamples));
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const size_t m = sorted.size() / 2;
  latest.mem_bandwidth_gbs = sorted.size() % 2 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
  latest.mem_bandwidth_samples = std::move(samples);
}

namespace {

// The cache entry under key, unless refresh or there is none: then
// measure() runs and its result replaces the entry.
template <class Measure>
DeviceBench cached_or_measured(const std::string& key, bool refresh, bool* cached,
                               Measure measure) {
  // The entry is read once: the result on a hit, else the bandwidth
  // samples the new measurement joins.
  DeviceBench previous;
  const bool had = load_cached_bench(key, previous);
  // A CPU entry from before the depthwise rates were measured is measured
  // again once, rather than left to the generic convolution rule.
  const bool stale = had && previous.device == "cpu" && previous.depthwise_gflops <= 0;
  const bool hit = !refresh && had && !stale;
  DeviceBench b = previous;
  if (!hit) {
    b = measure();
    merge_bandwidth_samples(had ? &previous : nullptr, b);
    store_cached_bench(key, b);
  }
  if (cached) *cached = hit;
  return b;
}

}  // namespace

DeviceBench cpu_bench(bool refresh, bool* cached) {
  return cached_or_measured(bench_key("cpu", cpu_model_name(), num_threads()), refresh, cached,
                            bench_cpu);
}

DeviceBench gpu_bench(int index, bool refresh, bool* cached) {
  DeviceSpec spec;
  spec.cuda = true;
  spec.index = index;
  DeviceBackend* be = require_device(spec);  // throws, naming the device and why
  const GpuInfo gpu = be->devices()[size_t(index)];
  return cached_or_measured(gpu_bench_key(index, gpu.name), refresh, cached, [&] {
    const GpuBenchResult r = be->benchmark(index);
    DeviceBench b;
    b.device = spec.str();
    b.name = gpu.name;
    b.threads = 0;
    b.fp32_gflops = r.fp32_gflops;
    b.conv_gflops = r.conv_gflops;
    b.mem_bandwidth_gbs = r.mem_bandwidth_gbs;
    b.step_overhead_s = r.launch_s;
    b.bf16_gflops = r.bf16_gflops;
    b.fp16_gflops = r.fp16_gflops;
    b.h2d_gbs = r.h2d_gbs;
    b.measured_at = utc_now();
    return b;
  });
}

std::string bench_to_json(const DeviceBench& b) {
  return to_json(b).dump();
}

DeviceBench bench_from_json(const std::string& text) {
  try {
    return from_json(json::parse(text), "device benchmark");
  } catch (const json::exception& e) {
    throw IoError(std::string("device benchmark: ") + e.what());
  }
}

}  // namespace dc::advisor
