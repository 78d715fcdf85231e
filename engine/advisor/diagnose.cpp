// The diagnosis: measured time split (loader wait vs step), memory peak and
// GPU utilisation decide the warnings; the roofline's per-layer split decides
// whether the busy part of the step is compute- or bandwidth-bound.
#include <deepcanvas/advisor/diagnose.h>
#include <deepcanvas/format.h>
#include <deepcanvas/trainer.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace dc::advisor {

namespace {

std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::string ms(double s) {
  return s < 0.01 ? fmt("%.2f ms", s * 1e3) : fmt("%.1f ms", s * 1e3);
}

// The step's busy time split by the roofline: seconds of compute-bound
// layers and of bandwidth-bound ones (with the optimizer's update), fixed
// costs apart; and the layer that takes longest.
struct Split {
  double compute = 0, bandwidth = 0, fixed = 0;
  const LayerTime* largest = nullptr;
};

Split split(const StepTime& t) {
  Split s;
  for (const LayerTime& l : t.layers) {
    const double busy = std::max(0.0, l.seconds - l.overhead_s);
    (l.compute_bound ? s.compute : s.bandwidth) += busy;
    s.fixed += l.overhead_s;
    if (!s.largest || busy > s.largest->seconds - s.largest->overhead_s) s.largest = &l;
  }
  s.bandwidth += t.optimizer_s;
  s.fixed += t.overhead_s;
  return s;
}

Finding input_bound(const Diagnosis& d) {
  return {Bottleneck::InputBound, true,
          fmt("input-bound: each step waited %s for the loader, %.0f %% of its %s",
              ms(d.loader_wait_s).c_str(), 100 * d.wait_share, ms(d.step_s).c_str()),
          "More loader threads (the loader prepares batches on one background thread), lighter "
          "augmentation, or data pre-processed once; a faster device will not help until the "
          "loader keeps up."};
}

Finding near_oom(const DiagnosisInput& in) {
  const double share = double(in.peak_bytes) / double(in.device_bytes);
  std::string advice = "Lower the batch (`deepcanvas-cli advise` gives the largest that fits)";
  advice += in.gpu && in.precision == Precision::Fp32
                ? ", or train in bf16: it halves the activations kept for backward."
                : "; a step that needs more will fail with out-of-memory.";
  return {Bottleneck::NearOutOfMemory, true,
          fmt("near out-of-memory: the peak is %s of %s (%.0f %%)",
              human_bytes(double(in.peak_bytes)).c_str(),
              human_bytes(double(in.device_bytes)).c_str(), 100 * share),
          advice};
}

Finding launch_bound(const DiagnosisInput& in, const Diagnosis& d, double fixed_share) {
  Finding f{Bottleneck::HostLaunchBound, true, "", ""};
  if (in.gpu && d.gpu_util_pct >= 0 && d.gpu_util_pct < kLowGpuUtilPct)
    f.verdict =
        fmt("host-launch-bound: the GPU was busy %.0f %% of the time; it sits idle between kernels",
            d.gpu_util_pct);
  else if (in.gpu)
    f.verdict = fmt(
        "host-launch-bound: %.0f %% of the predicted step is kernel-launch cost; the layers are "
        "too small to keep the GPU busy",
        100 * fixed_share);
  else
    f.verdict =
        fmt("overhead-bound: %.0f %% of the predicted step is fixed per-step and per-layer cost "
            "(thread wake-ups, dispatch), not arithmetic",
            100 * fixed_share);
  f.advice = in.gpu ? "CUDA graphs (one launch replays the whole step) and a larger batch: more "
                      "work per kernel launch."
                    : "A larger batch: more work for each layer call and thread wake-up.";
  return f;
}

Finding busy_character(const DiagnosisInput& in, const Split& s) {
  const double total = s.compute + s.bandwidth;
  const bool compute = s.compute >= s.bandwidth;
  const std::string where =
      s.largest ? fmt("; the largest is %s '%s'", s.largest->type.c_str(), s.largest->name.c_str())
                : "";
  Finding f{compute ? Bottleneck::ComputeBound : Bottleneck::BandwidthBound, false, "", ""};
  if (compute) {
    f.verdict =
        fmt("compute-bound: %.0f %% of the step's work is arithmetic in compute-bound "
            "layers%s",
            100 * s.compute / total, where.c_str());
    if (in.gpu && in.precision == Precision::Fp32)
      f.advice = "Train in bf16: the matrix products run on the tensor cores.";
    else if (in.gpu)
      f.advice = "Already on the tensor cores: a faster GPU, or fewer MACs in the network.";
    else
      f.advice =
          "The cores are busy with arithmetic: a GPU is the next step (`deepcanvas-cli "
          "advise` compares them), or fewer MACs in the network.";
  } else {
    f.verdict =
        fmt("memory-bandwidth-bound: %.0f %% of the step's work moves bytes "
            "(elementwise layers, normalisation, the optimizer's update)%s",
            100 * s.bandwidth / total, where.c_str());
    f.advice = in.gpu && in.precision == Precision::Fp32
                   ? "Train in bf16 (half the bytes per activation) and use a larger batch (the "
                     "weights are read once for more samples)."
                   : "A larger batch (the weights are read once for more samples) and fewer "
                     "elementwise layers between the matrix products.";
  }
  return f;
}

}  // namespace

