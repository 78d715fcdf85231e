#include <deepcanvas/advisor/advise.h>
#include <deepcanvas/advisor/memory_model.h>
#include <deepcanvas/advisor/run_prediction.h>
#include <deepcanvas/advisor/step_time.h>

#include <fstream>
#include <sstream>

namespace dc::advisor {

int64_t host_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream s(line.substr(13));
      int64_t kb = 0;
      s >> kb;
      return kb * 1024;
    }
  return 0;
}

namespace {

void fill_time(DeviceAdvice& a, const StepTime& t, int64_t batch, int64_t samples) {
  a.step_s = t.step_s;
  a.samples_per_s = t.samples_per_s;
  const int64_t steps = (samples + batch - 1) / batch;
  a.epoch_s = double(steps) * t.step_s;
  a.energy_wh = a.tdp_w * a.epoch_s / 3600.0;
}

}  // namespace

Advice advise(const Project& p, int64_t batch, Precision precision, int64_t train_samples,
              const DeviceBench& cpu, const std::vector<GpuSpec>& gpus, int64_t resident_bytes,
              const std::vector<MeasuredGpu>& measured_here) {
  Advice out;
  out.batch = batch;
  out.precision = precision;
  out.train_samples = train_samples;
  MemoryOptions mo;
  mo.batch = batch;
  mo.optimizer = p.training.optimizer;
  mo.evaluates = true;

  DeviceAdvice& here = out.this_machine;
  here.name = cpu.name + " (" + std::to_string(cpu.threads) + " threads)";
  here.memory_bytes = host_available_bytes();
  mo.backend = Backend::Cpu;
  mo.threads = cpu.threads;
  here.training_bytes = predict_memory(p.graph, mo).total;
  here.fits = here.training_bytes <= here.memory_bytes;
  here.max_batch = max_batch_that_fits(p.graph, mo, here.memory_bytes);
  // The CPU computes in fp32 whatever the precision asked for.
  fill_time(here, predict_step_time(p.graph, batch, cpu_rates(cpu)), batch, train_samples);

  mo.backend = Backend::Cuda;
  mo.precision = precision;
  mo.resident_bytes = resident_bytes;
  auto gpu_row = [&](const std::string& name, int64_t memory, double tdp, const DeviceRates& r) {
    DeviceAdvice a;
    a.name = name;
    a.memory_bytes = memory;
    a.tdp_w = tdp;
    mo.batch = batch;
    const MemoryPrediction mem = predict_memory(p.graph, mo);
    a.training_bytes = mem.total;
    a.allocator_bytes = mem.allocator;
    a.fits = a.training_bytes <= a.memory_bytes;
    a.max_batch = max_batch_that_fits(p.graph, mo, a.memory_bytes);
    fill_time(a, predict_step_time(p.graph, batch, r), batch, train_samples);
    out.gpus.push_back(std::move(a));
  };
  // This machine's measured GPUs first, from their own figures (the TDP
  // from their catalog row, when there is one).
  for (const MeasuredGpu& m : measured_here) {
    const int i = match_gpu(gpus, m.bench.name, m.memory_bytes);
    gpu_row(m.bench.name + " (measured here)", m.memory_bytes, i >= 0 ? gpus[size_t(i)].tdp_w : 0,
            gpu_rates(m.bench, precision));
  }
  for (const GpuSpec& g : gpus) gpu_row(g.name, g.memory_bytes, g.tdp_w, gpu_rates(g, precision));
  return out;
}

}  // namespace dc::advisor
