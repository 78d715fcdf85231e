// The advisor's figures for the run about to start: the memory model and
// the step-time roofline at the run's own settings.
#include <deepcanvas/advisor/advise.h>
#include <deepcanvas/advisor/device_bench.h>
#include <deepcanvas/advisor/gpu_catalog.h>
#include <deepcanvas/advisor/memory_model.h>
#include <deepcanvas/advisor/run_prediction.h>
#include <deepcanvas/device.h>
#include <deepcanvas/parallel.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace dc::advisor {

namespace {

// Words split at spaces and dashes: drivers report "NVIDIA A100-SXM4-80GB".
std::vector<std::string> words(std::string s) {
  std::replace(s.begin(), s.end(), '-', ' ');
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

int match_gpu(const std::vector<GpuSpec>& catalog, const std::string& name, int64_t bytes) {
  const std::vector<std::string> have = words(name);
  auto found = [&](const std::string& w) {
    return std::find(have.begin(), have.end(), w) != have.end();
  };
  int best = -1, best_score = 0;
  int64_t best_gap = 0;
  for (size_t i = 0; i < catalog.size(); ++i) {
    const std::vector<std::string> want = words(catalog[i].name);
    // The model word: the first after the vendor and brand words.
    auto model = std::find_if(want.begin(), want.end(), [&](const std::string& w) {
      return w != catalog[i].vendor && w != "GeForce" && w != "Radeon" && w != "Instinct" &&
             w != "Jetson" && w != "RTX" && w != "RX";
    });
    if (model == want.end() || !found(*model)) continue;
    const int score = int(std::count_if(want.begin(), want.end(), found));
    const int64_t gap = std::llabs(catalog[i].memory_bytes - bytes);
    if (score > best_score || (score == best_score && gap < best_gap)) {
      best = int(i);
      best_score = score;
      best_gap = gap;
    }
  }
  return best;
}

DiagnosisInput RunPrediction::diagnosis_input() const {
  DiagnosisInput in;
  in.predicted = step;
  in.device_bytes = device_bytes;
  in.gpu = gpu;
  in.precision = precision;
  in.batch = batch;
  return in;
}

RunPrediction predict_run(const Graph& g, const TrainConfig& c, const std::string& gpu_name,
                          int64_t gpu_bytes, int64_t resident_bytes) {
  RunPrediction r;
  r.gpu = c.device.cuda;
  r.precision = c.device.cuda ? c.precision : Precision::Fp32;
  r.batch = c.batch;
  MemoryOptions mo;
  mo.batch = c.batch;
  mo.optimizer = c.optimizer;
  mo.evaluates = true;
  mo.precision = r.precision;
  if (!r.gpu) {
    r.device_bytes = host_available_bytes();
    const int threads = resolved_threads(c.threads);
    DeviceBench b;
    if (!load_cached_bench(bench_key("cpu", cpu_model_name(), threads), b)) {
      r.why = "no benchmark of this machine at " + std::to_string(threads) +
              " threads yet: Help → Benchmark this machine… (or deepcanvas-cli bench-device)";
      return r;
    }
    mo.backend = Backend::Cpu;
    mo.threads = threads;
    r.device = "this machine (" + std::to_string(threads) + " threads)";
    r.step = predict_step_time(g, c.batch, cpu_rates(b));
  } else {
    // The prediction is an extra: a malformed user catalog must not stop the
    // run it describes (the CLI's train --device cuda, the app's Train).
    std::vector<GpuSpec> catalog;
    try {
      catalog = load_gpu_catalog();
    } catch (const std::exception& e) {
      r.why = std::string("no prediction: ") + e.what();
      return r;
    }
    const int i = match_gpu(catalog, gpu_name, gpu_bytes);
    if (i < 0) {
      r.why = "'" + gpu_name + "' is not in the GPU catalog (" + user_gpu_catalog_path() +
              " takes your own rows)";
      return r;
    }
    mo.backend = Backend::Cuda;
    mo.resident_bytes = resident_bytes;
    // This GPU's own benchmark when it has one, else its catalog row.
    DeviceBench measured;
    const bool have = load_cached_bench(gpu_bench_key(c.device.index, gpu_name), measured);
    r.device = catalog[size_t(i)].name + (have ? " (measured here)" : " (catalog estimate)");
    r.step = predict_step_time(
        g, c.batch,
        have ? gpu_rates(measured, r.precision) : gpu_rates(catalog[size_t(i)], r.precision));
    r.device_bytes = gpu_bytes > 0 ? gpu_bytes : catalog[size_t(i)].memory_bytes;
  }
  // On a GPU the measured figure is the plugin allocator's peak, which the
  // CUDA context is not part of.
  const MemoryPrediction mem = predict_memory(g, mo);
  r.memory_bytes = r.gpu ? mem.allocator : mem.total;
  r.available = true;
  return r;
}

RunPrediction predict_run_here(const Graph& g, const TrainConfig& c, int64_t resident_bytes) {
  std::string name;
  int64_t bytes = 0;
  if (c.device.cuda)
    for (const GpuInfo& i : list_gpus())
      if (i.index == c.device.index) {
        name = i.name;
        bytes = i.total_bytes;
      }
  return predict_run(g, c, name, bytes, resident_bytes);
}

}  // namespace dc::advisor