const char* bottleneck_name(Bottleneck b) {
  switch (b) {
    case Bottleneck::InputBound:
      return "input-bound";
    case Bottleneck::NearOutOfMemory:
      return "near-out-of-memory";
    case Bottleneck::HostLaunchBound:
      return "host-launch-bound";
    case Bottleneck::ComputeBound:
      return "compute-bound";
    case Bottleneck::BandwidthBound:
      return "memory-bandwidth-bound";
  }
  return "?";
}

bool Diagnosis::has(Bottleneck b) const {
  return std::any_of(findings.begin(), findings.end(),
                     [&](const Finding& f) { return f.kind == b; });
}

bool Diagnosis::any_warning() const {
  return std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return f.warning; });
}

std::string Diagnosis::text() const {
  if (!enough_data) return "collecting the run's timeline (a few steps)…";
  std::string out;
  for (const Finding& f : findings) out += f.verdict + "\n  → " + f.advice + "\n";
  if (!prediction_note.empty()) out += "note: " + prediction_note + "\n";
  return out;
}

Diagnosis diagnose(const DiagnosisInput& in) {
  Diagnosis d;
  // The first report carries the warm-up (first allocations, the loader's
  // first batch), which no later step repeats.
  const size_t first = in.steps.size() > 1 ? 1 : 0;
  double wait = 0, compute = 0, util = 0;
  int64_t util_steps = 0;
  for (size_t i = first; i < in.steps.size(); ++i) {
    const StepRecord& r = in.steps[i];
    if (r.steps <= 0) continue;
    d.steps += r.steps;
    wait += r.loader_wait_s * double(r.steps);
    compute += r.compute_s * double(r.steps);
    if (r.gpu_util_pct >= 0) {
      util += double(r.gpu_util_pct) * double(r.steps);
      util_steps += r.steps;
    }
  }
  d.enough_data = d.steps >= kMinSteps;
  if (!d.enough_data) return d;
  d.loader_wait_s = wait / double(d.steps);
  d.compute_s = compute / double(d.steps);
  d.step_s = d.loader_wait_s + d.compute_s;
  d.wait_share = d.step_s > 0 ? d.loader_wait_s / d.step_s : 0;
  if (util_steps > 0) d.gpu_util_pct = util / double(util_steps);

  const bool input = d.wait_share >= kInputBoundShare;
  if (input) d.findings.push_back(input_bound(d));
  if (in.peak_bytes > 0 && in.device_bytes > 0 &&
      double(in.peak_bytes) >= kNearOomShare * double(in.device_bytes))
    d.findings.push_back(near_oom(in));
  const Split s = split(in.predicted);
  const double fixed_share = in.predicted.step_s > 0 ? s.fixed / in.predicted.step_s : 0;
  // The measured step against the predicted one (loader wait apart): more
  // than 2x off, the rates behind the prediction are not this machine's now.
  const double off =
      in.predicted.step_s > 0 && d.compute_s > 0 ? d.compute_s / in.predicted.step_s : 1;
  const bool trusted = off >= 0.5 && off <= 2;
  if (!trusted)
    d.prediction_note = fmt(
        "the steps take %.2f× the predicted time: the benchmark behind the prediction no longer "
        "matches this machine's load; re-measure it (Help → Benchmark This Machine…, or "
        "deepcanvas-cli bench-device --refresh)",
        off);
  // Idle gaps on the GPU while the loader starves it are the loader's fault,
  // not the launches'.
  const bool idle_gpu = in.gpu && d.gpu_util_pct >= 0 && d.gpu_util_pct < kLowGpuUtilPct;
  if (!input && (idle_gpu || (trusted && fixed_share >= kFixedCostShare)))
    d.findings.push_back(launch_bound(in, d, fixed_share));
  if (s.compute + s.bandwidth > 0) d.findings.push_back(busy_character(in, s));
  return d;
}

void Timeline::add(const TrainEvent& e) {
  if (e.kind == TrainEvent::Kind::Telemetry) {
    last_util_ = e.gpu.utilization_pct;
    // What the device has in use (NVML, the context included), else what
    // the engine's allocator holds.
    const int64_t used = e.gpu.memory_used >= 0 ? e.gpu.memory_used : e.device_reserved;
    base_.peak_bytes = std::max(base_.peak_bytes, used);
    if (e.gpu.memory_total > 0) base_.device_bytes = e.gpu.memory_total;
    return;
  }
  if (e.kind != TrainEvent::Kind::Step || e.steps_in_report <= 0) return;
  records_.push_back({e.steps_in_report, e.loader_wait_s, e.compute_s, last_util_});
  if (records_.size() > kWindow) records_.pop_front();
  if (!base_.gpu) base_.peak_bytes = std::max(base_.peak_bytes, e.peak_tensor_bytes);
}

Diagnosis Timeline::diagnose() const {
  DiagnosisInput in = base_;
  in.steps.assign(records_.begin(), records_.end());
  return advisor::diagnose(in);
}

}  // namespace dc::advisor
