#pragma once
// A benchmark cache of the tests' own: XDG_CACHE_HOME points at a scratch
// folder for the object's lifetime, optionally holding a made-up entry for
// this machine (so nothing is measured and the figures are known).
#include <deepcanvas/advisor/device_bench.h>
#include <deepcanvas/parallel.h>

#include <QByteArray>
#include <QTemporaryDir>
#include <QtGlobal>

namespace dc::test {

class ScratchBenchCache {
 public:
  explicit ScratchBenchCache(bool seeded, int threads = 0)
      : had_(qEnvironmentVariableIsSet("XDG_CACHE_HOME")), old_(qgetenv("XDG_CACHE_HOME")) {
    qputenv("XDG_CACHE_HOME", dir_.path().toUtf8());
    if (seeded) seed(threads);
  }
  // This machine's entry in the scratch cache, as Help → Benchmark This
  // Machine (or deepcanvas-cli bench-device) leaves it when it finishes.
  void seed(int threads = 0) {
    bench.name = advisor::cpu_model_name();
    bench.threads = resolved_threads(threads);  // the key runs with threads 0 use
    bench.fp32_gflops = 77.5;
    bench.conv_gflops = 41.5;
    bench.depthwise_gflops = 9.5;
    bench.depthwise_bwd_gflops = 4.5;
    bench.mem_bandwidth_gbs = 12.5;
    bench.step_overhead_s = 1e-4;
    bench.parallel_region_s = 1e-5;
    bench.measured_at = "2026-01-02T03:04:05Z";
    advisor::store_cached_bench(advisor::bench_key("cpu", bench.name, bench.threads), bench);
  }
  ~ScratchBenchCache() {
    if (had_)
      qputenv("XDG_CACHE_HOME", old_);
    else
      qunsetenv("XDG_CACHE_HOME");
  }
  ScratchBenchCache(const ScratchBenchCache&) = delete;
  ScratchBenchCache& operator=(const ScratchBenchCache&) = delete;

  advisor::DeviceBench bench;

 private:
  QTemporaryDir dir_;
  bool had_;
  QByteArray old_;
};

}  // namespace dc::test
